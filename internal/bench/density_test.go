package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/server"
)

// TestDensityTiny runs the density scenario at toy size on a fresh
// embedded server and checks what a user reads: every pod reached
// Running, the figures are consistent, and --json prints one parseable
// line with the uniform keys.
func TestDensityTiny(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := RunDensity(ctx, DensityConfig{Nodes: []int{20}, Pods: []int{200}, LatencyPods: 10, LatencyQPS: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 1 {
		t.Fatalf("runs: %+v", res.Runs)
	}
	run := res.Runs[0]
	if run.Running != 200 || run.Created != 200 || run.Scheduled != 200 {
		t.Fatalf("pods created/bound/Running = %d/%d/%d, want 200 each", run.Created, run.Scheduled, run.Running)
	}
	if run.Target != "embedded" || run.Nodes != 20 {
		t.Errorf("target %q with %d nodes", run.Target, run.Nodes)
	}
	// The simulated nodes take 1 s to start a pod: no pod can start faster.
	if run.PodStartupMS.P50 < 900 || run.PodStartupMS.P99 < run.PodStartupMS.P50 || run.PodStartupMS.Count != 200 {
		t.Errorf("pod startup: %+v", run.PodStartupMS)
	}
	// The latency pods ran after the burst, and the SLO target is theirs.
	if run.LatencyPods != 10 || run.LatencyRunning != 10 || run.LatencyStartupMS.Count != 10 || run.LatencyStartupMS.P50 < 900 {
		t.Errorf("latency pods: %d of %d Running, startup %+v", run.LatencyRunning, run.LatencyPods, run.LatencyStartupMS)
	}
	if len(run.Targets) == 0 || run.Targets[0].Name != "latency pod startup p99 ms" || run.Targets[0].Got != run.LatencyStartupMS.P99 {
		t.Errorf("targets: %+v", run.Targets)
	}
	if !(run.SecondsToAllCreated <= run.SecondsToAllRunning && run.SecondsToAllScheduled <= run.SecondsToAllRunning && run.SecondsToAllRunning > 1) {
		t.Errorf("phases out of order: created %.2f, bound %.2f, running %.2f", run.SecondsToAllCreated, run.SecondsToAllScheduled, run.SecondsToAllRunning)
	}
	if run.APISource != APISourceServer || run.APIP99MS["create"] <= 0 {
		t.Errorf("API latencies from %q (%s): %v", run.APISource, run.APIError, run.APIP99MS)
	}
	// The scheduler binds each pod, the nodes write each one's status.
	counts := map[string]uint64{}
	for _, a := range run.API {
		counts[a.Verb+" "+a.Resource] += a.Count
	}
	if counts["create pods/binding"] < 200 || counts["update pods/status"] < 200 {
		t.Errorf("API groups miss the pods' binds or status writes: %v", counts)
	}
	if run.ServerCPUSeconds == nil || *run.ServerCPUSeconds <= 0 || run.ServerPeakRSSMiB == nil || *run.ServerPeakRSSMiB <= 0 {
		t.Errorf("server usage: cpu %v, rss %v", run.ServerCPUSeconds, run.ServerPeakRSSMiB)
	}
	if !run.OK {
		t.Errorf("not ok: targets %+v failures %v", run.Targets, run.Failures)
	}

	got := printedJSON(t, res)
	if got["scenario"] != "density" || got["running"] != float64(200) {
		t.Errorf("JSON line: %v", got)
	}
	var out bytes.Buffer
	if err := Output(&out, true, res, nil); err != nil {
		t.Fatal(err)
	}
	line := uniformLine(t, out.String())
	if line["seconds_to_all_running"].(float64) <= 0 || line["pods"] != float64(200) || line["nodes"] != float64(20) {
		t.Errorf("uniform JSON: %v", line)
	}
}

// uniformLine parses --json output: exactly one line, carrying every
// uniform key.
func uniformLine(t *testing.T, out string) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 1 {
		t.Fatalf("--json printed %d lines, want 1:\n%s", len(lines), out)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	for _, k := range []string{"scenario", "nodes", "pods", "seconds_to_all_running", "pods_per_second", "pod_startup_ms",
		"api_p99_ms", "server_cpu_seconds", "server_peak_rss_mib", "ok"} {
		if _, ok := got[k]; !ok {
			t.Errorf("uniform JSON lacks %q: %s", k, lines[0])
		}
	}
	return got
}

// TestDensityKubeconfigCompare runs A on an embedded server and B, via
// --compare, on a second server reached by its kubeconfig that has no
// nodes: the run must start its own simulated nodes there, remove them
// afterwards, and the comparison must carry B's figures and the ratios.
func TestDensityKubeconfigCompare(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, srv, stop, err := startEmbedded(ctx, server.Config{HTTPSPort: 0})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()

	cfg := DensityConfig{Nodes: []int{10}, Pods: []int{50}, LatencyPods: -1}
	a, err := RunDensity(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Kubeconfig = srv.Kubeconfig
	b, err := RunDensity(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	rb := b.Runs[0]
	if rb.Target != "kubeconfig" || rb.NodesStarted != 10 || rb.Running != 50 {
		t.Fatalf("B: target %s, started %d nodes, %d Running", rb.Target, rb.NodesStarted, rb.Running)
	}
	// The nodes B started are gone again, and so is its namespace's
	// workload.
	rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	// densityCountNodes reads the watch cache (resourceVersion 0), which
	// may be a moment behind the deletes that just returned.
	var n int
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		n, err = densityCountNodes(ctx, cs)
		return err == nil && n == 0, nil
	})
	if err != nil {
		t.Errorf("after the run the cluster has %d simulated nodes (%v), want 0", n, err)
	}

	var out bytes.Buffer
	if err := Output(&out, true, a, b); err != nil {
		t.Fatal(err)
	}
	line := uniformLine(t, out.String())
	cmp, ok := line["compare"].(map[string]any)
	if !ok {
		t.Fatalf("no comparison: %v", line)
	}
	ratio := cmp["ratio"].(map[string]any)
	if r, ok := ratio["pod_startup_ms.p50"].(float64); !ok || r <= 0 {
		t.Errorf("ratio of startup p50: %v", ratio)
	}
	if cmp["b"].(map[string]any)["target"] != "kubeconfig" {
		t.Errorf("B summary: %v", cmp["b"])
	}

	out.Reset()
	if err := Output(&out, false, a, b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "COMPARISON density") || !strings.Contains(out.String(), "pod_startup_ms.p99") {
		t.Errorf("side-by-side table missing:\n%s", out.String())
	}
}
