package bench

// The cri scenario measures a container runtime through the CRI alone, as
// the kubelet drives it, with no API server: N pod sandboxes, each with
// one busybox `sleep 3600` container, started one after another
// (RunPodSandbox + CreateContainer + StartContainer, timed per pod), then
// torn down one after another (StopPodSandbox + RemovePodSandbox, timed
// per pod), and the runtime's memory at 0, 10 and N pods running: the
// runtime process plus every per-container (or per-pod) monitor it keeps
// (rudder's monitors; containerd's shims). Any CRI runtime can be
// measured, so rudder's runtime and containerd run the same requests.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRIConfig parameterises one run of `rudder bench cri` against one
// runtime.
type CRIConfig struct {
	// Endpoint is the runtime's CRI socket, "unix:///path" or "/path".
	Endpoint string
	// Label names the runtime in the report ("rudder", "containerd").
	Label string
	// Pods is the number of pod sandboxes (default 20).
	Pods int
	// Image is the container image (default
	// registry.k8s.io/e2e-test-images/busybox:1.29-2); it is pulled
	// through the CRI, untimed, when the runtime lacks it.
	Image string
	// HostNetwork runs the sandboxes in the node's network namespace,
	// which leaves pod networking (CNI, for containerd) out of the
	// figures.
	HostNetwork bool
	// MonitorMatch is a substring of the command line of every monitor
	// process of this runtime (rudder's runtime-shim, containerd's
	// containerd-shim-runc-v2), whose memory counts as the runtime's.
	MonitorMatch string
	// LogDir holds the pods' log directories (default: a temp dir).
	LogDir string
	// Timeout bounds the run (default 5 minutes).
	Timeout time.Duration
	// Log, when set, receives progress lines.
	Log io.Writer
}

// CRIMemory is the runtime's memory with some pods running.
type CRIMemory struct {
	Pods int `json:"pods"`
	// RuntimeRSSMiB is the runtime process's resident memory;
	// MonitorsRSSMiB the sum of its monitors'; Monitors how many.
	RuntimeRSSMiB  float64 `json:"runtime_rss_mib"`
	MonitorsRSSMiB float64 `json:"monitors_rss_mib"`
	Monitors       int     `json:"monitors"`
	// TotalRSSMiB is the two added. RSS counts the pages monitors share
	// (their program text) once per process; TotalPSSMiB divides shared
	// pages among their users, so it is what the node really spends.
	TotalRSSMiB float64 `json:"total_rss_mib"`
	TotalPSSMiB float64 `json:"total_pss_mib"`
}

// CRIResult is one run's figures.
type CRIResult struct {
	Label       string      `json:"label"`
	Endpoint    string      `json:"endpoint"`
	Version     string      `json:"runtime_version"`
	Pods        int         `json:"pods"`
	HostNetwork bool        `json:"host_network"`
	StartMS     Quantiles   `json:"start_ms"`
	TeardownMS  Quantiles   `json:"teardown_ms"`
	Memory      []CRIMemory `json:"memory"`
	// PerPodMiB is (total at N pods − total at 0) / N, by RSS and PSS.
	PerPodRSSMiB float64 `json:"per_pod_rss_mib"`
	PerPodPSSMiB float64 `json:"per_pod_pss_mib"`
	LoadStart    float64 `json:"loadavg_start"`
	LoadEnd      float64 `json:"loadavg_end"`
	Seconds      float64 `json:"seconds"`
	failures     []string
}

// Failures are the run's correctness failures.
func (r *CRIResult) Failures() []string { return r.failures }

// RunCRI runs the scenario against one runtime. A request that fails
// ends the run with an error after removing every pod it made.
func RunCRI(parent context.Context, cfg CRIConfig) (*CRIResult, error) {
	if cfg.Pods <= 0 {
		cfg.Pods = 20
	}
	if cfg.Image == "" {
		cfg.Image = "registry.k8s.io/e2e-test-images/busybox:1.29-2"
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	if cfg.LogDir == "" {
		d, err := os.MkdirTemp("", "rudder-bench-cri-logs")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		cfg.LogDir = d
	}
	ctx, cancel := context.WithTimeout(parent, cfg.Timeout)
	defer cancel()
	socket := strings.TrimPrefix(cfg.Endpoint, "unix://")
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("cri %s: %w", cfg.Endpoint, err)
	}
	defer conn.Close()
	b := &criBench{cfg: cfg, socket: socket, rs: runtimeapi.NewRuntimeServiceClient(conn), is: runtimeapi.NewImageServiceClient(conn)}
	res := &CRIResult{Label: cfg.Label, Endpoint: cfg.Endpoint, Pods: cfg.Pods, HostNetwork: cfg.HostNetwork, LoadStart: loadAverage()}
	began := time.Now()
	err = b.run(ctx, res)
	if cerr := b.cleanup(); cerr != nil && err == nil {
		err = cerr
	}
	if err != nil {
		// An unfinished run has no figures worth printing.
		return nil, err
	}
	res.Seconds = round1(time.Since(began).Seconds())
	res.LoadEnd = loadAverage()
	return res, err
}

