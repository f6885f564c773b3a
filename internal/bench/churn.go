package bench

// The churn scenario (`rudder bench churn`) keeps a cluster busy the way
// a live one is: objects come and go at a steady rate while the control
// plane reacts — the scheduler binds each pod, a simulated node starts it
// and later confirms its deletion, the endpointslice controller follows
// pods and services. It measures what clients feel meanwhile: API call
// latency by verb, and how late watches deliver the changes.
//
// The schedule is fixed in advance from the seed: Rate creates a second
// for Duration, each a Service with probability ServiceFraction and
// otherwise a Pod; each object is deleted Lifetime after its create (if
// that falls within Duration). At steady state that is Rate creates and
// Rate deletes a second, Rate×Lifetime objects alive. Workers send the
// writes on time; how late they started is reported (schedule lag), so a
// client that could not keep up is visible rather than hidden in the rate.
//
// Watch latency is, per write, from just before the request is sent to
// the moment the benchmark's watch (one on pods, one on services) shows
// it: the ADDED event for a create, the first event with a
// deletionTimestamp (pods are deleted gracefully and confirmed by their
// node) or the DELETED event (services) for a delete.

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/simnode"
)

// ChurnConfig parameterises `rudder bench churn`. Zero values take the
// defaults the command documents.
type ChurnConfig struct {
	// Kubeconfig selects an existing cluster (topped up with simulated
	// nodes as density does); empty starts a fresh embedded server.
	Kubeconfig string
	// Nodes is the number of simulated nodes (1000).
	Nodes int
	// Rate is creates per second (50), as many deletes once objects reach
	// their Lifetime (10 s); Duration is how long creates go on (60 s).
	Rate     float64
	Duration time.Duration
	Lifetime time.Duration
	// ServiceFraction is the share of creates that are Services; zero
	// makes pods only (the command's default is 0.25).
	ServiceFraction float64
	// Workers send the writes (32): enough that a slow call does not delay
	// the schedule.
	Workers int
	// Drain bounds the wait after the last write for its watch events and
	// for live pods to run (30 s).
	Drain time.Duration
	// Seed fixes the schedule and every object (1).
	Seed uint64
	// RunTimeout bounds the run, bring-up included (15 min).
	RunTimeout time.Duration
	// CPUProfile, when set, profiles the churn (not the bring-up).
	CPUProfile string
}

func (c *ChurnConfig) defaults() {
	setIfZero(&c.Nodes, 1000)
	setIfZero(&c.Rate, 50)
	setIfZero(&c.Duration, 60*time.Second)
	setIfZero(&c.Lifetime, 10*time.Second)
	setIfZero(&c.Workers, 32)
	setIfZero(&c.Drain, 30*time.Second)
	setIfZero(&c.Seed, 1)
	setIfZero(&c.RunTimeout, 15*time.Minute)
}

func setIfZero[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

func (c *ChurnConfig) validate() error {
	switch {
	case c.Nodes <= 0 || c.Workers <= 0:
		return fmt.Errorf("--nodes and --workers must be positive")
	case c.Rate <= 0 || c.Duration <= 0 || c.Lifetime <= 0:
		return fmt.Errorf("--rate, --duration and --lifetime must be positive")
	case c.ServiceFraction < 0 || c.ServiceFraction > 1:
		return fmt.Errorf("--service-fraction must be within [0, 1], got %g", c.ServiceFraction)
	}
	return nil
}

const (
	churnPods     = "pods"
	churnServices = "services"
	churnCreate   = "create"
	churnDelete   = "delete"
	// churnApps is how many app labels pods and services share, so every
	// service selects some pods and the endpointslice controller works.
	churnApps = 10
)

// churnOp is one scheduled write.
type churnOp struct {
	at   time.Duration // from the start
	verb string        // churnCreate or churnDelete
	obj  int
}

// churnPlan is the run's fixed schedule: the kind of each object and the
// writes in time order.
type churnPlan struct {
	kinds []string
	ops   []churnOp
}

func newChurnPlan(cfg ChurnConfig) churnPlan {
	n := int(cfg.Rate * cfg.Duration.Seconds())
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x636875726e))
	p := churnPlan{kinds: make([]string, n)}
	for i := 0; i < n; i++ {
		p.kinds[i] = churnPods
		if rng.Float64() < cfg.ServiceFraction {
			p.kinds[i] = churnServices
		}
		at := time.Duration(float64(i) / cfg.Rate * float64(time.Second))
		p.ops = append(p.ops, churnOp{at: at, verb: churnCreate, obj: i})
		if del := at + cfg.Lifetime; del < cfg.Duration {
			p.ops = append(p.ops, churnOp{at: del, verb: churnDelete, obj: i})
		}
	}
	// Stable: at equal times a create keeps its place before a delete.
	sort.SliceStable(p.ops, func(i, j int) bool { return p.ops[i].at < p.ops[j].at })
	return p
}

