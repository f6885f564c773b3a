package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/clock"
)

// LimitRanger applies a namespace's LimitRanges, as upstream's plugin of
// that name does:
//
//   - mutating, on pod create: a container (or init container) that sets
//     no limit or request for a resource gets the Container item's
//     default and defaultRequest, and the pod is annotated
//     kubernetes.io/limit-ranger with what was set;
//   - validating, on pod create and on claim create and update: every
//     Container item's min, max and maxLimitRequestRatio hold for each
//     container, every Pod item's for the pod's sums, and every
//     PersistentVolumeClaim item's min and max for the claim's storage
//     request; violations are refused with 403 and upstream's wording,
//     e.g. "maximum cpu usage per Container is 2, but limit is 4".
//
// Pod updates are not judged: containers' resources cannot change there.
//
// The LimitRanges come from the watch cache. When it has none for the
// namespace, which is the usual case but also what a cache a moment
// behind a new LimitRange shows, the answer is confirmed against storage
// and remembered for LiveTTL, so most namespaces cost one storage read
// per 30 s, not one per pod.
type LimitRanger struct {
	Objects ObjectSource
	// LiveTTL is how long a confirmed "no LimitRanges" is trusted (30 s).
	LiveTTL time.Duration
	Clock   clock.PassiveClock

	mu   sync.Mutex
	live map[string]lrLiveEntry
}

type lrLiveEntry struct {
	expiry time.Time
	items  []*corev1.LimitRange
}

const (
	lrAnnotation = "kubernetes.io/limit-ranger"
	// lrLiveMax bounds the remembered namespaces, as upstream's LRU does.
	lrLiveMax = 10000
)

func (*LimitRanger) Name() string { return "LimitRanger" }

// lrApplies reports whether a request is one the plugin judges.
func lrApplies(a *Attributes) bool {
	if a.Subresource != "" {
		return false
	}
	switch a.Resource.GroupResource() {
	case podsResource:
		return a.Operation == Create
	case pvcsResource:
		return a.Operation == Create || a.Operation == Update
	}
	return false
}

