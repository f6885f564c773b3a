package namespace

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Config tunes the controller; zero fields take the defaults noted.
type Config struct {
	// DeletionDelay is how long after seeing a namespace's deletion the
	// controller starts emptying it (default 5 s, as upstream): time for
	// every API server to see the deletion and refuse new content, so
	// nothing is created behind the controller's back.
	DeletionDelay time.Duration
	// Workers is how many namespaces are emptied at once
	// (--concurrent-namespace-syncs, default 10).
	Workers int
}

// Defaults, as upstream.
const (
	DefaultDeletionDelay = 5 * time.Second
	DefaultWorkers       = 10
)

func (c *Config) defaults() {
	if c.DeletionDelay <= 0 {
		c.DeletionDelay = DefaultDeletionDelay
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
}

// Descriptor is the controller with upstream's defaults.
var Descriptor = NewDescriptor(Config{})

// NewDescriptor returns the controller configured by cfg.
func NewDescriptor(cfg Config) controller.Descriptor {
	cfg.defaults()
	return controller.Descriptor{
		Name: "namespace",
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			return newController(cx, cfg)
		},
	}
}

type reconciler struct {
	client   kubernetes.Interface
	metadata metadata.Interface
	lister   corelisters.NamespaceLister
	discover func() ([]*metav1.APIResourceList, error)
	clock    clock.PassiveClock
	log      *slog.Logger
}

func newController(cx *controller.Context, cfg Config) ([]controller.Runnable, error) {
	inf := cx.Informers.Core().V1().Namespaces()
	r := &reconciler{
		client:   cx.Client,
		metadata: cx.Metadata,
		lister:   inf.Lister(),
		discover: cx.Client.Discovery().ServerPreferredNamespacedResources,
		clock:    cx.ClockOrReal(),
		log:      cx.Logger("namespace"),
	}
	c := controller.New("namespace", cfg.Workers, r)
	enqueue := func(obj interface{}) {
		if ns, ok := obj.(*corev1.Namespace); ok && ns.DeletionTimestamp != nil {
			c.EnqueueAfter(ns.Name, cfg.DeletionDelay)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, n interface{}) { enqueue(n) },
	}); err != nil {
		return nil, err
	}
	c.HasSynced = []cache.InformerSynced{inf.Informer().HasSynced}
	return []controller.Runnable{c}, nil
}

// Reconcile empties and finalizes the namespace named key if it is being
// deleted. While content remains it asks to look again after half the
// estimate plus a second, as upstream.
func (r *reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	if _, err := r.lister.Get(key); apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	// Other controllers edit terminating namespaces too; act on the
	// latest state, not the cache's.
	ns, err := r.client.CoreV1().Namespaces().Get(ctx, key, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if ns.DeletionTimestamp == nil {
		return controller.Result{}, nil
	}
	ns, err = r.retryOnConflict(ctx, ns, r.markTerminating)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		// Our part is done; other spec finalizers belong to others.
		return controller.Result{}, nil
	}
	ns, estimate, err := r.deleteContent(ctx, ns)
	if err != nil {
		return controller.Result{}, fmt.Errorf("namespace %s: %w", key, err)
	}
	if estimate > 0 {
		wait := estimate/2 + time.Second
		r.log.Debug("content remains", "namespace", key, "estimate", estimate, "recheck", wait)
		return controller.Result{RequeueAfter: wait.Truncate(time.Second)}, nil
	}
	if _, err := r.retryOnConflict(ctx, ns, r.finalize); err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, fmt.Errorf("finalize namespace %s: %w", key, err)
	}
	r.log.Info("namespace emptied and finalized", "namespace", key)
	return controller.Result{}, nil
}

// markTerminating makes sure a deleted namespace shows phase Terminating
// (the API server sets it on delete; this covers one that did not).
func (r *reconciler) markTerminating(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	if ns.DeletionTimestamp == nil || ns.Status.Phase == corev1.NamespaceTerminating {
		return ns, nil
	}
	next := ns.DeepCopy()
	next.Status.Phase = corev1.NamespaceTerminating
	return r.client.CoreV1().Namespaces().UpdateStatus(ctx, next, metav1.UpdateOptions{})
}

// finalize removes our finalizer through the finalize subresource; the
// write carries the resourceVersion, so it cannot undo a concurrent
// change to the other finalizers.
func (r *reconciler) finalize(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, error) {
	next := ns.DeepCopy()
	next.Spec.Finalizers = slices.DeleteFunc(next.Spec.Finalizers, func(f corev1.FinalizerName) bool {
		return f == corev1.FinalizerKubernetes
	})
	return r.client.CoreV1().Namespaces().Finalize(ctx, next, metav1.UpdateOptions{})
}

// maxConflictRetries bounds retryOnConflict; past it the runner's
// backoff takes over.
const maxConflictRetries = 10

// retryOnConflict runs fn until it does not conflict, reading the
// namespace again between attempts. It gives up if the namespace was
// replaced by another of the same name.
func (r *reconciler) retryOnConflict(ctx context.Context, ns *corev1.Namespace,
	fn func(context.Context, *corev1.Namespace) (*corev1.Namespace, error)) (*corev1.Namespace, error) {
	for attempt := 0; ; attempt++ {
		out, err := fn(ctx, ns)
		if !apierrors.IsConflict(err) || attempt == maxConflictRetries {
			return out, err
		}
		latest, err := r.client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		if latest.UID != ns.UID {
			return nil, errNamespaceReplaced
		}
		ns = latest
	}
}
