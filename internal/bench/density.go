package bench

// The density scenario (`rudder bench density`) is upstream's density
// test: a cluster of N simulated nodes, one Deployment of M small pods,
// and the question of how long until all M run and what each pod waited.
// Everything between the Deployment's create and the pods' Running is the
// server's own work: the deployment and replicaset controllers create the
// pods, the scheduler binds them, the simulated nodes (1 s start delay)
// report them Running — all through the API server, as in a real cluster.
//
// Per run (one point of the --nodes × --pods grid, each on a fresh
// embedded server unless --kubeconfig):
//
//  1. the cluster is brought up with N Ready simulated nodes
//     (densityOpen), a namespace made, a pod watch opened;
//  2. the server's /metrics is scraped, the CPU meter started and the
//     peak-RSS mark reset;
//  3. the Deployment is created; the watch records each pod's creation,
//     binding and Running (densityTracker) until all M run;
//  4. with all M running, the latency phase (density_latency.go): pods
//     created one at a time at a low rate, whose startup the SLO target
//     is judged on, as clusterloader2 does;
//  5. /metrics again: the difference is the API call latency of the run.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/simnode"
)

// Targets of the density scenario (issue "simulated nodes at 5,000-node
// scale"): upstream's pod startup SLO, and its reference size's time.
const (
	densityStartupTargetMS   = 5000
	densityAllRunningTargetS = 15
	densityRefNodes          = 1000
	densityRefPods           = 10000
)

// DensityConfig parameterises `rudder bench density`.
type DensityConfig struct {
	// Kubeconfig selects an existing cluster; empty starts a fresh embedded
	// server (with the nodes it needs) per run, in a temporary directory.
	Kubeconfig string
	// Nodes and Pods are the sizes to run (default 1000 and 10000). Every
	// combination runs, smallest first, unless Pairs; combinations with
	// more pods than the nodes can hold (110 each) are skipped.
	Nodes []int
	Pods  []int
	// Pairs runs Nodes[i] with Pods[i] only (the lists must be as long).
	Pairs bool
	// Seed is recorded and seeds nodes started on an existing cluster.
	Seed uint64
	// RunTimeout bounds one run, bring-up included (default 15 min).
	RunTimeout time.Duration
	// CPUProfile, when set, is where each run's measured phase is profiled
	// (suffixed with -<nodes>x<pods> when several runs).
	CPUProfile string
	// LatencyPods are created one at a time at LatencyQPS once the
	// Deployment's pods run (density_latency.go); the pod startup target
	// is judged on them. Default 100 at 5/s; negative: no latency phase
	// (the target is then judged on the Deployment's pods).
	LatencyPods int
	LatencyQPS  float64
}

