// Package endpoints is the Endpoints controller: for every Service with
// a selector it keeps a core/v1 Endpoints object of the same name listing
// the pods the selector matches, as kube-controller-manager's endpoints
// controller does. EndpointSlices (internal/controllers/endpointslice)
// replaced Endpoints for proxies; this object remains for the clients
// that still read it.
//
// # Usage
//
// The manager builds it from its descriptor ("endpoint" in
// --controllers, as upstream):
//
//	runnables, err := endpoints.Descriptor.New(ctx, cx)
//
// # The object
//
// Subsets group the pods by the ports they offer (a named targetPort is
// resolved per pod; a pod without it is left out of that port). Ready pods
// are addresses, the others notReadyAddresses; a Service with
// publishNotReadyAddresses lists every pod, terminating ones included, as
// ready. Terminating pods are otherwise left out (EndpointSlices keep them,
// with their terminating condition). Pods without an IP, and finished
// ones, never appear.
//
// The object carries the Service's labels, plus
// service.kubernetes.io/headless for a Service without a cluster IP, and
// the endpoints.kubernetes.io/last-change-trigger-time annotation
// (serviceendpoints.TriggerTimes). Past MaxAddresses (1000) addresses it is
// truncated, ready addresses first, and annotated
// endpoints.kubernetes.io/over-capacity=truncated.
//
// Services without a selector (default/kubernetes, or any whose endpoints
// a user writes) and ExternalName Services are left alone. When a Service
// is deleted its Endpoints are deleted; at start-up every Endpoints object
// is checked once, so those whose Service went while the controller was
// down go too.
//
// # Stale cache
//
// After an update the controller remembers the resourceVersion it
// replaced; a sync that still reads that version from the informer is
// refused and retried, rather than overwrite its own write with an older
// view.
package endpoints

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/serviceendpoints"
)

// Workers is the number of Services synced at once, upstream's
// --concurrent-endpoint-syncs default.
const Workers = 5

// overCapacityTruncated is the over-capacity annotation's value.
const overCapacityTruncated = "truncated"

// Descriptor is the controller. Its name is upstream's --controllers
// alias "endpoint" (singular; upstream's canonical name is
// "endpoints-controller").
var Descriptor = controller.Descriptor{Name: "endpoint", New: newController}

type epController struct {
	client    kubernetes.Interface
	services  corelisters.ServiceLister
	pods      corelisters.PodLister
	endpoints corelisters.EndpointsLister
	epSynced  cache.InformerSynced
	triggers  *serviceendpoints.TriggerTimes
	stale     staleVersions
	recorder  record.EventRecorder
	log       *slog.Logger
	queue     *controller.Controller
}

func newController(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
	svcInf := cx.Informers.Core().V1().Services()
	podInf := cx.Informers.Core().V1().Pods()
	epInf := cx.Informers.Core().V1().Endpoints()
	c := &epController{
		client:    cx.Client,
		services:  svcInf.Lister(),
		pods:      podInf.Lister(),
		endpoints: epInf.Lister(),
		epSynced:  epInf.Informer().HasSynced,
		triggers:  serviceendpoints.NewTriggerTimes(),
		stale:     staleVersions{m: map[string]string{}},
		recorder:  cx.Recorder("endpoint-controller"),
		log:       cx.Logger("endpoints"),
	}
	c.queue = controller.New("endpoint", Workers, c)
	c.queue.HasSynced = []cache.InformerSynced{svcInf.Informer().HasSynced, podInf.Informer().HasSynced, c.epSynced}
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
	// An Endpoints object deleted by someone else is put back.
	if _, err := epInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: c.queue.Enqueue}); err != nil {
		return nil, err
	}
	return []controller.Runnable{c.queue, controller.RunnableFunc(c.checkLeftovers)}, nil
}

func (c *epController) podEvent(old, cur *corev1.Pod) {
	for _, key := range serviceendpoints.ServicesForPodEvent(c.services, old, cur, c.log) {
		c.queue.EnqueueKey(key)
	}
}

// checkLeftovers queues every Endpoints object once, after the caches
// have synced: those whose Service was deleted while no controller ran
// are then deleted. Leader-election records kept in Endpoints by old
// components have no Service and must stay.
func (c *epController) checkLeftovers(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.epSynced) {
		return nil
	}
	list, err := c.endpoints.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list endpoints: %w", err)
	}
	for _, ep := range list {
		if _, ok := ep.Annotations[resourcelock.LeaderElectionRecordAnnotationKey]; ok {
			continue
		}
		c.queue.Enqueue(ep)
	}
	return nil
}