// Admit implements Mutator.
func (l *LimitRanger) Admit(ctx context.Context, a *Attributes) error {
	if !lrApplies(a) || a.Resource.GroupResource() != podsResource {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	ranges, err := l.limitRanges(ctx, a)
	if err != nil {
		return err
	}
	for _, lr := range ranges {
		lrDefaultPod(lr, pod)
	}
	return nil
}

// Validate implements Validator.
func (l *LimitRanger) Validate(ctx context.Context, a *Attributes) error {
	if !lrApplies(a) {
		return nil
	}
	// An object on its way out is let go, whatever the LimitRanges say.
	if a.OldObject != nil {
		if m, err := meta.Accessor(a.OldObject); err == nil && m.GetDeletionTimestamp() != nil {
			return nil
		}
	}
	var check func(*corev1.LimitRange) error
	switch obj := a.Object.(type) {
	case *corev1.Pod:
		check = func(lr *corev1.LimitRange) error { return lrValidatePod(lr, obj) }
	case *corev1.PersistentVolumeClaim:
		check = func(lr *corev1.LimitRange) error { return lrValidateClaim(lr, obj) }
	default:
		return nil
	}
	ranges, err := l.limitRanges(ctx, a)
	if err != nil {
		return err
	}
	for _, lr := range ranges {
		if err := check(lr); err != nil {
			return forbiddenFor(a, err)
		}
	}
	return nil
}

// limitRanges returns the namespace's LimitRanges (shared; not to be
// modified).
func (l *LimitRanger) limitRanges(ctx context.Context, a *Attributes) ([]*corev1.LimitRange, error) {
	objs, err := l.Objects.ListObjects(ctx, limitRangesGVR, a.Namespace, false)
	if err != nil {
		return nil, lrUnavailable(a)
	}
	if len(objs) > 0 {
		return lrTyped(objs), nil
	}
	now := l.now()
	l.mu.Lock()
	e, ok := l.live[a.Namespace]
	l.mu.Unlock()
	if ok && now.Before(e.expiry) {
		return e.items, nil
	}
	objs, err = l.Objects.ListObjects(ctx, limitRangesGVR, a.Namespace, true)
	if err != nil {
		return nil, forbiddenFor(a, err)
	}
	e = lrLiveEntry{expiry: now.Add(l.ttl()), items: lrTyped(objs)}
	l.mu.Lock()
	if l.live == nil || len(l.live) >= lrLiveMax {
		l.live = map[string]lrLiveEntry{}
	}
	l.live[a.Namespace] = e
	l.mu.Unlock()
	return e.items, nil
}

func lrUnavailable(a *Attributes) error {
	return forbiddenFor(a, fmt.Errorf("unable to %s %v at this time because there was an error enforcing limit ranges", a.Operation, a.Resource))
}

func lrTyped(objs []runtime.Object) []*corev1.LimitRange {
	out := make([]*corev1.LimitRange, 0, len(objs))
	for _, o := range objs {
		if lr, ok := o.(*corev1.LimitRange); ok {
			out = append(out, lr)
		}
	}
	return out
}

func (l *LimitRanger) now() time.Time {
	if l.Clock != nil {
		return l.Clock.Now()
	}
	return time.Now()
}

func (l *LimitRanger) ttl() time.Duration {
	if l.LiveTTL > 0 {
		return l.LiveTTL
	}
	return 30 * time.Second
}

// lrDefaultPod fills what the containers leave unset from the Container
// items' default (limits) and defaultRequest (requests).
func lrDefaultPod(lr *corev1.LimitRange, pod *corev1.Pod) {
	limits, requests := corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for k, v := range item.DefaultRequest {
			requests[k] = v.DeepCopy()
		}
		for k, v := range item.Default {
			limits[k] = v.DeepCopy()
		}
	}
	var notes []string
	for i := range pod.Spec.Containers {
		notes = lrDefaultContainer(&pod.Spec.Containers[i], "container", limits, requests, notes)
	}
	for i := range pod.Spec.InitContainers {
		notes = lrDefaultContainer(&pod.Spec.InitContainers[i], "init container", limits, requests, notes)
	}
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[lrAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

func lrDefaultContainer(c *corev1.Container, kind string, limits, requests corev1.ResourceList, notes []string) []string {
	if c.Resources.Limits == nil {
		c.Resources.Limits = corev1.ResourceList{}
	}
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	var setLimits, setRequests []string
	for k, v := range limits {
		if _, ok := c.Resources.Limits[k]; !ok {
			c.Resources.Limits[k] = v.DeepCopy()
			setLimits = append(setLimits, string(k))
		}
	}
	for k, v := range requests {
		if _, ok := c.Resources.Requests[k]; !ok {
			c.Resources.Requests[k] = v.DeepCopy()
			setRequests = append(setRequests, string(k))
		}
	}
	if len(setRequests) > 0 {
		sort.Strings(setRequests)
		notes = append(notes, strings.Join(setRequests, ", ")+fmt.Sprintf(" request for %s %s", kind, c.Name))
	}
	if len(setLimits) > 0 {
		sort.Strings(setLimits)
		notes = append(notes, strings.Join(setLimits, ", ")+fmt.Sprintf(" limit for %s %s", kind, c.Name))
	}
	return notes
}

// lrValidatePod checks every container against the Container items and
// the pod's totals against the Pod items. All violations are reported.
func lrValidatePod(lr *corev1.LimitRange, pod *corev1.Pod) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		switch item.Type {
		case corev1.LimitTypeContainer:
			for _, list := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
				for i := range list {
					errs = append(errs, lrCheckItem(item, list[i].Resources.Requests, list[i].Resources.Limits)...)
				}
			}
		case corev1.LimitTypePod:
			errs = append(errs, lrCheckItem(item, lrPodRequests(pod), lrPodLimits(pod))...)
		}
	}
	return utilerrors.NewAggregate(errs)
}

