package quota

import (
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The pure core: a quota's status from its spec, the evaluators and the
// time. Evaluators read caches through list functions and never write.

// evaluator measures one kind of object for quota. Several workers call
// it at once.
type Evaluator interface {
	// groupResource is the kind measured: its informer's events requeue
	// the quotas that track it.
	GroupResource() schema.GroupResource
	// matching returns the names among input that this Evaluator
	// measures.
	Matching(input []corev1.ResourceName) []corev1.ResourceName
	// usage sums, over the objects of namespace that fall under every
	// requirement in scopes, their usage of resources. Every one of
	// resources is in used (zero if nothing counts). until is the
	// earliest time after now at which the sum will change without any
	// object changing (zero: never).
	Usage(namespace string, scopes []corev1.ScopedResourceSelectorRequirement, resources []corev1.ResourceName, now time.Time) (used corev1.ResourceList, until time.Time, err error)
}

// objectEvaluator is an Evaluator over a list of typed objects.
type objectEvaluator[T any] struct {
	gr    schema.GroupResource
	match func([]corev1.ResourceName) []corev1.ResourceName
	list  func(namespace string) ([]T, error)
	// inScope says whether an object falls under a scope requirement;
	// nil: under none, so a scoped quota counts none of these objects.
	inScope func(T, corev1.ScopedResourceSelectorRequirement) (bool, error)
	measure func(T, time.Time) (corev1.ResourceList, time.Time)
}

func (e *objectEvaluator[T]) GroupResource() schema.GroupResource { return e.gr }

func (e *objectEvaluator[T]) Matching(input []corev1.ResourceName) []corev1.ResourceName {
	return e.match(input)
}

func (e *objectEvaluator[T]) Usage(ns string, scopes []corev1.ScopedResourceSelectorRequirement, resources []corev1.ResourceName, now time.Time) (corev1.ResourceList, time.Time, error) {
	used := corev1.ResourceList{}
	for _, r := range resources {
		used[r] = zero()
	}
	items, err := e.list(ns)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("list %s: %w", e.gr, err)
	}
	var until time.Time
	for _, item := range items {
		ok := true
		for _, s := range scopes {
			if e.inScope == nil {
				ok = false
				break
			}
			in, err := e.inScope(item, s)
			if err != nil {
				return nil, time.Time{}, fmt.Errorf("scope %s: %w", s.ScopeName, err)
			}
			if !in {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		u, t := e.measure(item, now)
		for _, r := range resources {
			if q, ok := u[r]; ok {
				sum := used[r]
				sum.Add(q)
				used[r] = sum
			}
		}
		if !t.IsZero() && (until.IsZero() || t.Before(until)) {
			until = t
		}
	}
	return used, until, nil
}

func NewPodEvaluator(list func(string) ([]*corev1.Pod, error)) Evaluator {
	return &objectEvaluator[*corev1.Pod]{
		gr: corev1.Resource("pods"), match: podMatching, list: list,
		inScope: podMatchesScope, measure: PodUsage,
	}
}

// Services.

var serviceResources = []corev1.ResourceName{
	"count/services", corev1.ResourceServices, corev1.ResourceServicesNodePorts, corev1.ResourceServicesLoadBalancers,
}

func NewServiceEvaluator(list func(string) ([]*corev1.Service, error)) Evaluator {
	return &objectEvaluator[*corev1.Service]{
		gr:    corev1.Resource("services"),
		match: func(in []corev1.ResourceName) []corev1.ResourceName { return intersect(in, serviceResources) },
		list:  list,
		measure: func(svc *corev1.Service, _ time.Time) (corev1.ResourceList, time.Time) {
			return ServiceUsage(svc), time.Time{}
		},
	}
}

// ServiceUsage: one service; a NodePort service one node port per port;
// a LoadBalancer one load balancer and, unless it opted out of node
// ports, one per port too (if it opted out, only the ports that still
// ask for a specific node port).
func ServiceUsage(svc *corev1.Service) corev1.ResourceList {
	out := corev1.ResourceList{
		"count/services":                     one(),
		corev1.ResourceServices:              one(),
		corev1.ResourceServicesLoadBalancers: zero(),
		corev1.ResourceServicesNodePorts:     zero(),
	}
	ports := int64(len(svc.Spec.Ports))
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		out[corev1.ResourceServicesLoadBalancers] = one()
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			ports = 0
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					ports++
				}
			}
		}
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	}
	return out
}