func churnName(kind string, i int) string {
	if kind == churnServices {
		return podName("churn-svc", i)
	}
	return podName("churn-pod", i)
}

func churnApp(i int) string { return fmt.Sprintf("churn-%d", i%churnApps) }

// churnPod is a small pod for the simulated nodes, deleted gracefully.
func churnPod(namespace string, i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: churnName(churnPods, i), Namespace: namespace, Labels: map[string]string{labelApp: churnApp(i)}},
		Spec: corev1.PodSpec{
			NodeSelector:                 map[string]string{simnode.LabelSimulated: "true"},
			AutomountServiceAccountToken: ptr.To(false),
			Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi"),
				}},
			}},
		},
	}
}

func churnService(namespace string, i int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: churnName(churnServices, i), Namespace: namespace},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{labelApp: churnApp(i)},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// churnWatchLatency matches watch events to the writes that caused them.
type churnWatchLatency struct {
	mu   sync.Mutex
	sent map[string]time.Time // kind/verb/name → just before the request
	hist map[string]*histogram
	all  histogram
}

func newChurnWatchLatency() *churnWatchLatency {
	return &churnWatchLatency{sent: map[string]time.Time{}, hist: map[string]*histogram{}}
}

func (w *churnWatchLatency) expect(kind, verb, name string, t time.Time) {
	w.mu.Lock()
	w.sent[kind+"/"+verb+"/"+name] = t
	w.mu.Unlock()
}

// cancel drops the expectation of a write that failed.
func (w *churnWatchLatency) cancel(kind, verb, name string) {
	w.mu.Lock()
	delete(w.sent, kind+"/"+verb+"/"+name)
	w.mu.Unlock()
}

// saw records the event's delay if it is the first to show that write.
func (w *churnWatchLatency) saw(kind, verb, name string, now time.Time) {
	key := kind + "/" + verb + "/" + name
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.sent[key]
	if !ok {
		return
	}
	delete(w.sent, key)
	h := w.hist[kind+"/"+verb]
	if h == nil {
		h = &histogram{}
		w.hist[kind+"/"+verb] = h
	}
	h.record(now.Sub(t))
	w.all.record(now.Sub(t))
}

func (w *churnWatchLatency) pending() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.sent)
}

func (w *churnWatchLatency) results() map[string]Quantiles {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := map[string]Quantiles{"all": quantilesOf(&w.all)}
	for k, h := range w.hist {
		out[k] = quantilesOf(h)
	}
	return out
}

// observePod maps a pod event to the write it shows.
func (w *churnWatchLatency) observePod(ev watch.Event, now time.Time) {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		return
	}
	switch {
	case ev.Type == watch.Added:
		w.saw(churnPods, churnCreate, pod.Name, now)
	case ev.Type == watch.Deleted || pod.DeletionTimestamp != nil:
		w.saw(churnPods, churnDelete, pod.Name, now)
	}
}

func (w *churnWatchLatency) observeService(ev watch.Event, now time.Time) {
	svc, ok := ev.Object.(*corev1.Service)
	if !ok {
		return
	}
	switch ev.Type {
	case watch.Added:
		w.saw(churnServices, churnCreate, svc.Name, now)
	case watch.Deleted:
		w.saw(churnServices, churnDelete, svc.Name, now)
	}
}

