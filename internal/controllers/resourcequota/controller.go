package resourcequota

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/quota"
)

// Config tunes the controller; zero fields take the defaults noted.
type Config struct {
	// SyncPeriod is how often every quota is recalculated in full even if
	// no event says so (--resource-quota-sync-period, default 5 min).
	SyncPeriod time.Duration
	// Workers is how many quotas are synced at once
	// (--concurrent-resource-quota-syncs, default 5).
	Workers int
}

// Defaults, as upstream.
const (
	DefaultSyncPeriod = 5 * time.Minute
	DefaultWorkers    = 5
)

func (c *Config) defaults() {
	if c.SyncPeriod <= 0 {
		c.SyncPeriod = DefaultSyncPeriod
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
}

// Descriptor is the controller with upstream's defaults
// ("resourcequota" in --controllers).
var Descriptor = NewDescriptor(Config{})

// NewDescriptor returns the controller configured by cfg.
func NewDescriptor(cfg Config) controller.Descriptor {
	cfg.defaults()
	return controller.Descriptor{
		Name: "resourcequota",
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			c, err := newQuotaController(cx, cfg)
			if err != nil {
				return nil, err
			}
			return []controller.Runnable{c.queue}, nil
		},
	}
}

type quotaController struct {
	cfg    Config
	client kubernetes.Interface
	quotas corelisters.ResourceQuotaLister
	typed  []quota.Evaluator // pods, services, claims: always watched
	counts *countTracker
	clock  clock.PassiveClock
	log    *slog.Logger
	queue  *controller.Controller
	mem    quotaMemory
}

func newQuotaController(cx *controller.Context, cfg Config) (*quotaController, error) {
	rqInf := cx.Informers.Core().V1().ResourceQuotas()
	podInf := cx.Informers.Core().V1().Pods()
	svcInf := cx.Informers.Core().V1().Services()
	pvcInf := cx.Informers.Core().V1().PersistentVolumeClaims()
	podLister, svcLister, pvcLister := podInf.Lister(), svcInf.Lister(), pvcInf.Lister()

	c := &quotaController{
		cfg:    cfg,
		client: cx.Client,
		quotas: rqInf.Lister(),
		clock:  cx.ClockOrReal(),
		log:    cx.Logger("resourcequota"),
	}
	podEval := quota.NewPodEvaluator(func(ns string) ([]*corev1.Pod, error) { return podLister.Pods(ns).List(labels.Everything()) })
	svcEval := quota.NewServiceEvaluator(func(ns string) ([]*corev1.Service, error) {
		return svcLister.Services(ns).List(labels.Everything())
	})
	pvcEval := quota.NewPVCEvaluator(func(ns string) ([]*corev1.PersistentVolumeClaim, error) {
		return pvcLister.PersistentVolumeClaims(ns).List(labels.Everything())
	})
	c.typed = []quota.Evaluator{podEval, svcEval, pvcEval}
	c.counts = &countTracker{
		informers: cx.MetadataInformers,
		discovery: cx.Client.Discovery(),
		clock:     c.clock,
		log:       c.log,
		changed:   c.replenish,
	}
	c.queue = controller.New("resourcequota", cfg.Workers, c)

	if _, err := rqInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: c.queue.Enqueue,
		UpdateFunc: func(old, cur interface{}) {
			o, n := old.(*corev1.ResourceQuota), cur.(*corev1.ResourceQuota)
			if key, err := cache.MetaNamespaceKeyFunc(n); err == nil {
				c.mem.observe(key, o, n, c.clock.Now())
			}
			// Our own status writes come back here; only a new intent
			// (spec), or a status that lost it, needs a sync.
			if !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) || !quota.EqualLists(n.Spec.Hard, n.Status.Hard) {
				c.queue.Enqueue(cur)
			}
		},
	}); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(changeHandler(c, podEval, func(o, n *corev1.Pod) bool {
		now := c.clock.Now()
		ou, _ := quota.PodUsage(o, now)
		nu, _ := quota.PodUsage(n, now)
		// A deletion starting does not change the usage yet, but it sets
		// the time it will; the sync that sees it schedules itself then.
		return !quota.EqualLists(ou, nu) || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
			quota.PodTerminating(o) != quota.PodTerminating(n)
	})); err != nil {
		return nil, err
	}
	if _, err := svcInf.Informer().AddEventHandler(changeHandler(c, svcEval, func(o, n *corev1.Service) bool {
		return !quota.EqualLists(quota.ServiceUsage(o), quota.ServiceUsage(n))
	})); err != nil {
		return nil, err
	}
	if _, err := pvcInf.Informer().AddEventHandler(changeHandler(c, pvcEval, func(o, n *corev1.PersistentVolumeClaim) bool {
		return !quota.EqualLists(quota.PVCUsage(o), quota.PVCUsage(n)) ||
			!apiequality.Semantic.DeepEqual(o.Spec.VolumeAttributesClassName, n.Spec.VolumeAttributesClassName) ||
			!apiequality.Semantic.DeepEqual(o.Status.CurrentVolumeAttributesClassName, n.Status.CurrentVolumeAttributesClassName) ||
			!apiequality.Semantic.DeepEqual(o.Status.ModifyVolumeStatus, n.Status.ModifyVolumeStatus)
	})); err != nil {
		return nil, err
	}
	c.queue.HasSynced = []cache.InformerSynced{
		rqInf.Informer().HasSynced, podInf.Informer().HasSynced, svcInf.Informer().HasSynced, pvcInf.Informer().HasSynced,
	}
	return c, nil
}

