package bench

// The scheduler scenario (`rudder bench scheduler`) measures how fast
// rudder's scheduler places pods, modelled on upstream's scheduler_perf:
// a cluster of N nodes carrying some existing load, then a batch of
// measured pods, timed from the first one's scheduling to the last bind.
//
// Every workload runs in two modes:
//
//   - algorithm: the scheduler alone, over a client-go fake clientset
//     preloaded with the nodes and pods. A binder plugin that only
//     records the bind replaces DefaultBinder, and events are off (but
//     for preemption: see schedRunAlgorithm), so what is timed is the
//     queue, the snapshot and the plugins.
//   - e2e: the scheduler as deployed, against a fresh embedded API server
//     and etcd (or a --kubeconfig cluster): nodes are created through the
//     API as Node objects without kubelets (as scheduler_perf does), pods
//     by concurrent clients, and binds are seen by a watch.
//
// Why the binder does not write the bind back into the fake clientset:
// the scheduler's cache keeps an assumed pod until the informer confirms
// it, and with no TTL that is forever, so an unconfirmed assumed pod is
// still accounted on its node: filtering, scoring, spreading and
// anti-affinity all see it. The one thing confirmation would change is
// its removal: deleting a pod the informer never saw bound is a queue
// delete, not a cache removal. Only preemption deletes pods, and its
// victims here are the preloaded, already-bound low-priority pods, never
// pods this run bound; the nomination a preemptor holds is dropped by the
// scheduler itself when it binds. So recording is enough, and the
// informer's confirmation path is left to the e2e mode, where it is real.
//
// The unschedulable scenario parks pods asking for twice a node's CPU,
// waits until each has been tried once, then measures the usual pods
// while a tainted node four times the usual size is added (and the
// previous one removed) every ChurnInterval. Each such node passes
// NodeResourcesFit's queueing hint for the parked pods, so it wakes them,
// and the taint sends them back: the churn costs retries (ParkedWakeups),
// and never places a pod on a node about to vanish.

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Scheduler scenarios and modes.
const (
	SchedBasic         = "basic"
	SchedSpread        = "spread"
	SchedAntiAffinity  = "antiaffinity"
	SchedPreemption    = "preemption"
	SchedUnschedulable = "unschedulable"

	ModeAlgorithm = "algorithm"
	ModeE2E       = "e2e"
)

// SchedScenarios and SchedModes are every scenario and mode, in the order
// runs are made.
var (
	SchedScenarios = []string{SchedBasic, SchedSpread, SchedAntiAffinity, SchedPreemption, SchedUnschedulable}
	SchedModes     = []string{ModeAlgorithm, ModeE2E}
)

// SchedulerConfig is `rudder bench scheduler`. Zero values take each
// scenario's defaults (see schedResolve).
type SchedulerConfig struct {
	// Scenarios and Modes to run; every pair runs at every size in Nodes.
	Scenarios []string
	Modes     []string
	// Nodes are the cluster sizes; several values show how throughput
	// changes with the cluster (empty: the scenario's default).
	Nodes []int
	// InitPods are the pods already bound when the run starts (0: the
	// scenario's default, negative: none).
	InitPods int
	// Pods is the number of measured pods (0: the scenario's default).
	Pods int
	// ParkedPods are the unschedulable scenario's pods that never fit
	// (0: 1000, negative: none).
	ParkedPods int
	// Groups is the antiaffinity scenario's number of label groups (20).
	Groups int
	// Apps is the spread scenario's number of app labels (10).
	Apps int
	// ChurnInterval is how often the unschedulable scenario adds a node
	// and removes the one added before (100 ms).
	ChurnInterval time.Duration
	// Seed fixes the generated objects and the scheduler's tie-breaking.
	Seed uint64
	// Kubeconfig, for e2e mode, is a cluster to use instead of a fresh
	// embedded server. The scheduler still runs in this process, as a
	// profile of its own name, so the cluster's scheduler ignores the pods.
	Kubeconfig string
	// Clients is the number of concurrent clients creating objects in e2e
	// mode (32).
	Clients int
	// Parallelism is the scheduler's filter/score goroutines (GOMAXPROCS).
	Parallelism int
	// RunTimeout bounds one run; measured pods not bound by then are a
	// failure (10 min).
	RunTimeout time.Duration
	// CPUProfile, when set, receives a pprof CPU profile of each run's
	// measured phase (suffixed by run when there are several).
	CPUProfile string
	// MemProfile, when set, receives a pprof heap profile after each run
	// (suffixed like CPUProfile); its alloc_space and alloc_objects views
	// show what the run allocated, which is what the GC pays for.
	MemProfile string
	// Trace, when set, receives a runtime execution trace of each run's
	// measured phase (suffixed like CPUProfile), for `go tool trace`:
	// which goroutine ran on which core, and why each waited.
	Trace string
}

// schedProfilePaths are one run's profile outputs ("" for none).
type schedProfilePaths struct{ cpu, trace string }

