package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/scheduler"
	"github.com/rudder-dev/rudder/internal/server"
)

// schedRunE2E runs a workload through the API: nodes and existing pods
// are created first, then the scheduler starts and syncs, then the
// measured pods are created by cfg.Clients concurrent clients while a
// watch records each bind.
func schedRunE2E(ctx context.Context, cfg SchedulerConfig, p schedParams, profile schedProfilePaths) (*SchedulerRun, error) {
	restCfg, inProcess, stop, embedded, err := schedConnect(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer stop()
	pool, err := newClientPool(ctx, restCfg, min(cfg.Clients, 16))
	if err != nil {
		return nil, err
	}
	cs := pool.get(0)
	ns, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "rudder-bench-sched-", Labels: map[string]string{"app.kubernetes.io/managed-by": "rudder-bench"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create the benchmark namespace: %w", err)
	}
	if !embedded {
		// An embedded server's data is removed whole; a real cluster must
		// be given back as it was.
		defer schedCleanup(cs, ns.Name)
	}
	run := &SchedulerRun{Scenario: p.scenario, Mode: p.mode, Cluster: "kubeconfig", Seed: cfg.Seed, Nodes: p.nodes,
		InitPods: p.initPods, Parked: p.parked, Pods: p.pods, LoadStart: loadAverage()}
	if embedded {
		run.Cluster = "embedded"
	}
	w := schedBuild(p, cfg.Seed, ns.Name, false)
	if err := schedPrepareNamespace(ctx, pool, ns.Name, p.scenario == SchedPreemption); err != nil {
		return nil, err
	}

	// The existing cluster: nodes, and pods already bound to them.
	if n, err := schedParallel(ctx, cfg.Clients, len(w.nodes), func(worker, i int) error {
		_, err := pool.get(worker).CoreV1().Nodes().Create(ctx, w.nodes[i], metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating nodes: %d failed, first: %w", n, err)
	}
	if n, err := schedCreatePods(ctx, pool, cfg.Clients, w.init, nil); err != nil {
		return nil, fmt.Errorf("creating init pods: %d failed, first: %w", n, err)
	}

	// The scheduler, as the server would run it: protobuf, no client-side
	// rate limit, events on; in an embedded server's process, through its
	// loopback transport as its own scheduler.
	scfg := inProcess
	if scfg == nil {
		scfg = connConfig(restCfg, mediaProtobuf)
		scfg.UserAgent = "rudder-scheduler"
	}
	events := &schedEventWrites{}
	scfg.Wrap(events.wrap)
	sclient, err := kubernetes.NewForConfig(scfg)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactory(sclient, 0)
	var conf *configv1.KubeSchedulerConfiguration
	if p.schedulerName != "" {
		conf = &configv1.KubeSchedulerConfiguration{Profiles: []configv1.KubeSchedulerProfile{{SchedulerName: ptr.To(p.schedulerName)}}}
	}
	rec := newSchedRecorder(p.pods, p.parked)
	sched, err := scheduler.New(ctx, scheduler.Config{Client: sclient, Informers: factory, Configuration: conf,
		Parallelism: cfg.Parallelism, Seed: cfg.Seed, OnAttempt: rec.onAttempt})
	if err != nil {
		return nil, err
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- sched.Run(sctx) }()
	// Whatever happens below, the scheduler stops before the server does.
	defer func() {
		cancel()
		<-runErr
	}()
	if err := schedWaitSynced(ctx, factory); err != nil {
		return nil, err
	}
	if len(w.parked) > 0 {
		if n, err := schedCreatePods(ctx, pool, cfg.Clients, w.parked, nil); err != nil {
			return nil, fmt.Errorf("creating parked pods: %d failed, first: %w", n, err)
		}
		select {
		case <-rec.parkedDone:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for %d pods to be parked: %w", p.parked, ctx.Err())
		}
	}

	obs := newSchedObserver(w.measured)
	list, err := cs.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	obsDone := make(chan struct{})
	go func() {
		defer close(obsDone)
		obs.run(sctx, pool.get(1), ns.Name, list.ResourceVersion)
	}()

	var churn *schedChurn
	if p.scenario == SchedUnschedulable {
		churn = startSchedChurn(sctx, pool.get(2), p, cfg.ChurnInterval)
	}
	stopProfile, err := schedStartProfile(profile)
	if err != nil {
		return nil, err
	}
	defer stopProfile()
	measure := startSchedMeasure()
	t0 := time.Now()
	type createResult struct {
		failed int
		err    error
	}
	created := make(chan createResult, 1)
	go func() {
		n, err := schedCreatePods(sctx, pool, cfg.Clients, w.measured, obs.sent)
		created <- createResult{n, err}
	}()

	var waitErr error
	select {
	case <-obs.done:
	case <-rec.done:
		// The scheduler has bound them all: the API must show it soon, by
		// the watch or, should that stall, a re-list.
		select {
		case <-obs.done:
		case <-time.After(3 * schedWatchStall):
			obs.mu.Lock()
			waitErr = fmt.Errorf("the scheduler bound all %d pods but the API shows %d bound", p.pods, obs.count)
			obs.mu.Unlock()
		case <-ctx.Done():
			waitErr = fmt.Errorf("waiting for %d pods to be bound: %w", p.pods, ctx.Err())
		}
	case <-ctx.Done():
		waitErr = fmt.Errorf("waiting for %d pods to be bound: %w", p.pods, ctx.Err())
	}
	measure.stop(run, embedded)
	stopProfile()
	if churn != nil {
		run.ChurnEvents = churn.stop()
	}
	// The watch can see a bind before the scheduler has read the bind's
	// response; stopping now would cancel those requests and count them
	// as errors. Let the scheduler finish its own accounting first.
	// Likewise its events: they are written behind the binds, and
	// stopping the scheduler mid-write only fills the log with errors.
	if waitErr == nil {
		select {
		case <-rec.done:
		case <-time.After(30 * time.Second):
		case <-ctx.Done():
		}
		events.drain(ctx, 300*time.Millisecond, 15*time.Second)
	}
	cancel()
	<-obsDone
	if c := <-created; c.err != nil {
		run.CreateErrors = c.failed
		waitErr = errors.Join(waitErr, fmt.Errorf("first create error: %w", c.err))
	}
	rec.fill(run)
	obs.mu.Lock()
	run.Bound = obs.count
	if obs.count > 0 {
		run.Seconds = obs.last.Sub(t0).Seconds()
	}
	e2e := latencyOf(&obs.hist)
	run.E2EMS = &e2e
	run.WatchStalls, run.WatchListedBinds = obs.stalls, obs.listed
	obs.mu.Unlock()

	vctx := context.WithoutCancel(ctx)
	pods, err := cs.CoreV1().Pods(ns.Name).List(vctx, metav1.ListOptions{})
	if err != nil {
		return run, err
	}
	nodes, err := cs.CoreV1().Nodes().List(vctx, metav1.ListOptions{LabelSelector: schedLabelNode + "=true"})
	if err != nil {
		return run, err
	}
	placed := make([]schedPlaced, 0, len(pods.Items))
	initLeft := 0
	for i := range pods.Items {
		pod := &pods.Items[i]
		placed = append(placed, schedPlaced{pod: pod, node: pod.Spec.NodeName})
		if pod.Labels[schedLabelRole] == schedRoleInit {
			initLeft++
		}
	}
	run.Victims = p.initPods - initLeft
	schedRecordViolations(run, nodes.Items, placed)
	if waitErr != nil {
		run.Failures = append(run.Failures, waitErr.Error())
	}
	return run, nil
}

// schedPrepareNamespace makes the namespace admit the benchmark's pods
// with no controllers running: the ServiceAccount admission plugin wants
// the "default" account, which the serviceaccount controller would
// create, and the preemption scenario's pods name PriorityClasses.
func schedPrepareNamespace(ctx context.Context, pool *clientPool, ns string, classes bool) error {
	cs := pool.get(0)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the default ServiceAccount: %w", err)
	}
	if classes {
		for _, pc := range schedPriorityClasses() {
			if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("creating PriorityClass %s: %w", pc.Name, err)
			}
		}
	}
	// Admission reads through caches that may lag the creates above.
	e := &env{pool: pool, namespace: ns, pods: podFactory{seed: 1, namespace: ns}}
	return e.waitAdmissible(ctx)
}

// schedConnect returns the kubeconfig's cluster, or starts a fresh
// embedded server without its own scheduler and without controllers: as
// in upstream's scheduler_perf, only the API server and the scheduler
// under test run. embedded says the server is in this process; then
// inProcess is the configuration its own components use, which the
// scheduler under test gets (the benchmark's clients use rc, over HTTPS).
func schedConnect(ctx context.Context, cfg SchedulerConfig) (rc, inProcess *rest.Config, stop func(), embedded bool, err error) {
	if cfg.Kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		return rc, nil, func() {}, false, err
	}
	dir, err := os.MkdirTemp("", "rudder-bench-sched-")
	if err != nil {
		return nil, nil, nil, false, err
	}
	srv, err := server.Start(ctx, server.Config{DataDir: dir, DisableScheduler: true, Controllers: []string{"-*"}})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, false, err
	}
	stop = func() {
		srv.Stop()
		os.RemoveAll(dir)
	}
	rc, err = clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		stop()
		return nil, nil, nil, false, err
	}
	return rc, srv.ComponentConfig("rudder-scheduler"), stop, true, nil
}