// Reconcile brings the Endpoints of the Service named by key to what its
// pods say.
func (c *epController) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	svc, err := c.services.Services(ns).Get(name)
	if apierrors.IsNotFound(err) {
		err := c.client.CoreV1().Endpoints(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return controller.Result{}, err
		}
		c.triggers.Forget(ns, name)
		c.stale.forget(key)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return controller.Result{}, nil
	}
	pods, err := c.pods.Pods(ns).List(labels.Set(svc.Spec.Selector).AsSelectorPreValidated())
	if err != nil {
		return controller.Result{}, err
	}
	// Computed on every sync, written or not, so the next one compares
	// with what this one saw.
	trigger := c.triggers.Compute(svc, pods)
	subsets, truncated := truncate(desiredSubsets(svc, pods))

	current, err := c.endpoints.Endpoints(ns).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		current = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	case err != nil:
		return controller.Result{}, err
	case c.stale.is(key, current.ResourceVersion):
		return controller.Result{}, fmt.Errorf("endpoints informer cache is out of date: resource version %s of %s already replaced", current.ResourceVersion, key)
	}
	create := current.ResourceVersion == ""
	if !create && upToDate(current, svc, subsets, truncated) {
		return controller.Result{}, nil
	}

	next := current.DeepCopy()
	next.Subsets = subsets
	next.Labels = maps.Clone(svc.Labels)
	if next.Labels == nil {
		next.Labels = map[string]string{}
	}
	if serviceendpoints.HasClusterIP(svc) {
		delete(next.Labels, corev1.IsHeadlessService)
	} else {
		next.Labels[corev1.IsHeadlessService] = ""
	}
	if next.Annotations == nil {
		next.Annotations = map[string]string{}
	}
	if trigger.IsZero() {
		delete(next.Annotations, corev1.EndpointsLastChangeTriggerTime)
	} else {
		next.Annotations[corev1.EndpointsLastChangeTriggerTime] = trigger.UTC().Format(time.RFC3339Nano)
	}
	if truncated {
		next.Annotations[corev1.EndpointsOverCapacity] = overCapacityTruncated
	} else {
		delete(next.Annotations, corev1.EndpointsOverCapacity)
	}

	api := c.client.CoreV1().Endpoints(ns)
	if create {
		_, err = api.Create(ctx, next, metav1.CreateOptions{})
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return controller.Result{}, nil // creates will keep failing; the namespace is going
		}
		if err != nil {
			c.recorder.Eventf(next, corev1.EventTypeWarning, "FailedToCreateEndpoint", "Failed to create endpoint for service %s/%s: %v", ns, name, err)
			return controller.Result{}, err
		}
		return controller.Result{}, nil
	}
	updated, err := api.Update(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		c.recorder.Eventf(next, corev1.EventTypeWarning, "FailedToUpdateEndpoint", "Failed to update endpoint %s/%s: %v", ns, name, err)
		return controller.Result{}, err
	}
	if updated.ResourceVersion != current.ResourceVersion {
		c.stale.mark(key, current.ResourceVersion)
	}
	return controller.Result{}, nil
}

// upToDate reports whether the stored Endpoints already say what a write
// would: the same (truncated) subsets, the Service's labels (the headless
// marker aside) and the over-capacity annotation exactly when truncated.
// The trigger-time annotation alone is no reason to write.
func upToDate(cur *corev1.Endpoints, svc *corev1.Service, subsets []corev1.EndpointSubset, truncated bool) bool {
	if !sameSubsets(cur.Subsets, subsets) {
		return false
	}
	have := cur.Labels
	if _, ok := have[corev1.IsHeadlessService]; ok {
		have = maps.Clone(have)
		delete(have, corev1.IsHeadlessService)
	}
	if !maps.Equal(have, svc.Labels) {
		return false
	}
	_, annotated := cur.Annotations[corev1.EndpointsOverCapacity]
	return annotated == truncated
}

// staleVersions remembers, per Endpoints key, the resourceVersion our
// last update replaced.
type staleVersions struct {
	mu sync.Mutex
	m  map[string]string
}

func (s *staleVersions) mark(key, rv string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = rv
}

func (s *staleVersions) is(key, rv string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.m[key]
	return ok && old == rv
}

func (s *staleVersions) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}
