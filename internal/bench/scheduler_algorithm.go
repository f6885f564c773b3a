package bench

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/scheduler"
	"github.com/rudder-dev/rudder/internal/scheduler/framework"
	"github.com/rudder-dev/rudder/internal/scheduler/plugins"
)

// schedFakeNamespace holds the algorithm mode's pods: the fake clientset
// has no admission, so the namespace need not exist.
const schedFakeNamespace = "bench"

// schedPaceWindow bounds how far creates into the fake clientset may run
// ahead of the informer. The fake's watch is a channel of 100 events that
// panics when full, so a tight create loop must wait for the informer.
const schedPaceWindow = 32

// schedBinder replaces DefaultBinder in algorithm mode: it records the
// bind and succeeds. It does not write the bind back (see the package
// comment in scheduler.go for why that is sound here).
type schedBinder struct {
	mu    sync.Mutex
	bound map[types.UID]string
	twice int
}

var _ framework.BindPlugin = (*schedBinder)(nil)

func (b *schedBinder) Name() string { return plugins.DefaultBinderName }

func (b *schedBinder) factory(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
	return b, nil
}

func (b *schedBinder) Bind(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, node string) *framework.Status {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.bound[pod.UID]; ok {
		b.twice++
	}
	b.bound[pod.UID] = node
	return nil
}

func (b *schedBinder) nodeOf(uid types.UID) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.bound[uid]
}

// schedRunAlgorithm runs the scheduler over a fake clientset preloaded
// with the workload. The unschedulable scenario preloads only its parked
// pods, waits until each was tried once, then creates the measured pods
// while nodes churn.
func schedRunAlgorithm(ctx context.Context, cfg SchedulerConfig, p schedParams, profile schedProfilePaths) (*SchedulerRun, error) {
	w := schedBuild(p, cfg.Seed, schedFakeNamespace, true)
	objs := make([]runtime.Object, 0, len(w.nodes)+len(w.init)+len(w.parked)+len(w.measured))
	for _, n := range w.nodes {
		objs = append(objs, n)
	}
	for _, group := range [][]*corev1.Pod{w.init, w.parked} {
		for _, pod := range group {
			objs = append(objs, pod)
		}
	}
	preload := p.parked == 0
	if preload {
		for _, pod := range w.measured {
			objs = append(objs, pod)
		}
	}
	// NewSimpleClientset, not NewClientset: the latter runs server-side
	// apply's field management on every write, which costs milliseconds a
	// create and would be timed as if the scheduler paid it.
	client := fake.NewSimpleClientset(objs...) //nolint:staticcheck // see above
	var deletes atomic.Int64
	client.PrependReactor("delete", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		deletes.Add(1)
		return false, nil, nil
	})

	factory := informers.NewSharedInformerFactory(client, 0)
	rec := newSchedRecorder(p.pods, p.parked)
	binder := &schedBinder{bound: map[types.UID]string{}}
	// With events disabled the scheduler hands plugins an unbuffered
	// events.FakeRecorder, on which DefaultPreemption's "Preempted" event
	// blocks the scheduling loop forever; until that is fixed, preemption
	// runs with events on (into the fake clientset: a small extra cost).
	disableEvents := p.scenario != SchedPreemption
	sched, err := scheduler.New(ctx, scheduler.Config{
		Client: client, Informers: factory, DisableEvents: disableEvents,
		Registry:    map[string]framework.Factory{plugins.DefaultBinderName: binder.factory},
		Parallelism: cfg.Parallelism, Seed: cfg.Seed, OnAttempt: rec.onAttempt,
	})
	if err != nil {
		return nil, err
	}
	// Measured pods the scheduler's informer has delivered, for pacing:
	// the pod informer is the scheduler's own (the factory keys by type).
	var delivered atomic.Int64
	if !preload {
		_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok && pod.Labels[schedLabelRole] == schedRoleMeasured {
				delivered.Add(1)
			}
		}})
		if err != nil {
			return nil, err
		}
	}

	run := &SchedulerRun{Scenario: p.scenario, Mode: p.mode, Cluster: "fake", Seed: cfg.Seed, Nodes: p.nodes,
		InitPods: p.initPods, Parked: p.parked, Pods: p.pods, LoadStart: loadAverage()}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	// The measured phase starts with the scheduler's first cycle when
	// the measured pods are preloaded, and after parking otherwise. The
	// informers' initial lists (the fake clientset copies every object)
	// are start-up, not scheduling: they are loaded and their garbage
	// collected before the measurement starts.
	if preload {
		if err := sched.WaitForCacheSync(sctx); err != nil {
			return nil, err
		}
		goruntime.GC()
	}
	measure := startSchedMeasure()
	stopProfile := func() {}
	if preload {
		if stopProfile, err = schedStartProfile(profile); err != nil {
			return nil, err
		}
		defer stopProfile()
	}
	go func() { runErr <- sched.Run(sctx) }()

	var churn *schedChurn
	createErr := make(chan error, 1)
	if !preload {
		select {
		case <-rec.parkedDone:
		case err := <-runErr:
			return nil, fmt.Errorf("scheduler stopped while parking pods: %v", err)
		case <-ctx.Done():
			cancel()
			<-runErr
			return nil, fmt.Errorf("parking %d pods: %w", p.parked, ctx.Err())
		}
		measure = startSchedMeasure()
		if stopProfile, err = schedStartProfile(profile); err != nil {
			cancel()
			<-runErr
			return nil, err
		}
		defer stopProfile()
		churn = startSchedChurn(sctx, client, p, cfg.ChurnInterval)
		go func() {
			// Only a failure ends the wait; finishing the creates does not.
			if err := schedCreatePaced(sctx, client, w.measured, &delivered); err != nil {
				createErr <- err
			}
		}()
	}

	var waitErr error
	select {
	case <-rec.done:
	case err := <-createErr:
		waitErr = err
	case err := <-runErr:
		runErr <- err
		waitErr = fmt.Errorf("scheduler stopped early: %v", err)
	case <-ctx.Done():
		waitErr = fmt.Errorf("waiting for %d pods to be bound: %w", p.pods, ctx.Err())
	}
	measure.stop(run, false)
	stopProfile()
	if churn != nil {
		run.ChurnEvents = churn.stop()
	}
	cancel()
	if err := <-runErr; err != nil && !errors.Is(err, context.Canceled) {
		waitErr = errors.Join(waitErr, err)
	}

	rec.fill(run)
	rec.mu.Lock()
	run.Bound = rec.bound
	if !rec.firstPop.IsZero() && rec.lastBind.After(rec.firstPop) {
		run.Seconds = rec.lastBind.Sub(rec.firstPop).Seconds()
	}
	rec.mu.Unlock()
	run.Victims = int(deletes.Load())
	if binder.twice > 0 {
		run.Failures = append(run.Failures, fmt.Sprintf("%d pods bound twice", binder.twice))
	}
	if err := schedVerifyFake(ctx, client, binder, run); err != nil {
		waitErr = errors.Join(waitErr, err)
	}
	if waitErr != nil {
		run.Failures = append(run.Failures, waitErr.Error())
	}
	return run, nil
}