// schedCleanup deletes the run's namespace, nodes and classes from a real cluster,
// on a context of its own so an interrupted run still cleans up.
func schedCleanup(cs kubernetes.Interface, ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err := cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}, metav1.ListOptions{})
	err = errors.Join(err, cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}))
	byLabel := metav1.ListOptions{LabelSelector: schedLabelNode + "=true"}
	err = errors.Join(err, cs.CoreV1().Nodes().DeleteCollection(ctx, metav1.DeleteOptions{}, byLabel))
	err = errors.Join(err, cs.SchedulingV1().PriorityClasses().DeleteCollection(ctx, metav1.DeleteOptions{}, byLabel))
	if err != nil {
		schedLogf("cleaning up namespace %s and the benchmark's nodes: %v", ns, err)
	}
}

// schedWaitSynced waits until the scheduler has listed pods and nodes
// (and every other informer it started), so measured pods meet a
// scheduler that knows the cluster. The factory's own wait only covers
// informers already started, so first wait for the scheduler to start them.
func schedWaitSynced(ctx context.Context, f informers.SharedInformerFactory) error {
	pods, nodes := f.Core().V1().Pods().Informer(), f.Core().V1().Nodes().Informer()
	for !pods.HasSynced() || !nodes.HasSynced() {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the scheduler's informers: %w", ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("the scheduler's informer for %v did not sync", typ)
		}
	}
	return nil
}

