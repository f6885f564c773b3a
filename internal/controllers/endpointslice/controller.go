package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/serviceendpoints"
)

// Config tunes the controller; zero values take upstream's defaults.
type Config struct {
	// MaxEndpointsPerSlice (--max-endpoints-per-slice) caps the endpoints
	// of one slice: default 100, at most 1000.
	MaxEndpointsPerSlice int
	// Workers is the number of Services synced at once
	// (--concurrent-service-endpoint-syncs): default 5.
	Workers int
}

// DefaultMaxEndpointsPerSlice is upstream's --max-endpoints-per-slice
// default.
const DefaultMaxEndpointsPerSlice = 100

// sliceChangeDelay is how long a sync caused by someone else's change to
// a slice waits, so a burst of such changes costs one sync.
const sliceChangeDelay = time.Second

// Descriptor is the controller with upstream's defaults
// ("endpointslice" in --controllers).
var Descriptor = NewDescriptor(Config{})

// NewDescriptor returns the controller's descriptor with cfg.
func NewDescriptor(cfg Config) controller.Descriptor {
	if cfg.MaxEndpointsPerSlice <= 0 {
		cfg.MaxEndpointsPerSlice = DefaultMaxEndpointsPerSlice
	}
	cfg.MaxEndpointsPerSlice = min(cfg.MaxEndpointsPerSlice, 1000)
	if cfg.Workers <= 0 {
		cfg.Workers = 5
	}
	return controller.Descriptor{
		Name: "endpointslice",
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			return newController(cx, cfg)
		},
	}
}

type sliceController struct {
	client      kubernetes.Interface
	services    corelisters.ServiceLister
	pods        corelisters.PodLister
	nodes       corelisters.NodeLister
	slices      discoverylisters.EndpointSliceLister
	tracker     *sliceTracker
	triggers    *serviceendpoints.TriggerTimes
	recorder    record.EventRecorder
	log         *slog.Logger
	maxPerSlice int
	queue       *controller.Controller
}

func newController(cx *controller.Context, cfg Config) ([]controller.Runnable, error) {
	svcInf := cx.Informers.Core().V1().Services()
	podInf := cx.Informers.Core().V1().Pods()
	nodeInf := cx.Informers.Core().V1().Nodes()
	sliceInf := cx.Informers.Discovery().V1().EndpointSlices()
	c := &sliceController{
		client:      cx.Client,
		services:    svcInf.Lister(),
		pods:        podInf.Lister(),
		nodes:       nodeInf.Lister(),
		slices:      sliceInf.Lister(),
		tracker:     newSliceTracker(),
		triggers:    serviceendpoints.NewTriggerTimes(),
		recorder:    cx.Recorder("endpoint-slice-controller"),
		log:         cx.Logger("endpointslice"),
		maxPerSlice: cfg.MaxEndpointsPerSlice,
	}
	c.queue = controller.New("endpointslice", cfg.Workers, c)
	c.queue.HasSynced = []cache.InformerSynced{
		svcInf.Informer().HasSynced, podInf.Informer().HasSynced,
		nodeInf.Informer().HasSynced, sliceInf.Informer().HasSynced,
	}
	if _, err := svcInf.Informer().AddEventHandler(c.queue.Handler()); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { c.podEvent(nil, serviceendpoints.PodFromObject(obj)) },
		UpdateFunc: func(old, cur interface{}) {
			c.podEvent(serviceendpoints.PodFromObject(old), serviceendpoints.PodFromObject(cur))
		},
		DeleteFunc: func(obj interface{}) { c.podEvent(serviceendpoints.PodFromObject(obj), nil) },
	}); err != nil {
		return nil, err
	}
	if _, err := sliceInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.sliceAdded,
		UpdateFunc: c.sliceUpdated,
		DeleteFunc: c.sliceDeleted,
	}); err != nil {
		return nil, err
	}
	return []controller.Runnable{c.queue}, nil
}

func (c *sliceController) podEvent(old, cur *corev1.Pod) {
	for _, key := range serviceendpoints.ServicesForPodEvent(c.services, old, cur, c.log) {
		c.queue.EnqueueKey(key)
	}
}

func managed(s *discoveryv1.EndpointSlice) bool {
	return s.Labels[discoveryv1.LabelManagedBy] == ManagedBy
}

func (c *sliceController) enqueueServiceOf(s *discoveryv1.EndpointSlice) {
	if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
		c.queue.EnqueueAfter(serviceendpoints.ServiceKey(s.Namespace, name), sliceChangeDelay)
	}
}

func (c *sliceController) sliceAdded(obj interface{}) {
	if s, ok := obj.(*discoveryv1.EndpointSlice); ok && managed(s) && c.tracker.shouldSync(s) {
		c.enqueueServiceOf(s)
	}
}

