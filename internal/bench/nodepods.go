package bench

// The pods scenario (issue 13) measures what a user of one real node waits
// for: a pod created to Running (containers really started), a hundred at
// once, and their teardown, plus what the node costs in memory as pods
// come. It starts `rudder up` as a child process in a fresh data
// directory, with rudder's own runtime or, with RuntimeEndpoint, another
// CRI runtime (containerd) under the same kubelet, so the two runtimes
// are compared under one kubelet in one run.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
)

// Targets of issue 13 on a 2-core machine.
const (
	podsSingleP50TargetMS = 150
	podsSingleP99TargetMS = 300
	podsBatchTargetS      = 10
)

// PodsConfig parameterises `rudder bench pods`.
type PodsConfig struct {
	// Binary is the rudder executable started as `rudder up`.
	Binary string
	// Single is how many pods are created one after another for the
	// single-pod latency; Batch how many are created at once.
	Single, Batch int
	// RuntimeEndpoint, when set, is the CRI runtime the kubelet uses
	// instead of rudder's (e.g. containerd's socket); Image must then
	// already be in it.
	RuntimeEndpoint string
	// Image is the image the pods run ("busybox:bench"): with rudder's
	// runtime, a busybox image built from the host's /bin/busybox is
	// imported under that name first.
	Image string
	// Timeout bounds the whole run.
	Timeout time.Duration
}

// PodsResult is one run.
type PodsResult struct {
	Runtime          string             `json:"runtime"`
	Single           Quantiles          `json:"single_create_to_running_ms"`
	SingleTeardown   Quantiles          `json:"single_delete_to_gone_ms"`
	Batch            int                `json:"batch"`
	BatchStartup     Quantiles          `json:"batch_create_to_running_ms"`
	BatchAllRunningS float64            `json:"batch_all_running_s"`
	BatchTeardownS   float64            `json:"batch_teardown_s"`
	MemoryMiB        map[string]float64 `json:"memory_mib"`
	LoadAvg          float64            `json:"loadavg"`
	failures         []string
}

// RunPods runs the scenario once.
func RunPods(ctx context.Context, cfg PodsConfig) (*PodsResult, error) {
	if cfg.Single <= 0 {
		cfg.Single = 20
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 100
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Minute
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("bench pods runs real containers: it needs root")
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	dir, err := os.MkdirTemp("", "rudder-bench-pods-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	dataDir := filepath.Join(dir, "data")
	res := &PodsResult{Runtime: "rudder", Batch: cfg.Batch, MemoryMiB: map[string]float64{}}
	if cfg.Image == "" {
		cfg.Image = "busybox:bench"
	}
	if cfg.RuntimeEndpoint != "" {
		res.Runtime = cfg.RuntimeEndpoint
	} else if err := importBusybox(ctx, cfg.Binary, dataDir, filepath.Join(dir, "busybox.tar"), cfg.Image); err != nil {
		return nil, err
	}
	c, err := startUp(cfg, dataDir, filepath.Join(dir, "rudder.log"))
	if err != nil {
		return nil, err
	}
	defer func() {
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer scancel()
		if err := c.stop(sctx); err != nil {
			res.failures = append(res.failures, "stop: "+err.Error())
		}
	}()
	if err := waitReadyz(ctx, c, dataDir); err != nil {
		return nil, err
	}
	if err := waitNodesReady(ctx, c, dataDir, 1); err != nil {
		return nil, err
	}
	rc, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dataDir, "admin.kubeconfig"))
	if err != nil {
		return nil, err
	}
	rc.QPS, rc.Burst = 1000, 1000
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	p := &podsRun{cs: cs, image: cfg.Image, dataDir: dataDir, pid: c.cmd.Process.Pid, shimMarker: dataDir}
	res.MemoryMiB["idle"] = p.memory()

	var single, singleDown histogram
	for i := range cfg.Single {
		up, down, err := p.one(ctx, fmt.Sprintf("single-%d", i))
		if err != nil {
			return nil, fmt.Errorf("single pod %d: %w; log tail:\n%s", i, err, c.logTail())
		}
		single.record(up)
		singleDown.record(down)
	}
	res.Single, res.SingleTeardown = quantilesOf(&single), quantilesOf(&singleDown)

	batch, all, err := p.batch(ctx, cfg.Batch, res.MemoryMiB)
	if err != nil {
		return nil, fmt.Errorf("batch: %w; log tail:\n%s", err, c.logTail())
	}
	res.BatchStartup, res.BatchAllRunningS = quantilesOf(batch), round1(all.Seconds())
	t0 := time.Now()
	if err := p.deleteAll(ctx); err != nil {
		return nil, fmt.Errorf("teardown: %w", err)
	}
	res.BatchTeardownS = round1(time.Since(t0).Seconds())
	res.LoadAvg = loadAverage()
	res.judge()
	return res, nil
}