// Persistent volume claims.

// storageClassSuffix joins a storage class to a claim resource:
// "gold.storageclass.storage.k8s.io/requests.storage".
const storageClassSuffix = ".storageclass.storage.k8s.io/"

var pvcResources = []corev1.ResourceName{corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage}

func pvcMatching(in []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range in {
		if n == "count/persistentvolumeclaims" || n == corev1.ResourcePersistentVolumeClaims || n == corev1.ResourceRequestsStorage {
			out = append(out, n)
			continue
		}
		for _, r := range pvcResources {
			if strings.HasSuffix(string(n), storageClassSuffix+string(r)) {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

func NewPVCEvaluator(list func(string) ([]*corev1.PersistentVolumeClaim, error)) Evaluator {
	return &objectEvaluator[*corev1.PersistentVolumeClaim]{
		gr: corev1.Resource("persistentvolumeclaims"), match: pvcMatching, list: list,
		inScope: pvcMatchesScope,
		measure: func(pvc *corev1.PersistentVolumeClaim, _ time.Time) (corev1.ResourceList, time.Time) {
			return PVCUsage(pvc), time.Time{}
		},
	}
}

// PVCUsage: one claim, and its storage, both also charged to its storage
// class when it names one.
func PVCUsage(pvc *corev1.PersistentVolumeClaim) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourcePersistentVolumeClaims: one(),
		"count/persistentvolumeclaims":        one(),
	}
	class := pvcClass(pvc)
	if class != "" {
		out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one()
	}
	if q, ok := pvcStorage(pvc); ok {
		out[corev1.ResourceRequestsStorage] = q
		if class != "" {
			out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = q
		}
	}
	return out
}

// pvcClass: the beta annotation wins over spec.storageClassName, as
// everywhere else in Kubernetes.
func pvcClass(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// pvcStorage is the requested size, or the allocated one while an
// expansion made it larger, rounded up to whole bytes (quota status must
// hold integers).
func pvcStorage(pvc *corev1.PersistentVolumeClaim) (resource.Quantity, bool) {
	req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return resource.Quantity{}, false
	}
	if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && alloc.Cmp(req) > 0 {
		req = alloc
	}
	req = req.DeepCopy()
	req.RoundUp(0)
	return req, true
}

// pvcMatchesScope knows one scope: VolumeAttributesClass, over every
// class the claim names (spec, current, target of a modification).
func pvcMatchesScope(pvc *corev1.PersistentVolumeClaim, req corev1.ScopedResourceSelectorRequirement) (bool, error) {
	if req.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass {
		return false, nil
	}
	classes := sets.New[string]()
	if n := pvc.Spec.VolumeAttributesClassName; n != nil && *n != "" {
		classes.Insert(*n)
	}
	if n := pvc.Status.CurrentVolumeAttributesClassName; n != nil && *n != "" {
		classes.Insert(*n)
	}
	if m := pvc.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		classes.Insert(m.TargetVolumeAttributesClassName)
	}
	if req.Operator == corev1.ScopeSelectorOpExists {
		return classes.Len() > 0, nil
	}
	sel, err := scopeSelector(req)
	if err != nil {
		return false, err
	}
	if classes.Len() == 0 {
		return sel.Matches(labels.Set{}), nil
	}
	for c := range classes {
		if sel.Matches(labels.Set{string(corev1.ResourceQuotaScopeVolumeAttributesClass): c}) {
			return true, nil
		}
	}
	return false, nil
}

// Object counts.

// countName is the quota name counting every object of gr:
// "count/configmaps", "count/deployments.apps".
func countName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName("count/" + gr.Resource)
	}
	return corev1.ResourceName("count/" + gr.Resource + "." + gr.Group)
}

