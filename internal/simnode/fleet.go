package simnode

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Fleet is a running set of simulated nodes. Create it with New, run it
// with Start; Stop ends it. Its methods are safe for concurrent use.
type Fleet struct {
	cfg    Config
	nodes  []*simNode
	byName map[string]*simNode

	// Two queues, each one goroutine's timer heap (the delaying queue)
	// feeding a fixed pool of workers: per-node cost is a heap entry, not
	// a goroutine, and a key is never worked on twice at once.
	nodeQueue workqueue.TypedRateLimitingInterface[nodeTask]
	podQueue  workqueue.TypedRateLimitingInterface[string]

	nodeInformer cache.SharedIndexInformer
	podInformer  cache.SharedIndexInformer

	podsMu sync.Mutex
	pods   map[string]*podMemory // by namespace/name

	rngMu sync.Mutex
	rng   *rand.Rand

	registered    atomic.Int64
	allRegistered chan struct{}
	ready         chan struct{}
	stats         counters

	startOnce sync.Once
	cancelMu  sync.Mutex
	cancel    context.CancelFunc
	wg        sync.WaitGroup
}

type nodeTaskKind uint8

const (
	taskRegister nodeTaskKind = iota
	taskLease
	taskStatus
)

// nodeTask is one timed job of one node. A node has at most one of each
// kind queued; the delaying queue keeps the earliest time asked for.
type nodeTask struct {
	kind nodeTaskKind
	node int32
}

// byNodeIndex indexes pods by spec.nodeName, so a node that registers or
// starts again can pick up its pods.
const byNodeIndex = "node"

// New checks cfg, fills its defaults and prepares the fleet; nothing
// touches the API until Start.
func New(cfg Config) (*Fleet, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f := &Fleet{
		cfg:           cfg,
		byName:        make(map[string]*simNode, cfg.Count),
		pods:          map[string]*podMemory{},
		rng:           rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5113)),
		allRegistered: make(chan struct{}),
		ready:         make(chan struct{}),
	}
	for i := range cfg.Count {
		n := newSimNode(&f.cfg, i)
		f.nodes = append(f.nodes, n)
		f.byName[n.name] = n
	}
	// Lease renewals retry fast at first (the lease controller starts at
	// 200 ms) but never slower than a renewal period.
	f.nodeQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[nodeTask](200*time.Millisecond, cfg.LeaseRenewInterval),
		workqueue.TypedRateLimitingQueueConfig[nodeTask]{Name: "simnode-nodes", Clock: cfg.Clock})
	// Only per-item back-off: a shared token bucket would throttle a burst
	// of thousands of pods, which is the load we are here to make.
	f.podQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](10*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "simnode-pods", Clock: cfg.Clock})

	client := cfg.Client
	f.nodeInformer = cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = LabelSimulated + "=true"
			return client.CoreV1().Nodes().List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = LabelSimulated + "=true"
			return client.CoreV1().Nodes().Watch(ctx, o)
		},
	}, &corev1.Node{}, cache.SharedIndexInformerOptions{})
	// One watch for the pods of every node: bound pods only, ours picked
	// out by name in the handlers.
	f.podInformer = cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = "spec.nodeName!="
			return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = "spec.nodeName!="
			return client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}, &corev1.Pod{}, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{byNodeIndex: podNodeName}})
	for _, inf := range []cache.SharedIndexInformer{f.nodeInformer, f.podInformer} {
		// Managed fields are most of a stored object's bytes and nothing
		// here reads them; status writes keep the server's copy.
		if err := inf.SetTransform(dropManagedFields); err != nil {
			return nil, err
		}
	}
	if _, err := f.nodeInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.observeNode(obj) },
		UpdateFunc: func(_, obj any) { f.observeNode(obj) },
		DeleteFunc: f.forgetNode,
	}); err != nil {
		return nil, err
	}
	if _, err := f.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f.observePod,
		UpdateFunc: func(_, obj any) { f.observePod(obj) },
		DeleteFunc: f.observePod,
	}); err != nil {
		return nil, err
	}
	return f, nil
}

func podNodeName(obj any) ([]string, error) {
	return []string{obj.(*corev1.Pod).Spec.NodeName}, nil
}