func (r *PodsResult) judge() {
	if r.Single.P50 > podsSingleP50TargetMS {
		r.failures = append(r.failures, fmt.Sprintf("single pod p50 %.0f ms > %d ms", r.Single.P50, podsSingleP50TargetMS))
	}
	if r.Single.P99 > podsSingleP99TargetMS {
		r.failures = append(r.failures, fmt.Sprintf("single pod p99 %.0f ms > %d ms", r.Single.P99, podsSingleP99TargetMS))
	}
	if r.Batch >= 100 && r.BatchAllRunningS > podsBatchTargetS {
		r.failures = append(r.failures, fmt.Sprintf("%d pods all Running in %.1f s > %d s", r.Batch, r.BatchAllRunningS, podsBatchTargetS))
	}
}

// importBusybox writes the busybox test image and imports it with
// `rudder images import`, as a user without a registry would.
func importBusybox(ctx context.Context, bin, dataDir, tarPath, tag string) error {
	if err := imagetest.WriteBusyboxArchive(tarPath, tag); err != nil {
		return err
	}
	out, err := exec.CommandContext(ctx, bin, "images", "--data-dir", dataDir, "import", tarPath).CombinedOutput()
	if err != nil {
		return fmt.Errorf("rudder images import: %v: %s", err, out)
	}
	return nil
}

// startUp execs `rudder up` on a free port.
func startUp(cfg PodsConfig, dataDir, logPath string) (*child, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	args := []string{"up", "--data-dir", dataDir, "--https-port", strconv.Itoa(port), "--kubelet-port", "0",
		"--node-name", "bench", "--pod-logs-dir", filepath.Join(dataDir, "pods"), "--log-level", "warn"}
	if cfg.RuntimeEndpoint != "" {
		args = append(args, "--container-runtime-endpoint", cfg.RuntimeEndpoint)
	}
	cmd := exec.Command(cfg.Binary, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	c := &child{cmd: cmd, port: port, logPath: logPath, logFile: logFile, done: make(chan struct{})}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", cfg.Binary, err)
	}
	go func() {
		c.waitErr = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	return c, nil
}

type podsRun struct {
	cs         kubernetes.Interface
	image      string
	dataDir    string
	pid        int
	shimMarker string
}

// benchPod sleeps and exits at once on SIGTERM, so teardown measures the
// node, not a grace period.
func (p *podsRun) benchPod(name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{labelApp: "bench-pods"}},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Containers: []corev1.Container{{Name: "c", Image: p.image, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: []string{"sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"}}},
		},
	}
}

// one creates a pod, waits for it Running, deletes it and waits for it
// gone; it returns both durations.
func (p *podsRun) one(ctx context.Context, name string) (up, down time.Duration, err error) {
	pods := p.cs.CoreV1().Pods(metav1.NamespaceDefault)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		return 0, 0, err
	}
	defer w.Stop()
	t0 := time.Now()
	if _, err := pods.Create(ctx, p.benchPod(name), metav1.CreateOptions{}); err != nil {
		return 0, 0, err
	}
	if err := waitPod(ctx, w, func(pod *corev1.Pod) bool { return pod.Status.Phase == corev1.PodRunning }); err != nil {
		return 0, 0, err
	}
	up = time.Since(t0)
	t1 := time.Now()
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		return 0, 0, err
	}
	if err := waitPod(ctx, w, nil); err != nil {
		return 0, 0, err
	}
	return up, time.Since(t1), nil
}

// waitPod reads w until done holds for the pod, or (done nil) the pod is
// deleted.
func waitPod(ctx context.Context, w watch.Interface, done func(*corev1.Pod) bool) error {
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errors.New("watch closed")
			}
			pod, _ := ev.Object.(*corev1.Pod)
			switch {
			case pod == nil:
				continue
			case done == nil && ev.Type == watch.Deleted:
				return nil
			case done != nil && done(pod):
				return nil
			case pod.Status.Phase == corev1.PodFailed:
				return fmt.Errorf("pod %s failed: %+v", pod.Name, pod.Status.ContainerStatuses)
			}
		}
	}
}