func (c *sliceController) sliceUpdated(old, cur interface{}) {
	o, ok1 := old.(*discoveryv1.EndpointSlice)
	s, ok2 := cur.(*discoveryv1.EndpointSlice)
	if !ok1 || !ok2 {
		return
	}
	// Generation does not move with labels, so a slice handed to another
	// Service, or taken from or given to this controller, is looked at
	// here.
	if o.Labels[discoveryv1.LabelServiceName] != s.Labels[discoveryv1.LabelServiceName] {
		c.enqueueServiceOf(o)
		c.enqueueServiceOf(s)
		return
	}
	if managed(o) != managed(s) || (managed(s) && c.tracker.shouldSync(s)) {
		c.enqueueServiceOf(s)
	}
}

func (c *sliceController) sliceDeleted(obj interface{}) {
	s, ok := controller.ObjectOf[*discoveryv1.EndpointSlice](obj)
	if !ok || !managed(s) || !c.tracker.has(s) {
		return
	}
	if !c.tracker.deleted(s) {
		// Someone else deleted one of our slices: put it back.
		c.enqueueServiceOf(s)
	}
}

// errStaleCache means the informer does not show our own last writes
// yet; the sync is retried (with back-off) rather than planned from it.
var errStaleCache = errors.New("endpointslice informer cache is out of date")

// Reconcile brings the EndpointSlices of the Service named by key to
// what its pods say.
func (c *sliceController) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// The slices go with the Service through their owner reference.
		c.triggers.Forget(ns, name)
		c.tracker.forget(ns, name)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		// No endpoints (ExternalName), or endpoints someone else writes
		// (no selector, e.g. default/kubernetes).
		return controller.Result{}, nil
	}
	pods, err := c.pods.Pods(ns).List(labels.Set(svc.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		return controller.Result{}, err
	}
	existing, err := c.slices.EndpointSlices(ns).List(labels.Set{
		discoveryv1.LabelServiceName: name,
		discoveryv1.LabelManagedBy:   ManagedBy,
	}.AsSelectorPreValidated())
	if err != nil {
		return controller.Result{}, err
	}
	live := existing[:0:0]
	for _, s := range existing {
		// A slice being deleted (a finalizer holds it) is as good as gone.
		if s.DeletionTimestamp == nil {
			live = append(live, s)
		}
	}
	if c.tracker.stale(svc, live) {
		return controller.Result{}, errStaleCache
	}
	trigger := c.triggers.Compute(svc, pods)

	want, missing := desiredEndpoints(svc, pods, func(n string) *corev1.Node {
		node, err := c.nodes.Get(n)
		if err != nil {
			return nil
		}
		return node
	})
	plan := planSlices(svc, live, want, c.maxPerSlice)
	if err := c.apply(ctx, svc, plan, trigger); err != nil {
		c.recorder.Eventf(svc, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices",
			"Error updating Endpoint Slices for Service %s/%s: %v", ns, name, err)
		return controller.Result{}, err
	}
	if len(missing) > 0 {
		// Try again: the node may just not be in the cache yet.
		return controller.Result{}, fmt.Errorf("service %s: pods %v skipped: their nodes were not found", key, missing)
	}
	return controller.Result{}, nil
}

// apply makes the plan's writes: creates, then updates, then deletes,
// so endpoints moving between slices are never missing from all of them.
func (c *sliceController) apply(ctx context.Context, svc *corev1.Service, plan slicePlan, trigger time.Time) error {
	api := c.client.DiscoveryV1().EndpointSlices(svc.Namespace)
	// A Service being deleted gets no new slices: the garbage collector
	// would race to delete them.
	if svc.DeletionTimestamp == nil {
		for _, s := range plan.create {
			setTriggerTime(s, trigger)
			got, err := api.Create(ctx, s, metav1.CreateOptions{})
			if err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				return fmt.Errorf("failed to create EndpointSlice for Service %s/%s: %w", svc.Namespace, svc.Name, err)
			}
			c.tracker.wrote(got)
		}
	}
	for _, s := range plan.update {
		setTriggerTime(s, trigger)
		got, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("failed to update %s EndpointSlice for Service %s/%s: %w", s.Name, svc.Namespace, svc.Name, err)
		}
		c.tracker.wrote(got)
	}
	for _, s := range plan.delete {
		err := api.Delete(ctx, s.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &s.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("failed to delete %s EndpointSlice for Service %s/%s: %w", s.Name, svc.Namespace, svc.Name, err)
		}
		if err == nil {
			c.tracker.deleting(s)
		}
	}
	if !plan.empty() {
		c.log.Debug("endpoint slices written", "service", svc.Namespace+"/"+svc.Name,
			"created", len(plan.create), "updated", len(plan.update), "deleted", len(plan.delete))
	}
	return nil
}

// setTriggerTime sets, or clears, the last-change-trigger-time
// annotation of a slice about to be written.
func setTriggerTime(s *discoveryv1.EndpointSlice, at time.Time) {
	if at.IsZero() {
		delete(s.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Annotations[corev1.EndpointsLastChangeTriggerTime] = at.UTC().Format(time.RFC3339Nano)
}