// legacyCounts are the older bare names for some object counts.
var legacyCounts = map[corev1.ResourceName]schema.GroupResource{
	corev1.ResourceConfigMaps:             corev1.Resource("configmaps"),
	corev1.ResourceSecrets:                corev1.Resource("secrets"),
	corev1.ResourceReplicationControllers: corev1.Resource("replicationcontrollers"),
	corev1.ResourceQuotas:                 corev1.Resource("resourcequotas"),
}

// typedResources are measured by their own evaluators, count included.
var typedResources = sets.New(corev1.Resource("pods"), corev1.Resource("services"), corev1.Resource("persistentvolumeclaims"))

// CountTarget is the kind a quota name counts, for names the generic
// object-count Evaluator handles.
func CountTarget(name corev1.ResourceName) (schema.GroupResource, bool) {
	if gr, ok := legacyCounts[name]; ok {
		return gr, true
	}
	rest, ok := strings.CutPrefix(string(name), "count/")
	if !ok || rest == "" {
		return schema.GroupResource{}, false
	}
	res, group, _ := strings.Cut(rest, ".")
	gr := schema.GroupResource{Group: group, Resource: res}
	if typedResources.Has(gr) {
		return schema.GroupResource{}, false
	}
	return gr, true
}

// NewCountEvaluator counts the objects of gr, whatever their state, under
// countName(gr) and the legacy alias if it has one. No scope applies.
func NewCountEvaluator(gr schema.GroupResource, list func(string) ([]runtime.Object, error)) Evaluator {
	counted := []corev1.ResourceName{countName(gr)}
	for alias, g := range legacyCounts {
		if g == gr {
			counted = append(counted, alias)
		}
	}
	usage := corev1.ResourceList{}
	for _, n := range counted {
		usage[n] = one()
	}
	return &objectEvaluator[runtime.Object]{
		gr:      gr,
		match:   func(in []corev1.ResourceName) []corev1.ResourceName { return intersect(in, counted) },
		list:    list,
		measure: func(runtime.Object, time.Time) (corev1.ResourceList, time.Time) { return usage, time.Time{} },
	}
}

// Putting it together.

// quotaScopes is every requirement a quota puts on objects: its scopes
// (as "exists") and its scope selector's expressions.
func quotaScopes(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range q.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		out = append(out, q.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// CalculateUsage measures what q's hard limits name with every Evaluator
// that knows a name. It returns the usage, the names measured (an
// evaluator that failed measures none: their old values stand), and the
// earliest time the usage will change by itself.
func CalculateUsage(q *corev1.ResourceQuota, evals []Evaluator, now time.Time) (used corev1.ResourceList, measured []corev1.ResourceName, until time.Time, err error) {
	hard := Names(q.Spec.Hard)
	scopes := quotaScopes(q)
	used = corev1.ResourceList{}
	var errs []error
	for _, e := range evals {
		m := e.Matching(hard)
		if len(m) == 0 {
			continue
		}
		u, t, err := e.Usage(q.Namespace, scopes, m, now)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		addTo(used, u)
		measured = append(measured, m...)
		if !t.IsZero() && (until.IsZero() || t.Before(until)) {
			until = t
		}
	}
	return used, measured, until, errors.Join(errs...)
}

// NewStatus is the status q should have: hard as in the spec, used as
// measured, and, for hard names no Evaluator measured, the used value
// the status already had (someone else may be keeping it). dirty says
// whether it differs from q's.
func NewStatus(q *corev1.ResourceQuota, used corev1.ResourceList, measured []corev1.ResourceName) (st corev1.ResourceQuotaStatus, dirty bool) {
	all := corev1.ResourceList{}
	for n, v := range q.Status.Used {
		all[n] = v.DeepCopy()
	}
	for _, n := range measured {
		all[n] = used[n]
	}
	st = corev1.ResourceQuotaStatus{
		Hard: q.Spec.Hard.DeepCopy(),
		Used: mask(all, Names(q.Spec.Hard)),
	}
	if st.Hard == nil {
		st.Hard = corev1.ResourceList{}
	}
	dirty = q.Status.Hard == nil || q.Status.Used == nil ||
		!EqualLists(st.Hard, q.Status.Hard) || !EqualLists(st.Used, q.Status.Used)
	return st, dirty
}