// changeHandler requeues the quotas tracking ev's kind in an object's
// namespace when one is added or deleted, or changed in a way that
// matters (changed reports that).
func changeHandler[T metav1.Object](c *quotaController, ev quota.Evaluator, changed func(old, cur T) bool) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			if o, ok := obj.(T); ok {
				c.replenish(ev, o.GetNamespace())
			}
		},
		UpdateFunc: func(old, cur interface{}) {
			o, ok1 := old.(T)
			n, ok2 := cur.(T)
			if ok1 && ok2 && changed(o, n) {
				c.replenish(ev, n.GetNamespace())
			}
		},
		DeleteFunc: func(obj interface{}) {
			if o, ok := controller.ObjectOf[T](obj); ok {
				c.replenish(ev, o.GetNamespace())
			}
		},
	}
}

// replenish queues the quotas of namespace that limit something ev
// measures.
func (c *quotaController) replenish(ev quota.Evaluator, namespace string) {
	quotas, err := c.quotas.ResourceQuotas(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, q := range quotas {
		if len(ev.Matching(quota.Names(q.Spec.Hard))) > 0 {
			c.queue.Enqueue(q)
		}
	}
}

// Reconcile recalculates one quota's usage and writes its status if it
// changed. It asks to be run again after SyncPeriod (the full resync), or
// sooner when a terminating pod will stop counting.
func (c *quotaController) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	q, err := c.quotas.ResourceQuotas(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.mem.forget(key)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	q = c.mem.latest(key, q)
	evals := slices.Clone(c.typed)
	counts, countErr := c.counts.evaluators(ctx, quota.Names(q.Spec.Hard))
	evals = append(evals, counts...)
	now := c.clock.Now()
	used, measured, until, usageErr := quota.CalculateUsage(q, evals, now)
	// What could be measured is written even when something failed; the
	// rest keeps its old value and the sync is retried.
	st, dirty := quota.NewStatus(q, used, measured)
	hold := c.mem.holdUntil(key)
	if now.Before(hold) && holdUsage(&st, q) {
		dirty = q.Status.Hard == nil || q.Status.Used == nil || !quota.EqualLists(st.Hard, q.Status.Hard) || !quota.EqualLists(st.Used, q.Status.Used)
	} else {
		hold = time.Time{}
	}
	if dirty {
		next := q.DeepCopy()
		next.Status = st
		stored, err := c.client.CoreV1().ResourceQuotas(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		if err != nil {
			return controller.Result{}, err
		}
		c.mem.remember(key, stored)
	}
	if err := errors.Join(countErr, usageErr); err != nil {
		return controller.Result{}, err
	}
	after := c.cfg.SyncPeriod
	if !hold.IsZero() && hold.Sub(now) < after {
		after = hold.Sub(now) + 10*time.Millisecond
	}
	if !until.IsZero() {
		// A moment past the instant, so the pod is over it when we look.
		if d := until.Sub(now) + 100*time.Millisecond; d < after {
			after = d
		}
	}
	return controller.Result{RequeueAfter: after}, nil
}