// lrCheckItem applies one item's min, max and ratio to a request/limit
// pair, in a fixed resource order so that messages are stable.
func lrCheckItem(item corev1.LimitRangeItem, requests, limits corev1.ResourceList) []error {
	var errs []error
	kind := string(item.Type)
	for _, k := range lrSortedNames(item.Min) {
		if err := lrMin(kind, k, item.Min[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range lrSortedNames(item.Max) {
		if err := lrMax(kind, k, item.Max[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	for _, k := range lrSortedNames(item.MaxLimitRequestRatio) {
		if err := lrRatio(kind, k, item.MaxLimitRequestRatio[k], requests, limits); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// lrValidateClaim checks a claim's storage request against the
// PersistentVolumeClaim items; claims have no defaults and no limits.
func lrValidateClaim(lr *corev1.LimitRange, pvc *corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypePersistentVolumeClaim {
			continue
		}
		kind := string(item.Type)
		for _, k := range lrSortedNames(item.Min) {
			if err := lrMin(kind, k, item.Min[k], pvc.Spec.Resources.Requests, corev1.ResourceList{}); err != nil {
				errs = append(errs, err)
			}
		}
		for _, k := range lrSortedNames(item.Max) {
			if err := lrMaxRequest(kind, k, item.Max[k], pvc.Spec.Resources.Requests); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return utilerrors.NewAggregate(errs)
}

func lrSortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for k := range l {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// lrValues puts request, limit and the enforced value on one scale:
// milli-units when none would overflow, whole units otherwise.
func lrValues(req, lim, enforced resource.Quantity) (int64, int64, int64) {
	r, l, e := req.Value(), lim.Value(), enforced.Value()
	if r <= resource.MaxMilliValue && l <= resource.MaxMilliValue && e <= resource.MaxMilliValue {
		return req.MilliValue(), lim.MilliValue(), enforced.MilliValue()
	}
	return r, l, e
}

func lrMin(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := lrValues(req, lim, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", name, kind, enforced.String())
	case r < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	case hasLim && l < e:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	}
	return nil
}

func lrMax(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, e := lrValues(req, lim, enforced)
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", name, kind, enforced.String())
	case l > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", name, kind, enforced.String(), lim.String())
	case hasReq && r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	}
	return nil
}

// lrMaxRequest is max for kinds without limits (claims).
func lrMaxRequest(kind string, name corev1.ResourceName, enforced resource.Quantity, requests corev1.ResourceList) error {
	req, hasReq := requests[name]
	r, _, e := lrValues(req, resource.Quantity{}, enforced)
	switch {
	case !hasReq:
		return fmt.Errorf("maximum %s usage per %s is %s.  No request is specified", name, kind, enforced.String())
	case r > e:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", name, kind, enforced.String(), req.String())
	}
	return nil
}

func lrRatio(kind string, name corev1.ResourceName, enforced resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[name]
	lim, hasLim := limits[name]
	r, l, _ := lrValues(req, lim, enforced)
	if !hasReq || r == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", name, kind, enforced.String())
	}
	if !hasLim || l == 0 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", name, kind, enforced.String())
	}
	ratio := float64(l) / float64(r)
	observed, max := ratio, float64(enforced.Value())
	if enforced.Value() <= resource.MaxMilliValue {
		observed, max = ratio*1000, float64(enforced.MilliValue())
	}
	if observed > max {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", name, kind, enforced.String(), ratio)
	}
	return nil
}

// lrPodSizing is how a Pod limit sees the pod as a whole, by
// component-helpers: its containers and sidecars (restartable init
// containers) together, or the largest init container run with the
// sidecars started before it, whichever is more. As upstream's
// LimitRanger, overhead and pod-level resources are not counted.
var lrPodSizing = resourcehelper.PodResourcesOptions{ExcludeOverhead: true, SkipPodLevelResources: true}

// lrPodRequests is what the pod asks for as a whole.
func lrPodRequests(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(pod, lrPodSizing)
}

// lrPodLimits is lrPodRequests for limits.
func lrPodLimits(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodLimits(pod, lrPodSizing)
}