func (c *DensityConfig) defaults() {
	if len(c.Nodes) == 0 {
		c.Nodes = []int{densityRefNodes}
	}
	if len(c.Pods) == 0 {
		c.Pods = []int{densityRefPods}
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.RunTimeout == 0 {
		c.RunTimeout = 15 * time.Minute
	}
	if c.LatencyPods == 0 {
		c.LatencyPods = densityLatencyPods
	}
	if c.LatencyQPS <= 0 {
		c.LatencyQPS = densityLatencyQPS
	}
}

// densityPoint is one run's size.
type densityPoint struct{ nodes, pods int }

// points lists the runs, and the combinations skipped with the reason.
func (c *DensityConfig) points() ([]densityPoint, []string, error) {
	for _, v := range append(append([]int(nil), c.Nodes...), c.Pods...) {
		if v <= 0 {
			return nil, nil, fmt.Errorf("--nodes and --pods must be positive, got %d", v)
		}
	}
	var all []densityPoint
	if c.Pairs {
		if len(c.Nodes) != len(c.Pods) {
			return nil, nil, fmt.Errorf("--pairs needs as many --nodes as --pods (%d and %d)", len(c.Nodes), len(c.Pods))
		}
		for i := range c.Nodes {
			all = append(all, densityPoint{c.Nodes[i], c.Pods[i]})
		}
	} else {
		for _, p := range c.Pods {
			for _, n := range c.Nodes {
				all = append(all, densityPoint{n, p})
			}
		}
	}
	var out []densityPoint
	var skipped []string
	for _, p := range all {
		// On an existing cluster other nodes may add room; the run's
		// timeout catches a cluster that has too little.
		if c.Kubeconfig == "" && p.pods > p.nodes*simnodePodsPerNode {
			skipped = append(skipped, fmt.Sprintf("%d pods on %d nodes: more than %d pods per node", p.pods, p.nodes, simnodePodsPerNode))
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		return nil, skipped, fmt.Errorf("no size to run: %s", cmpJoin(skipped))
	}
	return out, skipped, nil
}

// RunDensity runs every size of cfg in turn. A run that fails (its pods
// not all Running in time, a watch lost) is recorded and ends the grid:
// larger sizes would only fail slower. The error says why; the result
// holds the runs made.
func RunDensity(ctx context.Context, cfg DensityConfig) (*DensityResult, error) {
	cfg.defaults()
	points, skipped, err := cfg.points()
	if err != nil {
		return nil, err
	}
	res := &DensityResult{Seed: cfg.Seed, NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		LoadStart: loadAverage(), Skipped: skipped, Runs: []DensityRun{}}
	defer func() { res.LoadEnd = loadAverage() }()
	for _, p := range points {
		profile := cfg.CPUProfile
		if profile != "" && len(points) > 1 {
			profile = fmt.Sprintf("%s-%dx%d", profile, p.nodes, p.pods)
		}
		run, err := densityRun(ctx, cfg, p, profile)
		if run != nil {
			res.Runs = append(res.Runs, *run)
			slog.Info("bench: density run", "nodes", p.nodes, "pods", p.pods, "all_running_s", run.SecondsToAllRunning,
				"startup_p99_ms", run.PodStartupMS.P99, "ok", run.OK)
		}
		if err != nil {
			return res, fmt.Errorf("%d nodes × %d pods: %w", p.nodes, p.pods, err)
		}
		if len(run.Failures) > 0 {
			return res, fmt.Errorf("%d nodes × %d pods: %s", p.nodes, p.pods, cmpJoin(run.Failures))
		}
	}
	return res, ctx.Err()
}

// densityRun is one size: bring-up, the measured phase, tear-down. It
// returns a run whenever the measured phase started.
func densityRun(parent context.Context, cfg DensityConfig, p densityPoint, profile string) (*DensityRun, error) {
	ctx, cancel := context.WithTimeout(parent, cfg.RunTimeout)
	defer cancel()
	run := &DensityRun{Scenario: "density", Seed: cfg.Seed, Nodes: p.nodes, Pods: p.pods, LoadStart: loadAverage(),
		API: []APILatency{}, Targets: []TargetResult{}, Failures: []string{}}
	recorder := newDensityRecorder()
	bringUp := time.Now()
	cl, err := densityOpen(ctx, cfg.Kubeconfig, p.nodes, cfg.Seed, recorder)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	run.Target, run.Kubeconfig, run.Nodes, run.NodesStarted = cl.target, cl.kubeconfig, cl.nodes, cl.started
	run.BringUpSeconds = round3(time.Since(bringUp).Seconds())

	pool, err := newClientPool(ctx, cl.rc, 2)
	if err != nil {
		return nil, err
	}
	cs := pool.get(0)
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "rudder-bench-density-", Labels: map[string]string{"app.kubernetes.io/managed-by": "rudder-bench"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create the benchmark namespace: %w", err)
	}
	e := &env{pool: pool, namespace: ns.Name, pods: podFactory{seed: cfg.Seed, namespace: ns.Name}}
	if !cl.embedded() {
		defer densityCleanup(e)
	}
	if err := e.waitAdmissible(ctx); err != nil {
		return nil, err
	}
	tracker := newDensityTracker(p.pods)
	// The watch must end before the cluster goes (deferred above).
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	if err := tracker.start(wctx, pool.get(1), ns.Name); err != nil {
		return nil, err
	}

	var usage serverUsage
	if cl.embedded() {
		// Return what earlier runs freed, so this run's RSS is its own.
		debug.FreeOSMemory()
		run.RSSBeforeMiB, run.HeapBeforeMiB = densityMemory()
		usage = startServerUsage()
	}
	before, scrapeErr := densityScrapeMetrics(ctx, cs.CoreV1().RESTClient())
	if scrapeErr != nil {
		slog.Warn("bench: no server-side API latencies; timing the benchmark's own calls instead", "err", scrapeErr)
	}
	recorder.reset()
	stopProfile, err := densityStartProfile(profile)
	if err != nil {
		return nil, err
	}
	t0 := time.Now()
	_, err = cs.AppsV1().Deployments(ns.Name).Create(ctx, densityDeployment(p.pods), metav1.CreateOptions{})
	if err != nil {
		stopProfile()
		return nil, fmt.Errorf("create the deployment: %w", err)
	}
	go tracker.logProgress(wctx, t0, 10*time.Second)
	select {
	case <-tracker.done:
	case <-ctx.Done():
	}
	measured := time.Since(t0)
	stopProfile()
	if cl.embedded() {
		run.ServerCPUSeconds, run.ServerPeakRSSMiB = usage.read()
		run.ServerCPUCores = round3(*run.ServerCPUSeconds / measured.Seconds())
		_, run.HeapAfterMiB = densityMemory()
	}
	snap := tracker.snapshot()
	run.fill(snap, t0)
	if cfg.LatencyPods > 0 && snap.running >= p.pods {
		wcancel() // the saturation watch has seen all it waited for
		run.LatencyPods = cfg.LatencyPods
		ls, err := densityLatency(ctx, cs, pool.get(1), ns.Name, cfg.LatencyPods, cfg.LatencyQPS)
		run.LatencyRunning, run.LatencyStartupMS = ls.running, ls.startup
		switch {
		case err != nil:
			run.Failures = append(run.Failures, fmt.Sprintf("latency phase: %v", err))
		case ls.running < cfg.LatencyPods:
			run.Failures = append(run.Failures, fmt.Sprintf("%d of %d latency pods Running: %v", ls.running, cfg.LatencyPods, ctx.Err()))
		}
	}
	// A context that ended leaves the run's record; the scrape needs one.
	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if scrapeErr == nil {
		after, err := densityScrapeMetrics(sctx, cs.CoreV1().RESTClient())
		if err == nil {
			var cpu float64
			run.API, run.APIP99MS, cpu, err = densityAPIDelta(before, after)
			run.APISource = APISourceServer
			if cpu >= 0 && !cl.embedded() {
				run.ServerCPUSeconds = &cpu
			}
			if after.rssBytes >= 0 && !cl.embedded() {
				// Not a peak: the server's RSS once the pods run.
				rss := round1(after.rssBytes / (1 << 20))
				run.ServerPeakRSSMiB = &rss
			}
		}
		if err != nil {
			scrapeErr = err
		}
	}
	if scrapeErr != nil {
		run.APIError = scrapeErr.Error()
		run.APISource = APISourceClient
		run.Client, run.APIP99MS = recorder.results()
	}
	if snap.running < p.pods {
		why := ctx.Err()
		if snap.err != nil {
			why = snap.err
		}
		run.Failures = append(run.Failures, fmt.Sprintf("%d of %d pods Running after %.0fs (%d created, %d bound): %v",
			snap.running, p.pods, measured.Seconds(), snap.seen, snap.bound, why))
	}
	run.judge()
	run.LoadEnd = loadAverage()
	if parent.Err() != nil {
		return run, parent.Err()
	}
	return run, nil
}

// densityDeployment is the workload: M replicas of a pause container
// requesting little (10m CPU, 16Mi), so pod counts, not resources, bound
// density, and only on simulated nodes.
func densityDeployment(replicas int) *appsv1.Deployment {
	labels := map[string]string{labelApp: "rudder-bench-density"}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "density", Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  map[string]string{simnode.LabelSimulated: "true"},
					AutomountServiceAccountToken:  ptr.To(false),
					TerminationGracePeriodSeconds: ptr.To(int64(0)),
					Containers: []corev1.Container{{
						Name:  "pause",
						Image: "registry.k8s.io/pause:3.10",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
							corev1.ResourceCPU:    resource.MustParse("10m"),
							corev1.ResourceMemory: resource.MustParse("16Mi"),
						}},
					}},
				},
			},
		},
	}
}

// densityCleanup removes the run's objects from an existing cluster. The
// Deployment and ReplicaSets go first, orphaning their pods, or the
// controllers would re-create pods while they are deleted.
func densityCleanup(e *env) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs := e.pool.get(0)
	orphan := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationOrphan)}
	err := errors.Join(
		cs.AppsV1().Deployments(e.namespace).DeleteCollection(ctx, orphan, metav1.ListOptions{}),
		cs.AppsV1().ReplicaSets(e.namespace).DeleteCollection(ctx, orphan, metav1.ListOptions{}))
	if err != nil {
		slog.Warn("bench: deleting the workload", "namespace", e.namespace, "err", err)
	}
	e.deleteNamespace()
}

// densityMemory is this process's RSS and, after a GC, its live heap, in
// MiB: with an embedded server, the server's memory and the benchmark's.
func densityMemory() (rss, heap *float64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	h := round1(float64(ms.HeapAlloc) / (1 << 20))
	if r, err := rssMiB(os.Getpid()); err == nil {
		rss = &r
	}
	return rss, &h
}

// densityStartProfile starts a CPU profile to path ("" for none) and
// returns its stop.
func densityStartProfile(path string) (func(), error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