type criBench struct {
	cfg    CRIConfig
	socket string
	rs     runtimeapi.RuntimeServiceClient
	is     runtimeapi.ImageServiceClient
	live   []string // sandboxes made and not yet removed
}

func (b *criBench) run(ctx context.Context, res *CRIResult) error {
	v, err := b.rs.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		return fmt.Errorf("cri %s: Version: %w", b.cfg.Endpoint, err)
	}
	res.Version = v.GetRuntimeName() + " " + v.GetRuntimeVersion()
	if err := b.ensureImage(ctx); err != nil {
		return err
	}
	measure := func(pods int) error {
		m, err := criMemoryOf(b.socket, b.cfg.MonitorMatch)
		if err != nil {
			return err
		}
		m.Pods = pods
		res.Memory = append(res.Memory, m)
		return nil
	}
	if err := measure(0); err != nil {
		return err
	}
	var start, teardown histogram
	prefix := randomHex(4)
	for i := 0; i < b.cfg.Pods; i++ {
		d, err := b.startPod(ctx, fmt.Sprintf("bench-%s-%d", prefix, i))
		if err != nil {
			return err
		}
		start.record(d)
		if n := i + 1; n == 10 || n == b.cfg.Pods {
			if err := measure(n); err != nil {
				return err
			}
		}
	}
	if err := b.checkRunning(ctx, res); err != nil {
		return err
	}
	fmt.Fprintf(b.cfg.Log, "cri %s: %d pods running\n", b.cfg.Label, b.cfg.Pods)
	for len(b.live) > 0 {
		id := b.live[0]
		t := time.Now()
		if _, err := b.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			return fmt.Errorf("StopPodSandbox %s: %w", id, err)
		}
		if _, err := b.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			return fmt.Errorf("RemovePodSandbox %s: %w", id, err)
		}
		teardown.record(time.Since(t))
		b.live = b.live[1:]
	}
	res.StartMS, res.TeardownMS = quantilesOf(&start), quantilesOf(&teardown)
	if n := len(res.Memory); n >= 2 {
		first, last := res.Memory[0], res.Memory[n-1]
		res.PerPodRSSMiB = round3((last.TotalRSSMiB - first.TotalRSSMiB) / float64(last.Pods))
		res.PerPodPSSMiB = round3((last.TotalPSSMiB - first.TotalPSSMiB) / float64(last.Pods))
	}
	return nil
}

func (b *criBench) ensureImage(ctx context.Context) error {
	spec := &runtimeapi.ImageSpec{Image: b.cfg.Image}
	st, err := b.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil {
		return fmt.Errorf("ImageStatus %s: %w", b.cfg.Image, err)
	}
	if st.GetImage() != nil {
		return nil
	}
	fmt.Fprintf(b.cfg.Log, "cri %s: pulling %s\n", b.cfg.Label, b.cfg.Image)
	if _, err := b.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec}); err != nil {
		return fmt.Errorf("the runtime lacks %s and cannot pull it: %w", b.cfg.Image, err)
	}
	return nil
}

// startPod runs one sandbox with one container as the kubelet would, and
// returns the time the three calls took.
func (b *criBench) startPod(ctx context.Context, name string) (time.Duration, error) {
	uid := randomHex(8)
	logDir := filepath.Join(b.cfg.LogDir, "bench_"+name+"_"+uid)
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return 0, err
	}
	netMode, hostname := runtimeapi.NamespaceMode_POD, name
	if b.cfg.HostNetwork {
		// As the kubelet: a host-network pod has the node's UTS
		// namespace, so no hostname of its own.
		netMode, hostname = runtimeapi.NamespaceMode_NODE, ""
	}
	pod := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "bench", Uid: uid},
		Hostname:     hostname,
		LogDirectory: logDir,
		Labels:       map[string]string{"rudder-bench": "cri"},
		Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Network: netMode, Pid: runtimeapi.NamespaceMode_CONTAINER, Ipc: runtimeapi.NamespaceMode_POD},
		}},
	}
	ctr := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
		Image:    &runtimeapi.ImageSpec{Image: b.cfg.Image},
		Command:  []string{"sleep", "3600"},
		LogPath:  "sleep/0.log",
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: pod.Linux.SecurityContext.NamespaceOptions,
		}},
	}
	if err := os.MkdirAll(filepath.Join(logDir, "sleep"), 0o755); err != nil {
		return 0, err
	}
	t := time.Now()
	sb, err := b.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: pod})
	if err != nil {
		return 0, fmt.Errorf("RunPodSandbox %s: %w", name, err)
	}
	b.live = append(b.live, sb.GetPodSandboxId())
	c, err := b.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.GetPodSandboxId(), Config: ctr, SandboxConfig: pod})
	if err != nil {
		return 0, fmt.Errorf("CreateContainer in %s: %w", name, err)
	}
	if _, err := b.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.GetContainerId()}); err != nil {
		return 0, fmt.Errorf("StartContainer in %s: %w", name, err)
	}
	return time.Since(t), nil
}

