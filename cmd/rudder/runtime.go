package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/runtime"
	"github.com/rudder-dev/rudder/internal/runtime/image"
	"github.com/rudder-dev/rudder/internal/runtime/streaming"
)

// runtimeCommand is `rudder runtime`: the CRI runtime alone on a socket,
// with no kubelet and no API server. It is a developer's tool (critest,
// crictl, `rudder bench cri`), hidden from help.
func runtimeCommand() *cobra.Command {
	var opts runtimeOptions
	cmd := &cobra.Command{
		Use:    "runtime --root DIR --socket PATH",
		Short:  "Run only the CRI runtime (images, sandboxes, containers, streaming) on a unix socket",
		Hidden: true,
		Long: `Run rudder's container runtime alone, serving the CRI v1 RuntimeService and
ImageService on --socket, as the agent runs it but without a kubelet: for
critest, crictl and benchmarks.

  DIR/images    the image store
  DIR/runtime   sandbox and container state
  DIR/logs      container logs when the client names no log directory
  /run/rudder/<hash of DIR>   namespaces, bundles, monitor sockets

Pods go in the cgroup kubepods below this process's own cgroup unless the
client names a cgroup parent. SIGINT or SIGTERM stops serving; containers
keep running (their monitors own them) and a new ` + "`rudder runtime`" + ` on the
same DIR adopts them.

  rudder runtime --root /tmp/rt --socket /tmp/rt/cri.sock
  crictl --runtime-endpoint unix:///tmp/rt/cri.sock ps`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return opts.run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.root, "root", "", "directory of the runtime's images and state (required)")
	f.StringVar(&opts.socket, "socket", "", "unix socket the CRI is served on (required)")
	f.StringVar(&opts.ociRuntime, "oci-runtime", "runc", "runc-compatible binary that runs containers")
	f.StringVar(&opts.streamAddr, "stream-addr", "127.0.0.1:0", "address of the streaming server (exec, attach, port-forward)")
	f.StringVar(&opts.shimBinary, "shim-binary", "", "executable run as each container's monitor with runtime-shim as its first argument (default: this binary)")
	return cmd
}

type runtimeOptions struct {
	root, socket, ociRuntime, streamAddr, shimBinary string
}

func (o runtimeOptions) run(ctx context.Context) error {
	if o.root == "" || o.socket == "" {
		return errors.New("--root and --socket are required")
	}
	if os.Geteuid() != 0 {
		return errors.New("the runtime must run as root (it creates namespaces, cgroups and mounts)")
	}
	root, err := filepath.Abs(o.root)
	if err != nil {
		return fmt.Errorf("--root: %w", err)
	}
	images, err := image.Open(image.Config{Root: filepath.Join(root, "images")})
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	rt, err := runtime.New(runtime.Config{
		Root:       filepath.Join(root, "runtime"),
		RunDir:     runtimeRunDir(root),
		LogRoot:    filepath.Join(root, "logs"),
		Images:     images,
		OCIRuntime: o.ociRuntime,
		ShimBinary: o.shimBinary,
	})
	if err != nil {
		return err
	}
	stream, err := streaming.New(streaming.Config{Addr: o.streamAddr, Runtime: rt.StreamRuntime()})
	if err != nil {
		return err
	}
	if err := stream.Start(ctx); err != nil {
		return fmt.Errorf("streaming server: %w", err)
	}
	rt.SetStreaming(stream)
	slog.Info("runtime serving", "socket", o.socket, "root", root)
	return rt.Serve(ctx, o.socket)
}

// runtimeRunDir is /run/rudder/<hash of root>, as the agent's: short,
// because a monitor's socket (<run>/containers/<64 hex>/a.sock) must fit
// in 108 bytes, and one per root so several runtimes keep apart.
func runtimeRunDir(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join("/run/rudder", hex.EncodeToString(sum[:6]))
}