func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// Start registers the nodes and runs them until ctx ends or Stop is
// called. It returns at once; Ready tells when every node is registered.
func (f *Fleet) Start(ctx context.Context) error {
	err := errors.New("simnode: fleet already started")
	f.startOnce.Do(func() {
		err = nil
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		f.cancelMu.Lock()
		f.cancel = cancel
		f.cancelMu.Unlock()
		// Listen before registering: nodes advertise the port.
		if err = f.startKubeletAPI(ctx); err != nil {
			cancel()
			return
		}
		f.spawn(func() { f.nodeInformer.RunWithContext(ctx) })
		f.spawn(func() { f.podInformer.RunWithContext(ctx) })
		for range f.cfg.NodeWorkers {
			f.spawn(func() { work(ctx, f.nodeQueue, f.processNodeTask) })
		}
		for range f.cfg.PodWorkers {
			f.spawn(func() { work(ctx, f.podQueue, f.processPod) })
		}
		f.spawn(func() {
			<-ctx.Done()
			f.nodeQueue.ShutDown()
			f.podQueue.ShutDown()
		})
		f.spawn(func() {
			if !cache.WaitForCacheSync(ctx.Done(), f.nodeInformer.HasSynced, f.podInformer.HasSynced) {
				return
			}
			select {
			case <-f.allRegistered:
				f.cfg.Logger.Info("simulated nodes ready", "nodes", f.cfg.Count, "prefix", f.cfg.Prefix)
				close(f.ready)
			case <-ctx.Done():
			}
		})
		for i := range f.nodes {
			f.nodeQueue.Add(nodeTask{kind: taskRegister, node: int32(i)})
		}
	})
	return err
}

func (f *Fleet) spawn(fn func()) {
	f.wg.Add(1)
	go func() {
		defer f.wg.Done()
		fn()
	}()
}

// Stop ends the fleet and waits for its goroutines. The Nodes and Leases
// stay in the API, as a kubelet's do when it stops; a later fleet with
// the same prefix adopts them.
func (f *Fleet) Stop() {
	f.cancelMu.Lock()
	cancel := f.cancel
	f.cancelMu.Unlock()
	if cancel != nil {
		cancel()
	}
	f.wg.Wait()
}

// Run runs a fleet of cfg until ctx ends.
func Run(ctx context.Context, cfg Config) error {
	f, err := New(cfg)
	if err != nil {
		return err
	}
	if err := f.Start(ctx); err != nil {
		return err
	}
	<-ctx.Done()
	f.Stop()
	return nil
}

// Ready is closed once every node has registered (its Node and Lease are
// written) and the fleet's watches have synced.
func (f *Fleet) Ready() <-chan struct{} { return f.ready }

// NodeNames lists the fleet's nodes in index order.
func (f *Fleet) NodeNames() []string {
	out := make([]string, len(f.nodes))
	for i, n := range f.nodes {
		out[i] = n.name
	}
	return out
}

// Stats counts the fleet's API writes since Start.
type Stats struct {
	Registered    int64
	LeaseRenewals int64
	StatusPosts   int64
	PodsStarted   int64
	PodsFinished  int64 // containers exited: Succeeded, Failed or crash-looping
	PodsDeleted   int64 // deletions confirmed
	Errors        int64 // failed writes, each retried
}

type counters struct {
	leaseRenewals, statusPosts, podsStarted, podsFinished, podsDeleted, errors atomic.Int64
}

// Stats returns the counts so far.
func (f *Fleet) Stats() Stats {
	return Stats{
		Registered:    f.registered.Load(),
		LeaseRenewals: f.stats.leaseRenewals.Load(),
		StatusPosts:   f.stats.statusPosts.Load(),
		PodsStarted:   f.stats.podsStarted.Load(),
		PodsFinished:  f.stats.podsFinished.Load(),
		PodsDeleted:   f.stats.podsDeleted.Load(),
		Errors:        f.stats.errors.Load(),
	}
}

// work runs one worker: take a key, handle it, mark it done.
func work[T comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[T], handle func(context.Context, T)) {
	for {
		item, shutdown := q.Get()
		if shutdown {
			return
		}
		handle(ctx, item)
		q.Done(item)
	}
}