// checkRunning asks the runtime for every container of the run: each
// must be running.
func (b *criBench) checkRunning(ctx context.Context, res *CRIResult) error {
	list, err := b.rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{}})
	if err != nil {
		return fmt.Errorf("ListContainers: %w", err)
	}
	ours := map[string]bool{}
	for _, id := range b.live {
		ours[id] = true
	}
	running := 0
	for _, c := range list.GetContainers() {
		if ours[c.GetPodSandboxId()] && c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running++
		}
	}
	if running != b.cfg.Pods {
		res.failures = append(res.failures, fmt.Sprintf("%s: %d of %d containers running", b.cfg.Label, running, b.cfg.Pods))
	}
	return nil
}

// cleanup removes every sandbox the run made and did not remove, with a
// fresh context: it runs after errors and timeouts too.
func (b *criBench) cleanup() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	for _, id := range b.live {
		if _, err := b.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			errs = append(errs, err)
		}
		if _, err := b.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			errs = append(errs, err)
		}
	}
	b.live = nil
	if len(errs) > 0 {
		return fmt.Errorf("cleanup: %w", errors.Join(errs...))
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CRIResults are the runs of one `rudder bench cri`, one per runtime.
type CRIResults struct{ Runs []*CRIResult }

// Failures are every run's.
func (r *CRIResults) Failures() []string {
	var f []string
	for _, run := range r.Runs {
		f = append(f, run.failures...)
	}
	return f
}

// Summaries state each run in the shared figure set: pod_startup_ms is
// the three CRI calls of a pod (no API server is involved), and the
// teardown and memory figures go under figures.
func (r *CRIResults) Summaries() []Summary {
	var out []Summary
	for _, run := range r.Runs {
		start := run.StartMS
		s := Summary{
			Scenario: "cri", Target: run.Label, Kubeconfig: run.Endpoint, Nodes: 1, Pods: run.Pods,
			PodStartupMS: &start, LoadAvg: run.LoadEnd, OK: len(run.failures) == 0,
			Figures: map[string]float64{
				"teardown_ms_p50": run.TeardownMS.P50,
				"teardown_ms_p99": run.TeardownMS.P99,
				"per_pod_rss_mib": run.PerPodRSSMiB,
				"per_pod_pss_mib": run.PerPodPSSMiB,
				"start_ms_p50":    run.StartMS.P50,
				"start_ms_p99":    run.StartMS.P99,
			},
		}
		for _, m := range run.Memory {
			s.Figures[fmt.Sprintf("total_rss_mib_%dpods", m.Pods)] = m.TotalRSSMiB
			s.Figures[fmt.Sprintf("total_pss_mib_%dpods", m.Pods)] = m.TotalPSSMiB
		}
		if n := len(run.Memory); n > 0 {
			peak := run.Memory[n-1].TotalRSSMiB
			s.ServerPeakRSSMiB = &peak
		}
		out = append(out, s)
	}
	return out
}

// Print writes one table per run, then the JSON line of all runs.
func (r *CRIResults) Print(out io.Writer) error {
	for _, run := range r.Runs {
		fmt.Fprintf(out, "rudder bench cri: %s (%s) at %s, %d pods one after another, host network %v, %.1fs, load %.1f→%.1f\n",
			run.Label, run.Version, run.Endpoint, run.Pods, run.HostNetwork, run.Seconds, run.LoadStart, run.LoadEnd)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "phase\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
		fmt.Fprintf(tw, "run+create+start\t%.1f\t%.1f\t%.1f\t%.1f\t\n", run.StartMS.P50, run.StartMS.P90, run.StartMS.P99, run.StartMS.Max)
		fmt.Fprintf(tw, "stop+remove\t%.1f\t%.1f\t%.1f\t%.1f\t\n", run.TeardownMS.P50, run.TeardownMS.P90, run.TeardownMS.P99, run.TeardownMS.Max)
		fmt.Fprintln(tw, "\t\t\t\t\t")
		fmt.Fprintln(tw, "pods\truntime RSS MiB\tmonitors\tmonitors RSS MiB\ttotal RSS MiB\ttotal PSS MiB\t")
		for _, m := range run.Memory {
			fmt.Fprintf(tw, "%d\t%.1f\t%d\t%.1f\t%.1f\t%.1f\t\n", m.Pods, m.RuntimeRSSMiB, m.Monitors, m.MonitorsRSSMiB, m.TotalRSSMiB, m.TotalPSSMiB)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(out, "per pod: %.2f MiB RSS, %.2f MiB PSS\n", run.PerPodRSSMiB, run.PerPodPSSMiB)
		for _, f := range run.failures {
			fmt.Fprintln(out, "FAIL:", f)
		}
		fmt.Fprintln(out)
	}
	return printJSONLine(out, r)
}