func (c *SchedulerConfig) defaults() {
	if len(c.Scenarios) == 0 {
		c.Scenarios = []string{SchedBasic}
	}
	if len(c.Modes) == 0 {
		c.Modes = []string{ModeAlgorithm}
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Groups == 0 {
		c.Groups = 20
	}
	if c.Apps == 0 {
		c.Apps = 10
	}
	if c.ChurnInterval == 0 {
		c.ChurnInterval = 100 * time.Millisecond
	}
	if c.Clients == 0 {
		c.Clients = 32
	}
	if c.RunTimeout == 0 {
		c.RunTimeout = 10 * time.Minute
	}
}

func (c *SchedulerConfig) validate() error {
	for _, s := range c.Scenarios {
		if !slices.Contains(SchedScenarios, s) {
			return fmt.Errorf("unknown scenario %q (want one of %v)", s, SchedScenarios)
		}
	}
	for _, m := range c.Modes {
		if !slices.Contains(SchedModes, m) {
			return fmt.Errorf("unknown mode %q (want one of %v)", m, SchedModes)
		}
	}
	for _, n := range c.Nodes {
		if n <= 0 {
			return fmt.Errorf("--nodes must be positive, got %d", n)
		}
	}
	if c.Pods < 0 || c.Groups < 0 || c.Apps < 0 || c.Clients <= 0 || c.ChurnInterval < 0 {
		return fmt.Errorf("--pods, --groups, --apps must not be negative and --clients must be positive")
	}
	return nil
}

// schedResolve fills one run's sizes from the scenario's defaults and the
// config's overrides, and checks that the workload can be placed at all.
func schedResolve(c SchedulerConfig, scenario, mode string, nodes int) (schedParams, error) {
	p := schedParams{scenario: scenario, mode: mode, nodes: 5000, initPods: 1000, pods: 10000,
		nodeCPU: "32", nodeMemory: "128Gi", podCPU: "100m", podMemory: "128Mi", groups: c.Groups, apps: c.Apps}
	if mode == ModeE2E && c.Kubeconfig != "" {
		p.schedulerName = schedBenchSchedulerName
	}
	switch scenario {
	case SchedAntiAffinity:
		p.pods = 1000
	case SchedPreemption:
		p.nodes = 500
		p.nodeCPU, p.nodeMemory, p.podCPU = "4", "32Gi", "1"
	case SchedUnschedulable:
		p.parked = 1000
	}
	if nodes > 0 {
		p.nodes = nodes
	}
	if scenario == SchedPreemption {
		// Every node full of low-priority pods, one high-priority pod per
		// node: each must preempt.
		p.initPods, p.pods = 4*p.nodes, p.nodes
	}
	switch {
	case c.InitPods < 0:
		p.initPods = 0
	case c.InitPods > 0:
		p.initPods = c.InitPods
	}
	if c.Pods > 0 {
		p.pods = c.Pods
	}
	switch {
	case c.ParkedPods < 0:
		p.parked = 0
	case c.ParkedPods > 0 && scenario == SchedUnschedulable:
		p.parked = c.ParkedPods
	}
	switch scenario {
	case SchedAntiAffinity:
		if p.groups == 0 || p.initPods > p.nodes || (p.initPods+p.pods+p.groups-1)/p.groups > p.nodes {
			return p, fmt.Errorf("antiaffinity: %d init and %d measured pods in %d groups do not fit %d nodes (at most one per group per node, and init pods <= nodes)",
				p.initPods, p.pods, p.groups, p.nodes)
		}
	case SchedSpread:
		if p.nodes < len(schedZones) || p.apps == 0 {
			return p, fmt.Errorf("spread needs at least %d nodes (one per zone) and one app", len(schedZones))
		}
	case SchedPreemption:
		if p.initPods > 4*p.nodes || p.pods > 4*p.nodes {
			return p, fmt.Errorf("preemption: a node holds 4 pods; %d init or %d measured pods do not fit %d nodes", p.initPods, p.pods, p.nodes)
		}
	}
	return p, nil
}

// RunScheduler runs every scenario × mode × size of cfg in turn. On error
// it returns the runs that completed with it.
func RunScheduler(ctx context.Context, cfg SchedulerConfig) (*SchedulerResult, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	res := &SchedulerResult{Seed: cfg.Seed, NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
		LoadStart: loadAverage(), Runs: []SchedulerRun{}}
	var params []schedParams
	for _, sc := range cfg.Scenarios {
		for _, m := range cfg.Modes {
			sizes := cfg.Nodes
			if len(sizes) == 0 {
				sizes = []int{0}
			}
			for _, n := range sizes {
				p, err := schedResolve(cfg, sc, m, n)
				if err != nil {
					return nil, err
				}
				params = append(params, p)
			}
		}
	}
	for i, p := range params {
		suffix := func(path string) string {
			if path != "" && len(params) > 1 {
				return fmt.Sprintf("%s.%s-%s-%d", path, p.scenario, p.mode, p.nodes)
			}
			return path
		}
		profile := schedProfilePaths{cpu: suffix(cfg.CPUProfile), trace: suffix(cfg.Trace)}
		// Each run starts from a clean heap, so one run's garbage is not
		// another's GC work, and the peak RSS is the run's own.
		runtime.GC()
		debug.FreeOSMemory()
		schedResetPeakRSS()
		schedLogf("scheduler %s/%s: %d nodes, %d init pods, %d parked, %d measured pods (run %d of %d)",
			p.scenario, p.mode, p.nodes, p.initPods, p.parked, p.pods, i+1, len(params))
		memProfile := cfg.MemProfile
		if memProfile != "" && len(params) > 1 {
			memProfile = fmt.Sprintf("%s.%s-%s-%d", memProfile, p.scenario, p.mode, p.nodes)
		}
		if memProfile != "" {
			// Sample every 64 KiB allocated: enough to rank the sites of
			// a run that allocates gigabytes, at little cost.
			runtime.MemProfileRate = 64 << 10
		}
		rctx, cancel := context.WithTimeout(ctx, cfg.RunTimeout)
		var run *SchedulerRun
		var err error
		if p.mode == ModeAlgorithm {
			run, err = schedRunAlgorithm(rctx, cfg, p, profile)
		} else {
			run, err = schedRunE2E(rctx, cfg, p, profile)
		}
		cancel()
		if memProfile != "" {
			if perr := schedWriteHeapProfile(memProfile); perr != nil && err == nil {
				err = perr
			}
		}
		if run != nil {
			run.finish()
			res.Runs = append(res.Runs, *run)
			schedLogf("scheduler %s/%s at %d nodes: %d/%d bound in %.2fs, %.0f pods/s", p.scenario, p.mode, p.nodes, run.Bound, run.Pods, run.Seconds, run.PodsPerSecond)
		}
		if err != nil {
			res.LoadEnd = loadAverage()
			return res, fmt.Errorf("%s/%s at %d nodes: %w", p.scenario, p.mode, p.nodes, err)
		}
		if ctx.Err() != nil {
			break
		}
	}
	res.LoadEnd = loadAverage()
	return res, ctx.Err()
}

// schedRecorder is the scheduler's Config.OnAttempt: it times measured
// pods' attempts, notes the first pop and the last bind, and tells when
// the parked pods have all been tried once. The hook is called from the
// scheduling loop and from binding goroutines at once.
type schedRecorder struct {
	mu         sync.Mutex
	hist       histogram
	attempts   int
	unsched    int
	errors     int
	bound      int
	want       int
	firstPop   time.Time
	lastBind   time.Time
	done       chan struct{}
	parked     map[types.UID]bool
	parkedWant int
	parkedDone chan struct{}
	// wakeups counts attempts of parked pods after they were all parked:
	// the cost of events that woke them for nothing.
	wakeups int
}

func newSchedRecorder(want, parked int) *schedRecorder {
	r := &schedRecorder{want: want, done: make(chan struct{}), parked: map[types.UID]bool{}, parkedWant: parked, parkedDone: make(chan struct{})}
	if want == 0 {
		close(r.done)
	}
	if parked == 0 {
		close(r.parkedDone)
	}
	return r
}

func (r *schedRecorder) onAttempt(pod *corev1.Pod, result string, d time.Duration) {
	now := time.Now()
	role := pod.Labels[schedLabelRole]
	r.mu.Lock()
	defer r.mu.Unlock()
	switch role {
	case schedRoleMeasured:
		r.hist.record(d)
		r.attempts++
		if start := now.Add(-d); r.firstPop.IsZero() || start.Before(r.firstPop) {
			r.firstPop = start
		}
		switch result {
		case "scheduled":
			r.bound++
			r.lastBind = now
			if r.bound == r.want {
				close(r.done)
			}
		case "unschedulable":
			r.unsched++
		default:
			r.errors++
		}
	case schedRoleParked:
		if len(r.parked) < r.parkedWant {
			if !r.parked[pod.UID] {
				r.parked[pod.UID] = true
				if len(r.parked) == r.parkedWant {
					close(r.parkedDone)
				}
			}
			return
		}
		r.wakeups++
	}
}

// fill copies the recorder's figures into run.
func (r *schedRecorder) fill(run *SchedulerRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	run.Attempts, run.UnschedulableAttempts, run.ErrorAttempts = r.attempts, r.unsched, r.errors
	run.ParkedWakeups = r.wakeups
	run.SchedulingMS = latencyOf(&r.hist)
}

// schedWriteHeapProfile writes the heap profile (allocations since the
// program started, sampled) to path.
func schedWriteHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// schedStartProfile starts a CPU profile and an execution trace into
// their paths ("" for neither) and returns the function stopping both.
func schedStartProfile(paths schedProfilePaths) (func(), error) {
	var stops []func()
	stop := func() {
		for _, f := range stops {
			f()
		}
	}
	if paths.cpu != "" {
		f, err := os.Create(paths.cpu)
		if err != nil {
			return nil, err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			return nil, err
		}
		stops = append(stops, func() { pprof.StopCPUProfile(); f.Close() })
	}
	if paths.trace != "" {
		f, err := os.Create(paths.trace)
		if err == nil {
			if err = trace.Start(f); err != nil {
				f.Close()
			}
		}
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, func() { trace.Stop(); f.Close() })
	}
	var once sync.Once
	return func() { once.Do(stop) }, nil
}