// RunChurn runs the churn scenario once.
func RunChurn(parent context.Context, cfg ChurnConfig) (*ChurnResult, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(parent, cfg.RunTimeout)
	defer cancel()
	res := &ChurnResult{Scenario: "churn", Seed: cfg.Seed, TargetRate: cfg.Rate, DurationSeconds: cfg.Duration.Seconds(),
		LifetimeSeconds: cfg.Lifetime.Seconds(), ServiceFraction: cfg.ServiceFraction, NumCPU: runtime.NumCPU(),
		GoVersion: runtime.Version(), LoadStart: loadAverage(), API: []APILatency{}, Targets: []TargetResult{}, Problems: []string{}}

	recorder := newDensityRecorder()
	cl, err := densityOpen(ctx, cfg.Kubeconfig, cfg.Nodes, cfg.Seed, recorder)
	if err != nil {
		return nil, err
	}
	defer cl.close()
	res.Target, res.Kubeconfig, res.Nodes, res.NodesStarted = cl.target, cl.kubeconfig, cl.nodes, cl.started
	pool, err := newClientPool(ctx, cl.rc, 4)
	if err != nil {
		return nil, err
	}
	ns, err := pool.get(0).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "rudder-bench-churn-", Labels: map[string]string{"app.kubernetes.io/managed-by": "rudder-bench"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create the benchmark namespace: %w", err)
	}
	e := &env{pool: pool, namespace: ns.Name, pods: podFactory{seed: cfg.Seed, namespace: ns.Name}}
	if !cl.embedded() {
		defer e.deleteNamespace()
	}
	if err := e.waitAdmissible(ctx); err != nil {
		return nil, err
	}

	lat := newChurnWatchLatency()
	tracker := newDensityTracker(0)
	tracker.onEvent = lat.observePod
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel() // before the cluster closes
	watchCS := pool.get(3)
	if err := tracker.start(wctx, watchCS, ns.Name); err != nil {
		return nil, err
	}
	svcs, err := watchCS.CoreV1().Services(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var svcErr atomic.Pointer[error]
	err = densityFollow(wctx, svcs.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return watchCS.CoreV1().Services(ns.Name).Watch(ctx, o)
	}, lat.observeService, func(err error) { svcErr.Store(&err) })
	if err != nil {
		return nil, err
	}

	var usage serverUsage
	if cl.embedded() {
		usage = startServerUsage()
	}
	before, scrapeErr := densityScrapeMetrics(ctx, pool.get(0).CoreV1().RESTClient())
	if scrapeErr != nil {
		slog.Warn("bench: no server-side API latencies", "err", scrapeErr)
	}
	recorder.reset()
	stopProfile, err := densityStartProfile(cfg.CPUProfile)
	if err != nil {
		return nil, err
	}
	plan := newChurnPlan(cfg)
	slog.Info("bench: churn", "namespace", ns.Name, "nodes", cl.nodes, "writes", len(plan.ops), "rate", cfg.Rate, "duration", cfg.Duration)
	t0 := time.Now()
	exec := churnExecute(ctx, pool, ns.Name, cfg, plan, lat)
	res.Seconds = round3(time.Since(t0).Seconds())

	// Drain: every write's event seen, every live pod Running.
	drainEnd := time.Now().Add(cfg.Drain)
	var snap densitySnapshot
	for {
		snap = tracker.snapshot()
		if (lat.pending() == 0 && snap.notRunning == 0) || time.Now().After(drainEnd) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopProfile()
	if cl.embedded() {
		res.ServerCPUSeconds, res.ServerPeakRSSMiB = usage.read()
		res.ServerCPUCores = round3(*res.ServerCPUSeconds / time.Since(t0).Seconds())
	}

	res.PodsCreated, res.ServicesCreated = exec.created[churnPods], exec.created[churnServices]
	res.PodsDeleted, res.ServicesDeleted = exec.deleted[churnPods], exec.deleted[churnServices]
	res.Errors, res.FirstError = exec.errors, exec.firstError
	res.ScheduleLagMS = quantilesOf(&exec.lag)
	if res.Seconds > 0 {
		res.CreatesPerSecond = round1(float64(res.PodsCreated+res.ServicesCreated) / res.Seconds)
	}
	res.WatchMS = lat.results()
	res.WatchMissed = lat.pending()
	res.PodsRunning, res.PodsDeletedBeforeRunning, res.PodsNotRunning = snap.ran, snap.deletedEarly, snap.notRunning
	res.PodStartupMS = snap.startup
	res.Client, res.ClientP99MS = recorder.results()

	sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer scancel()
	if scrapeErr == nil {
		after, err := densityScrapeMetrics(sctx, pool.get(0).CoreV1().RESTClient())
		if err == nil {
			var cpu float64
			res.API, res.APIP99MS, cpu, err = densityAPIDelta(before, after)
			res.APISource = APISourceServer
			if cpu >= 0 && !cl.embedded() {
				res.ServerCPUSeconds = &cpu
			}
			if after.rssBytes >= 0 && !cl.embedded() {
				rss := round1(after.rssBytes / (1 << 20))
				res.ServerPeakRSSMiB = &rss
			}
		}
		scrapeErr = err
	}
	if scrapeErr != nil {
		res.APIError, res.APISource, res.APIP99MS = scrapeErr.Error(), APISourceClient, res.ClientP99MS
	}
	if snap.err != nil {
		res.Problems = append(res.Problems, "pod watch: "+snap.err.Error())
	}
	if p := svcErr.Load(); p != nil {
		res.Problems = append(res.Problems, "service watch: "+(*p).Error())
	}
	res.judge()
	res.LoadEnd = loadAverage()
	return res, parent.Err()
}

// churnExecution is what the workers did.
type churnExecution struct {
	created, deleted map[string]int
	errors           int
	firstError       string
	lag              histogram
}

// churnExecute sends the plan's writes on schedule with cfg.Workers
// workers and returns when all are sent (or ctx ends).
func churnExecute(ctx context.Context, pool *clientPool, namespace string, cfg ChurnConfig, plan churnPlan, lat *churnWatchLatency) *churnExecution {
	// created[i] is closed when object i's create returned; ok[i] says it
	// succeeded. A delete waits for its create, which a Lifetime apart
	// has long returned unless the server is far behind.
	done := make([]chan struct{}, len(plan.kinds))
	for i := range done {
		done[i] = make(chan struct{})
	}
	ok := make([]atomic.Bool, len(plan.kinds))
	work := make(chan churnOp, len(plan.ops))
	var (
		mu  sync.Mutex
		out = &churnExecution{created: map[string]int{}, deleted: map[string]int{}}
		wg  sync.WaitGroup
	)
	start := time.Now()
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func(cs kubernetes.Interface) {
			defer wg.Done()
			var lag histogram
			defer func() { mu.Lock(); out.lag.merge(&lag); mu.Unlock() }()
			for op := range work {
				kind, name := plan.kinds[op.obj], churnName(plan.kinds[op.obj], op.obj)
				if op.verb == churnDelete {
					select {
					case <-done[op.obj]:
					case <-ctx.Done():
						return
					}
					if !ok[op.obj].Load() {
						continue
					}
				}
				now := time.Now()
				lag.record(now.Sub(start.Add(op.at)))
				lat.expect(kind, op.verb, name, now)
				err := churnWrite(ctx, cs, namespace, kind, op, name)
				if op.verb == churnCreate {
					ok[op.obj].Store(err == nil)
					close(done[op.obj])
				}
				mu.Lock()
				if err != nil {
					lat.cancel(kind, op.verb, name)
					out.errors++
					if out.firstError == "" {
						out.firstError = err.Error()
					}
				} else if op.verb == churnCreate {
					out.created[kind]++
				} else {
					out.deleted[kind]++
				}
				mu.Unlock()
			}
		}(pool.get(w % 3)) // connection 3 carries the watches
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
dispatch:
	for _, op := range plan.ops {
		if d := time.Until(start.Add(op.at)); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				break dispatch
			}
		}
		work <- op
	}
	close(work)
	wg.Wait()
	return out
}

func churnWrite(ctx context.Context, cs kubernetes.Interface, namespace, kind string, op churnOp, name string) error {
	var err error
	switch {
	case kind == churnPods && op.verb == churnCreate:
		_, err = cs.CoreV1().Pods(namespace).Create(ctx, churnPod(namespace, op.obj), metav1.CreateOptions{})
	case kind == churnPods:
		err = cs.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	case op.verb == churnCreate:
		_, err = cs.CoreV1().Services(namespace).Create(ctx, churnService(namespace, op.obj), metav1.CreateOptions{})
	default:
		err = cs.CoreV1().Services(namespace).Delete(ctx, name, metav1.DeleteOptions{})
	}
	if err != nil {
		return fmt.Errorf("%s %s %s: %w", op.verb, kind, name, err)
	}
	return nil
}