// schedVerifyFake checks the fake cluster's final placement: what the
// fake clientset holds, with the binder's binds applied.
func schedVerifyFake(ctx context.Context, client kubernetes.Interface, binder *schedBinder, run *SchedulerRun) error {
	ctx = context.WithoutCancel(ctx)
	pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	placed := make([]schedPlaced, 0, len(pods.Items))
	for i := range pods.Items {
		pod := &pods.Items[i]
		node := pod.Spec.NodeName
		if node == "" {
			node = binder.nodeOf(pod.UID)
		}
		placed = append(placed, schedPlaced{pod: pod, node: node})
	}
	schedRecordViolations(run, nodes.Items, placed)
	return nil
}

// schedRecordViolations runs schedVerify and records what it found.
func schedRecordViolations(run *SchedulerRun, nodes []corev1.Node, placed []schedPlaced) {
	n, msgs := schedVerify(nodes, placed)
	run.Violations = n
	if n > 0 {
		run.Failures = append(run.Failures, fmt.Sprintf("%d placement violations, e.g. %v", n, msgs))
	}
}

// schedCreatePaced creates pods in the fake clientset no more than
// schedPaceWindow ahead of the informer's deliveries.
func schedCreatePaced(ctx context.Context, client kubernetes.Interface, pods []*corev1.Pod, delivered *atomic.Int64) error {
	for i, pod := range pods {
		for int64(i)-delivered.Load() >= schedPaceWindow {
			if ctx.Err() != nil {
				return nil
			}
			time.Sleep(50 * time.Microsecond)
		}
		if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
	}
	return nil
}

// schedChurn adds a node and removes the one added before, every
// interval, until stopped. The nodes are big enough for the parked pods,
// so each one added wakes them (NodeResourcesFit's hint says it may
// help), but tainted, so neither they nor the measured pods ever land on
// a node about to vanish: the churn costs the scheduler retries, never
// placements.
type schedChurn struct {
	cancel context.CancelFunc
	done   chan struct{}
	events int
}

func startSchedChurn(ctx context.Context, client kubernetes.Interface, p schedParams, interval time.Duration) *schedChurn {
	ctx, cancel := context.WithCancel(ctx)
	c := &schedChurn{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		if interval <= 0 {
			return
		}
		t := time.NewTicker(interval)
		defer t.Stop()
		prev := ""
		for i := p.nodes; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			node := schedChurnNode(p, i)
			if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err == nil {
				c.events++
			}
			if prev != "" {
				if err := client.CoreV1().Nodes().Delete(ctx, prev, metav1.DeleteOptions{}); err == nil {
					c.events++
				}
			}
			prev = node.Name
		}
	}()
	return c
}

// stop ends the churn and returns the number of node events it made.
func (c *schedChurn) stop() int {
	c.cancel()
	<-c.done
	return c.events
}
