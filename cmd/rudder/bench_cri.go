package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/rudder-dev/rudder/internal/bench"
	"github.com/rudder-dev/rudder/internal/runtime/image"
)

func benchCRICommand() *cobra.Command {
	var (
		cfg          bench.CRIConfig
		out          benchOutput
		archive      string
		ociRuntime   string
		compareMatch string
		shimBinary   string
	)
	cmd := &cobra.Command{
		Use:   "cri",
		Short: "A container runtime through the CRI alone: pod start and teardown latency, memory per pod",
		Long: `Start rudder's runtime (` + "`rudder runtime`" + `, as a child process, in a fresh
temporary root) and drive it through the CRI as a kubelet would, with no
API server: N pods one after another, each RunPodSandbox + CreateContainer
+ StartContainer of one busybox ` + "`sleep 3600`" + ` container (timed per pod, p50/p99),
then StopPodSandbox + RemovePodSandbox per pod (timed), and memory at 0, 10
and N pods: the runtime's RSS plus its per-container monitors' (RSS and
PSS, which shares the monitors' common program text among them).

With --compare ENDPOINT, the same run against another CRI runtime (e.g.
containerd from scripts/containerd-peer.sh), whose shims count as its
monitors, and both side by side.

The image must be in each runtime or pullable by it: --image-archive
imports a docker-archive tarball into rudder's fresh store first
(scripts/containerd-peer.sh writes one holding busybox and pause).

  scripts/containerd-peer.sh start      # unix:///tmp/containerd-peer/containerd.sock
  rudder bench cri --image-archive /tmp/containerd-peer/images.tar \
      --compare unix:///tmp/containerd-peer/containerd.sock`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Log = cmd.ErrOrStderr()
			return out.run(cmd, "", func(endpoint string) (bench.Summarizer, error) {
				c := cfg
				if endpoint != "" {
					c.Endpoint, c.Label = endpoint, "peer"
					c.MonitorMatch = compareMatch
					if c.MonitorMatch == "" {
						// containerd's shims name its socket.
						c.MonitorMatch = "-address " + strings.TrimPrefix(endpoint, "unix://")
					}
					res, err := bench.RunCRI(cmd.Context(), c)
					if res == nil {
						return nil, err
					}
					return &bench.CRIResults{Runs: []*bench.CRIResult{res}}, err
				}
				return benchRudderRuntime(cmd.Context(), c, archive, ociRuntime, shimBinary)
			})
		},
	}
	f := cmd.Flags()
	out.register(f, true)
	f.Lookup("compare").Usage = "also run against the CRI runtime at this endpoint (unix:///path) and print both side by side"
	f.IntVar(&cfg.Pods, "pods", 20, "pods, each with one container")
	f.StringVar(&cfg.Image, "image", "registry.k8s.io/e2e-test-images/busybox:1.29-2", "container image (has sleep)")
	f.StringVar(&archive, "image-archive", "", "docker-archive or OCI tarball imported into rudder's store before the run")
	f.BoolVar(&cfg.HostNetwork, "host-network", false, "run the pods in the node's network namespace (no pod network setup on either runtime)")
	f.StringVar(&ociRuntime, "oci-runtime", "runc", "OCI runtime rudder's runtime uses")
	f.StringVar(&shimBinary, "shim-binary", "", "monitor executable for rudder's runtime (default: this binary; see `rudder runtime --shim-binary`)")
	f.StringVar(&compareMatch, "compare-monitor-match", "", `substring of the --compare runtime's monitor command lines (default "-address <its socket>", as containerd's shims have)`)
	f.DurationVar(&cfg.Timeout, "run-timeout", 5*time.Minute, "upper bound on one runtime's run")
	return cmd
}

// benchRudderRuntime runs the scenario against `rudder runtime` started
// as a child in a temporary root, and removes the root afterwards.
func benchRudderRuntime(ctx context.Context, cfg bench.CRIConfig, archive, ociRuntime, shimBinary string) (bench.Summarizer, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("bench cri runs containers: it needs root")
	}
	root, err := os.MkdirTemp("", "rudder-bench-cri")
	if err != nil {
		return nil, err
	}
	defer removeBenchRoot(root)
	if archive != "" {
		store, err := image.Open(image.Config{Root: filepath.Join(root, "images")})
		if err != nil {
			return nil, err
		}
		if _, err := importPath(ctx, store, archive, nil); err != nil {
			return nil, fmt.Errorf("--image-archive %s: %w", archive, err)
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(root, "cri.sock")
	var logs bytes.Buffer
	child := exec.Command(exe, "runtime", "--root", root, "--socket", sock, "--oci-runtime", ociRuntime, "--shim-binary", shimBinary, "--log-level", "warn")
	child.Stdout, child.Stderr = &logs, &logs
	if err := child.Start(); err != nil {
		return nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	defer func() {
		_ = child.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = child.Process.Kill()
			<-exited
		}
	}()
	if err := waitForSocket(ctx, sock, exited); err != nil {
		return nil, fmt.Errorf("rudder runtime: %w\n%s", err, logs.String())
	}
	cfg.Endpoint, cfg.Label = "unix://"+sock, "rudder"
	// The monitors' command lines name their config under the state root.
	cfg.MonitorMatch = filepath.Join(root, "runtime") + "/"
	res, err := bench.RunCRI(ctx, cfg)
	if res == nil {
		return nil, err
	}
	return &bench.CRIResults{Runs: []*bench.CRIResult{res}}, err
}

func waitForSocket(ctx context.Context, path string, exited <-chan error) error {
	deadline := time.After(30 * time.Second)
	for {
		if fi, err := os.Stat(path); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return nil
		}
		select {
		case err := <-exited:
			return fmt.Errorf("exited before serving: %v", err)
		case <-deadline:
			return fmt.Errorf("socket %s did not appear in 30 s", path)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// removeBenchRoot removes a bench root and the runtime's run directory,
// detaching any mount a failed run left below them first.
func removeBenchRoot(root string) {
	for _, dir := range []string{root, runtimeRunDir(root)} {
		if mounts, err := os.ReadFile("/proc/self/mounts"); err == nil {
			for _, line := range strings.Split(string(mounts), "\n") {
				if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], dir+"/") {
					_ = unix.Unmount(f[1], unix.MNT_DETACH)
				}
			}
		}
		_ = os.RemoveAll(dir)
	}
}
