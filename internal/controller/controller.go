package controller

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Result tells the runner what to do after a successful reconcile.
type Result struct {
	// RequeueAfter, when positive, reconciles the key again after that
	// long (e.g. a deadline that will pass, minReadySeconds that will
	// elapse). Zero: wait for the next event.
	RequeueAfter time.Duration
}

// Reconciler brings one object, named by its key ("namespace/name" or
// "name"), to its desired state. It must be level-based: read the current
// state from listers, act, and return; the same key may be reconciled
// again at any time and must converge without duplicates. An error
// requeues the key with per-key exponential backoff (5 ms doubling to
// 1000 s); success forgets the key's backoff. A key is never reconciled
// by two workers at once.
type Reconciler interface {
	Reconcile(ctx context.Context, key string) (Result, error)
}

// ReconcilerFunc adapts a function.
type ReconcilerFunc func(ctx context.Context, key string) (Result, error)

func (f ReconcilerFunc) Reconcile(ctx context.Context, key string) (Result, error) {
	return f(ctx, key)
}

// Controller is a work queue of keys drained by workers that call one
// Reconciler. Event handlers feed it with Enqueue.
type Controller struct {
	Name       string
	Workers    int
	Reconciler Reconciler
	// HasSynced are the informers that must have synced before workers
	// start (the manager adds every informer it started).
	HasSynced []cache.InformerSynced

	queue   workqueue.TypedRateLimitingInterface[string]
	metrics *metrics
}

// New returns a controller with a rate-limited queue named after it.
func New(name string, workers int, r Reconciler) *Controller {
	if workers <= 0 {
		workers = 1
	}
	installWorkqueueMetrics()
	q := workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 1000*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
	)
	return &Controller{Name: name, Workers: workers, Reconciler: r, queue: q, metrics: metricsFor(name)}
}

// Enqueue adds an object's key (namespace/name, or name for cluster
// objects). It accepts cache.DeletedFinalStateUnknown tombstones.
func (c *Controller) Enqueue(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		runtime.HandleError(fmt.Errorf("%s: %w", c.Name, err))
		return
	}
	c.queue.Add(key)
}

// EnqueueKey adds a key.
func (c *Controller) EnqueueKey(key string) { c.queue.Add(key) }

// EnqueueAfter adds a key after a delay.
func (c *Controller) EnqueueAfter(key string, d time.Duration) { c.queue.AddAfter(key, d) }

// Len is the queue depth.
func (c *Controller) Len() int { return c.queue.Len() }

// Handler returns event handlers that enqueue the object itself on add,
// update and delete.
func (c *Controller) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    c.Enqueue,
		UpdateFunc: func(_, n interface{}) { c.Enqueue(n) },
		DeleteFunc: c.Enqueue,
	}
}

// Run waits for the informers, then runs the workers until ctx ends. It
// returns once every worker has stopped.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	if !cache.WaitForNamedCacheSync(c.Name, ctx.Done(), c.HasSynced...) {
		return ctx.Err()
	}
	done := make(chan struct{}, c.Workers)
	for i := 0; i < c.Workers; i++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for c.next(ctx) {
			}
		}()
	}
	<-ctx.Done()
	c.queue.ShutDown()
	for i := 0; i < c.Workers; i++ {
		<-done
	}
	return nil
}

func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	start := time.Now()
	res, err := c.reconcile(ctx, key)
	c.metrics.observe(time.Since(start), err)
	switch {
	case err != nil:
		if ctx.Err() != nil {
			return false
		}
		slog.Debug("reconcile failed, retrying", "controller", c.Name, "key", key, "err", err)
		c.queue.AddRateLimited(key)
	case res.RequeueAfter > 0:
		c.queue.Forget(key)
		c.queue.AddAfter(key, res.RequeueAfter)
	default:
		c.queue.Forget(key)
	}
	return true
}

// reconcile turns a panic in a reconciler into an error, so one bad
// object cannot take the controller manager down.
func (c *Controller) reconcile(ctx context.Context, key string) (res Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic reconciling %q: %v", key, r)
			slog.Error("reconciler panicked", "controller", c.Name, "key", key, "panic", r)
		}
	}()
	return c.Reconciler.Reconcile(ctx, key)
}

// ObjectOf returns obj as a T, looking inside the tombstone an informer
// hands to delete handlers when it missed the final state.
func ObjectOf[T any](obj interface{}) (T, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	v, ok := obj.(T)
	return v, ok
}