func (f *Fleet) processNodeTask(ctx context.Context, t nodeTask) {
	n := f.nodes[t.node]
	var err error
	var next time.Duration
	switch t.kind {
	case taskRegister:
		if err = f.register(ctx, n); err == nil {
			f.registeredNode(n)
		}
	case taskLease:
		if !n.alive() {
			return // a stopped node's renewals resume when it starts
		}
		if err = f.renewLease(ctx, n); err == nil {
			next = f.nextRenewal(n)
		}
	case taskStatus:
		if !n.alive() {
			return
		}
		if err = f.syncStatus(ctx, n); err == nil {
			next = f.jitter(f.cfg.StatusUpdateFrequency)
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		f.stats.errors.Add(1)
		f.logRetry(err, f.nodeQueue.NumRequeues(t), "node", n.name)
		f.nodeQueue.AddRateLimited(t)
		return
	}
	f.nodeQueue.Forget(t)
	if next > 0 {
		f.nodeQueue.AddAfter(t, next)
	}
}

// logRetry logs a failed write that will be retried: conflicts are
// routine, and a failure that keeps coming is logged once.
func (f *Fleet) logRetry(err error, requeues int, args ...any) {
	args = append(args, "err", err, "retries", requeues)
	if apierrors.IsConflict(err) || requeues > 0 {
		f.cfg.Logger.Debug("write failed; retrying", args...)
		return
	}
	f.cfg.Logger.Warn("write failed; retrying", args...)
}

// registeredNode starts a node's loops. Its first renewal comes at a
// random point of the renewal period, so the nodes' renewals spread evenly
// over it however fast they registered, and jitter keeps them spread.
func (f *Fleet) registeredNode(n *simNode) {
	n.mu.Lock()
	first := !n.registered
	n.registered = true
	force := n.forcePost
	n.mu.Unlock()
	if first && f.registered.Add(1) == int64(f.cfg.Count) {
		close(f.allRegistered)
	}
	i := int32(n.index)
	phase := f.randDuration(f.cfg.LeaseRenewInterval)
	n.mu.Lock()
	n.leaseDue = f.cfg.Clock.Now().Add(phase)
	n.mu.Unlock()
	f.nodeQueue.AddAfter(nodeTask{kind: taskLease, node: i}, phase)
	statusAt := f.randDuration(f.cfg.StatusUpdateFrequency)
	if force {
		statusAt = 0
	}
	f.nodeQueue.AddAfter(nodeTask{kind: taskStatus, node: i}, statusAt)
	f.enqueuePodsOf(n.name)
}

// observeNode follows the stop annotation: a node that stops drops its
// loops at their next turn; one that starts renews and posts at once.
func (f *Fleet) observeNode(obj any) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	n := f.byName[node.Name]
	if n == nil {
		return
	}
	stopped := node.Annotations[AnnotationStopped] == "true"
	n.mu.Lock()
	was := n.stopped
	n.stopped = stopped
	live := n.registered && !n.gone
	if was && !stopped {
		n.forcePost = true
		n.leaseDue = time.Time{} // renew now, and on a new phase from here
	}
	n.mu.Unlock()
	if was == stopped || !live {
		return
	}
	if stopped {
		f.cfg.Logger.Info("node stopped", "node", n.name)
		return
	}
	f.cfg.Logger.Info("node started", "node", n.name)
	f.nodeQueue.Add(nodeTask{kind: taskLease, node: int32(n.index)})
	f.nodeQueue.Add(nodeTask{kind: taskStatus, node: int32(n.index)})
	f.enqueuePodsOf(n.name)
}

func (f *Fleet) forgetNode(obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if node, ok := obj.(*corev1.Node); ok {
		if n := f.byName[node.Name]; n != nil {
			f.nodeGone(n)
		}
	}
}

func (f *Fleet) observePod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if t, isTombstone := obj.(cache.DeletedFinalStateUnknown); isTombstone {
		pod, ok = t.Obj.(*corev1.Pod)
	}
	if !ok || f.byName[pod.Spec.NodeName] == nil {
		return
	}
	key, err := cache.MetaNamespaceKeyFunc(pod)
	if err == nil {
		f.podQueue.Add(key)
	}
}

func (f *Fleet) enqueuePodsOf(node string) {
	keys, err := f.podInformer.GetIndexer().IndexKeys(byNodeIndex, node)
	if err != nil {
		return
	}
	for _, k := range keys {
		f.podQueue.Add(k)
	}
}

// nextRenewal is how long until node n's next lease renewal. It is due a
// jittered period after the last one was due, not after it ran: a moment's
// backlog (a burst of registrations, a slow write) delays some renewals
// once but does not bunch them for good, so the fleet's renewals stay
// spread evenly over the period. A node more than a period behind (it was
// stopped) starts a new phase from now.
func (f *Fleet) nextRenewal(n *simNode) time.Duration {
	now := f.cfg.Clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	due := n.leaseDue.Add(f.jitter(f.cfg.LeaseRenewInterval))
	if n.leaseDue.IsZero() || !due.After(now) {
		due = now.Add(f.jitter(f.cfg.LeaseRenewInterval))
	}
	n.leaseDue = due
	return due.Sub(now)
}

// jitter returns d made 0-4% longer, the kubelet's lease jitter.
func (f *Fleet) jitter(d time.Duration) time.Duration {
	return d + f.randDuration(d/25)
}

// randDuration is uniform in [0, d).
func (f *Fleet) randDuration(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	f.rngMu.Lock()
	defer f.rngMu.Unlock()
	return time.Duration(f.rng.Int64N(int64(d)))
}