// schedEventWrites counts the scheduler's event writes in flight, to
// tell when its event backlog has drained.
type schedEventWrites struct {
	inflight atomic.Int64
	last     atomic.Int64 // Unix ns of the last write's end
}

func (e *schedEventWrites) wrap(rt http.RoundTripper) http.RoundTripper {
	return schedRoundTripper(func(req *http.Request) (*http.Response, error) {
		if !strings.HasSuffix(req.URL.Path, "/events") && !strings.Contains(req.URL.Path, "/events/") {
			return rt.RoundTrip(req)
		}
		e.inflight.Add(1)
		defer func() {
			e.last.Store(time.Now().UnixNano())
			e.inflight.Add(-1)
		}()
		return rt.RoundTrip(req)
	})
}

// drain waits until no event write has been in flight for quiet, at most
// for limit.
func (e *schedEventWrites) drain(ctx context.Context, quiet, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if e.inflight.Load() == 0 && time.Since(time.Unix(0, e.last.Load())) >= quiet {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

type schedRoundTripper func(*http.Request) (*http.Response, error)

func (f schedRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// schedParallel runs fn(worker, i) for i in [0, n) on workers goroutines
// and returns the number of errors and the first.
func schedParallel(ctx context.Context, workers, n int, fn func(worker, i int) error) (int, error) {
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	failed := 0
	var first error
	for w := range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := fn(w, i); err != nil {
					mu.Lock()
					failed++
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if first == nil && ctx.Err() != nil && int(next.Load()) < n {
		first = ctx.Err()
	}
	return failed, first
}

// schedCreatePods creates pods on the pool's connections; sent, when
// given, receives each pod's send time (Unix ns) just before its request.
func schedCreatePods(ctx context.Context, pool *clientPool, workers int, pods []*corev1.Pod, sent []atomic.Int64) (int, error) {
	return schedParallel(ctx, workers, len(pods), func(worker, i int) error {
		if sent != nil {
			sent[i].Store(time.Now().UnixNano())
		}
		_, err := pool.get(worker).CoreV1().Pods(pods[i].Namespace).Create(ctx, pods[i], metav1.CreateOptions{})
		return err
	})
}

// schedObserver follows the measured pods by a watch and records when
// each is first seen bound.
type schedObserver struct {
	index map[string]int
	sent  []atomic.Int64
	done  chan struct{}

	mu    sync.Mutex
	seen  []bool
	count int
	last  time.Time
	hist  histogram
	// stalls are re-lists after a silent watch; listed the binds that
	// only a re-list found.
	stalls, listed int
}

func newSchedObserver(pods []*corev1.Pod) *schedObserver {
	o := &schedObserver{index: make(map[string]int, len(pods)), sent: make([]atomic.Int64, len(pods)),
		seen: make([]bool, len(pods)), done: make(chan struct{})}
	for i, pod := range pods {
		o.index[pod.Name] = i
	}
	if len(pods) == 0 {
		close(o.done)
	}
	return o
}

// saw records pod's bind if it is a measured pod newly seen bound, and
// reports whether it was.
func (o *schedObserver) saw(pod *corev1.Pod, now time.Time) bool {
	i, ok := o.index[pod.Name]
	if !ok || pod.Spec.NodeName == "" {
		return false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen[i] {
		return false
	}
	o.seen[i] = true
	o.count++
	o.last = now
	if s := o.sent[i].Load(); s > 0 {
		o.hist.record(now.Sub(time.Unix(0, s)))
	}
	if o.count == len(o.seen) {
		close(o.done)
	}
	return true
}

// run watches the namespace from rv until ctx ends, resuming where it
// left off when the watch closes, and re-listing when it cannot resume.
// A watch silent for schedWatchStall while binds are still awaited is
// also re-listed: binds found that way are counted (a healthy server's
// watch never needs it) rather than waited for until the run times out.
func (o *schedObserver) run(ctx context.Context, cs kubernetes.Interface, ns, rv string) {
	relist := func() {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return
		}
		now := time.Now()
		for i := range list.Items {
			if o.saw(&list.Items[i], now) {
				o.mu.Lock()
				o.listed++
				o.mu.Unlock()
			}
		}
		rv = list.ResourceVersion
	}
	for ctx.Err() == nil {
		wi, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			relist()
			continue
		}
		if o.follow(ctx, wi, &rv) {
			relist()
		}
	}
}

// schedWatchStall is how long the bind watch may stay silent before the
// observer re-lists.
const schedWatchStall = 5 * time.Second

// follow reads one watch until it closes, fails or stalls; it reports
// whether the caller should re-list.
func (o *schedObserver) follow(ctx context.Context, wi watch.Interface, rv *string) bool {
	defer wi.Stop()
	stall := time.NewTimer(schedWatchStall)
	defer stall.Stop()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-o.done:
			return false
		case <-stall.C:
			o.mu.Lock()
			o.stalls++
			o.mu.Unlock()
			schedLogf("bind watch silent for %v with binds outstanding: re-listing", schedWatchStall)
			return true
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return false
			}
			if ev.Type == watch.Error {
				return true
			}
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			*rv = pod.ResourceVersion
			if ev.Type != watch.Bookmark {
				o.saw(pod, time.Now())
			}
			stall.Reset(schedWatchStall)
		}
	}
}