// batch creates n pods at once (16 writers) and waits until all run,
// recording each one's create→Running and the node's memory as 10, 50 and
// n pods run.
func (p *podsRun) batch(ctx context.Context, n int, mem map[string]float64) (*histogram, time.Duration, error) {
	pods := p.cs.CoreV1().Pods(metav1.NamespaceDefault)
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: labelApp + "=bench-pods"})
	if err != nil {
		return nil, 0, err
	}
	defer w.Stop()
	var mu sync.Mutex
	created := map[string]time.Time{}
	t0 := time.Now()
	errc := make(chan error, 1)
	next := make(chan int)
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				name := fmt.Sprintf("batch-%03d", i)
				mu.Lock()
				created[name] = time.Now()
				mu.Unlock()
				if _, err := pods.Create(ctx, p.benchPod(name), metav1.CreateOptions{}); err != nil {
					select {
					case errc <- err:
					default:
					}
					return
				}
			}
		}()
	}
	go func() {
		for i := range n {
			next <- i
		}
		close(next)
	}()
	var h histogram
	running := map[string]bool{}
	marks := map[int]string{10: "pods_10", 50: "pods_50", n: fmt.Sprintf("pods_%d", n)}
	for len(running) < n {
		select {
		case err := <-errc:
			return nil, 0, err
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("%d of %d running: %w", len(running), n, ctx.Err())
		case ev, ok := <-w.ResultChan():
			if !ok {
				return nil, 0, errors.New("watch closed")
			}
			pod, _ := ev.Object.(*corev1.Pod)
			if pod == nil || running[pod.Name] || pod.Status.Phase != corev1.PodRunning {
				continue
			}
			running[pod.Name] = true
			mu.Lock()
			h.record(time.Since(created[pod.Name]))
			mu.Unlock()
			if m, ok := marks[len(running)]; ok {
				mem[m] = p.memory()
			}
		}
	}
	all := time.Since(t0)
	wg.Wait()
	return &h, all, nil
}

// deleteAll deletes the batch and waits until the API has none left: the
// kubelet removes each pod once its containers are gone.
func (p *podsRun) deleteAll(ctx context.Context) error {
	pods := p.cs.CoreV1().Pods(metav1.NamespaceDefault)
	sel := metav1.ListOptions{LabelSelector: labelApp + "=bench-pods"}
	if err := pods.DeleteCollection(ctx, metav1.DeleteOptions{}, sel); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	for {
		l, err := pods.List(ctx, sel)
		if err != nil {
			return err
		}
		if len(l.Items) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d pods left: %w", len(l.Items), ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// memory is what the node costs: the rudder process's proportional set
// size plus its containers' monitors' (PSS shares the binary's pages
// fairly among the processes that map them), in MiB. Processes of
// another runtime (containerd and its shims) are not seen here: measure
// them with scripts/containerd-peer.sh.
func (p *podsRun) memory() float64 {
	total := pssMiB(p.pid)
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), "runtime-shim") || !strings.Contains(string(cmd), p.shimMarker) {
			continue
		}
		pid, _ := strconv.Atoi(e.Name())
		total += pssMiB(pid)
	}
	return round1(total)
}

// pssMiB reads a process's Pss from /proc/PID/smaps_rollup.
func pssMiB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Pss:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

// Print writes the table and the JSON line.
func (r *PodsResult) Print(out io.Writer) error {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "runtime\t%s\n", r.Runtime)
	fmt.Fprintf(tw, "single pod create→Running\tp50 %.0f ms  p99 %.0f ms  (n=%d; target p50 ≤ %d, p99 ≤ %d)\n", r.Single.P50, r.Single.P99, r.Single.Count, podsSingleP50TargetMS, podsSingleP99TargetMS)
	fmt.Fprintf(tw, "single pod delete→gone\tp50 %.0f ms  p99 %.0f ms\n", r.SingleTeardown.P50, r.SingleTeardown.P99)
	fmt.Fprintf(tw, "%d pods at once\tall Running in %.1f s (target ≤ %d s); each p50 %.0f ms p99 %.0f ms\n", r.Batch, r.BatchAllRunningS, podsBatchTargetS, r.BatchStartup.P50, r.BatchStartup.P99)
	fmt.Fprintf(tw, "%d pods deleted\tall gone in %.1f s\n", r.Batch, r.BatchTeardownS)
	fmt.Fprintf(tw, "memory (PSS, rudder + monitors)\tidle %.1f MiB, 10 pods %.1f, 50 pods %.1f, %d pods %.1f\n", r.MemoryMiB["idle"], r.MemoryMiB["pods_10"], r.MemoryMiB["pods_50"], r.Batch, r.MemoryMiB[fmt.Sprintf("pods_%d", r.Batch)])
	fmt.Fprintf(tw, "load average\t%.2f\n", r.LoadAvg)
	for _, f := range r.failures {
		fmt.Fprintf(tw, "target missed\t%s\n", f)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b, err := json.Marshal(r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
}

// Summaries gives the figures --compare and --json share.
func (r *PodsResult) Summaries() []Summary {
	figs := map[string]float64{
		"single_p50_ms": r.Single.P50, "single_p99_ms": r.Single.P99,
		"single_teardown_p50_ms": r.SingleTeardown.P50,
		"batch_all_running_s":    r.BatchAllRunningS, "batch_p99_ms": r.BatchStartup.P99,
		"batch_teardown_s": r.BatchTeardownS,
	}
	for k, v := range r.MemoryMiB {
		figs["memory_"+k+"_mib"] = v
	}
	q := r.Single
	return []Summary{{Scenario: "pods", Target: "child", Kubeconfig: r.Runtime, Nodes: 1, Pods: r.Batch,
		SecondsToAllRunning: ptr.To(r.BatchAllRunningS), PodStartupMS: &q, Figures: figs, LoadAvg: r.LoadAvg, OK: true}}
}
