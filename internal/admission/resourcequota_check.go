package admission

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/rudder-dev/rudder/internal/quota"
)

// The pure core of quota admission: one write against a namespace's
// quotas, as they stand, gives the quotas as they would be after it, or
// the reason it is refused. No I/O, no clock: the caller passes now.

// rqIgnored are never charged, as upstream: events were never under
// quota, and reviews are not stored.
var rqIgnored = sets.New(
	schema.GroupResource{Resource: "events"},
	schema.GroupResource{Group: "events.k8s.io", Resource: "events"},
	schema.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"},
	schema.GroupResource{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"},
	schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"},
	schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"},
	schema.GroupResource{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"},
	schema.GroupResource{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"},
)

// rqHandles reports whether quota judges a, and how it measures it.
// Quota charges creates of anything namespaced; of updates only those
// that can change what an object costs: a service's type and ports, a
// claim's size, a pod's resources through its resize subresource. Other
// subresources (status, binding, scale...) and deletes are left to the
// controller's recalculation.
func rqHandles(a *Attributes) (quota.Measure, bool) {
	gr := a.Resource.GroupResource()
	if a.Namespace == "" || rqIgnored.Has(gr) || a.Object == nil {
		return quota.Measure{}, false
	}
	m := quota.MeasureFor(gr)
	switch {
	case a.Operation == Create:
		return m, a.Subresource == ""
	case a.Operation != Update:
		return m, false
	case gr == podsResource:
		return m, a.Subresource == "resize"
	case m.Counted:
		return m, false
	}
	return m, a.Subresource == ""
}

// rqCovers reports whether q charges obj: q limits something m measures
// and obj falls under all of q's scopes. Quota judges by status.hard, the
// limits the controller has acknowledged, as upstream does.
func rqCovers(q *corev1.ResourceQuota, m quota.Measure, obj runtime.Object) ([]corev1.ResourceName, bool, error) {
	restricted := m.Matching(quota.Names(q.Status.Hard))
	if len(restricted) == 0 {
		return nil, false, nil
	}
	in, err := m.InScope(obj, quota.QuotaScopes(q))
	if err != nil || !in {
		return nil, false, err
	}
	return restricted, true, nil
}

// rqCheck judges a against quotas (sorted by name; shared, never
// modified). It returns the quotas with a's usage added to status.used
// (a changed quota is a new copy, an unchanged one the same pointer) or
// an API error: 403 when a quota refuses it.
func rqCheck(quotas []*corev1.ResourceQuota, a *Attributes, m quota.Measure, now time.Time) ([]*corev1.ResourceQuota, error) {
	var covering []int
	for i, q := range quotas {
		restricted, ok, err := rqCovers(q, m, a.Object)
		if err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("error matching scopes of quota %s: %w", q.Name, err))
		}
		if !ok {
			continue
		}
		if pod, isPod := a.Object.(*corev1.Pod); isPod {
			if err := rqPodConstraints(restricted, pod); err != nil {
				return nil, forbiddenFor(a, fmt.Errorf("failed quota: %s: %w", q.Name, err))
			}
		}
		if missing := rqMissingUsage(q, restricted); len(missing) > 0 {
			return nil, forbiddenFor(a, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, rqJoinNames(missing)))
		}
		covering = append(covering, i)
	}
	if len(covering) == 0 {
		return quotas, nil
	}
	usage, err := m.Usage(a.Object, now)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if neg := rqNegative(usage); len(neg) > 0 {
		return nil, forbiddenFor(a, fmt.Errorf("quota usage is negative for resource(s): %s", rqJoinNames(neg)))
	}
	deltas := make(map[int]corev1.ResourceList, len(covering))
	for _, i := range covering {
		deltas[i] = usage
	}
	if a.Operation == Update {
		if a.OldObject == nil {
			return nil, forbiddenFor(a, fmt.Errorf("unable to get previous usage since prior version of object was not found"))
		}
		// An update is charged what it adds, and only to the quotas that
		// already charged the old object; to one it newly falls under,
		// it costs everything.
		if om, err := meta.Accessor(a.OldObject); err == nil && om.GetResourceVersion() != "" {
			prev, err := m.Usage(a.OldObject, now)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			delta := rqSubtractNonNegative(usage, prev)
			for _, i := range covering {
				_, had, err := rqCovers(quotas[i], m, a.OldObject)
				if err != nil {
					return nil, apierrors.NewInternalError(err)
				}
				if had {
					deltas[i] = delta
				}
			}
		}
	}
	out, copied := quotas, false
	for _, i := range covering {
		q := quotas[i]
		requested := rqRemoveZeros(rqMask(deltas[i], quota.Names(q.Status.Hard)))
		if len(requested) == 0 {
			continue
		}
		used := rqAdd(q.Status.Used, requested)
		var exceeded []corev1.ResourceName
		for name := range requested {
			u := used[name]
			if hard, ok := q.Status.Hard[name]; ok && u.Cmp(hard) > 0 {
				exceeded = append(exceeded, name)
			}
		}
		if len(exceeded) > 0 {
			return nil, forbiddenFor(a, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
				rqPretty(rqMask(requested, exceeded)), rqPretty(rqMask(q.Status.Used, exceeded)), rqPretty(rqMask(q.Status.Hard, exceeded))))
		}
		if !copied {
			out, copied = slices.Clone(quotas), true
		}
		// A new status on a shallow copy: the rest is shared with the
		// cache and, like it, never modified (the writer copies it).
		out[i] = &corev1.ResourceQuota{TypeMeta: q.TypeMeta, ObjectMeta: q.ObjectMeta, Spec: q.Spec,
			Status: corev1.ResourceQuotaStatus{Hard: q.Status.Hard, Used: used}}
	}
	return out, nil
}

// rqPodValidated are the names whose quota obliges every container to
// state the matching request or limit: an old mistake upstream keeps for
// compatibility and does not extend to other resources.
var rqPodValidated = sets.New[corev1.ResourceName](
	corev1.ResourceCPU, corev1.ResourceMemory,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory,
)

// rqPodConstraints: "must specify limits.cpu for: app,sidecar;
// requests.memory for: app".
func rqPodConstraints(restricted []corev1.ResourceName, pod *corev1.Pod) error {
	required := sets.New(restricted...).Intersection(rqPodValidated)
	if required.Len() == 0 {
		return nil
	}
	missing := map[corev1.ResourceName]sets.Set[string]{}
	check := func(c *corev1.Container) {
		have := sets.New[corev1.ResourceName]()
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if _, ok := c.Resources.Requests[r]; ok {
				have.Insert(r, corev1.DefaultResourceRequestsPrefix+r)
			}
			if _, ok := c.Resources.Limits[r]; ok {
				have.Insert(corev1.ResourceName("limits." + string(r)))
			}
		}
		for r := range required.Difference(have) {
			if missing[r] == nil {
				missing[r] = sets.New[string]()
			}
			missing[r].Insert(c.Name)
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	parts := make([]string, 0, len(missing))
	for _, r := range sets.List(sets.KeySet(missing)) {
		parts = append(parts, fmt.Sprintf("%s for: %s", r, strings.Join(sets.List(missing[r]), ",")))
	}
	return fmt.Errorf("must specify %s", strings.Join(parts, "; "))
}

// rqMissingUsage: the restricted names q limits but has no usage for
// yet: the controller has not measured them, so nothing can be judged.
func rqMissingUsage(q *corev1.ResourceQuota, restricted []corev1.ResourceName) []corev1.ResourceName {
	var out []corev1.ResourceName
	for _, n := range restricted {
		if _, ok := q.Status.Hard[n]; !ok {
			continue
		}
		if _, ok := q.Status.Used[n]; !ok {
			out = append(out, n)
		}
	}
	return out
}

// ResourceList arithmetic.

func rqMask(l corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if q, ok := l[n]; ok {
			out[n] = q
		}
	}
	return out
}

func rqAdd(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a)+len(b))
	for n, q := range a {
		out[n] = q.DeepCopy()
	}
	for n, q := range b {
		sum := out[n]
		sum.Add(q)
		out[n] = sum
	}
	return out
}

// rqSubtractNonNegative is a - b per name of a, never below zero: an
// update that lowers a resource frees nothing at admission; the
// controller gives it back when it recalculates.
func rqSubtractNonNegative(a, b corev1.ResourceList) corev1.ResourceList {
	out := make(corev1.ResourceList, len(a))
	for n, q := range a {
		d := q.DeepCopy()
		if p, ok := b[n]; ok {
			d.Sub(p)
		}
		if d.Sign() < 0 {
			d.Set(0)
		}
		out[n] = d
	}
	return out
}

func rqRemoveZeros(l corev1.ResourceList) corev1.ResourceList {
	for n, q := range l {
		if q.IsZero() {
			delete(l, n)
		}
	}
	return l
}

func rqNegative(l corev1.ResourceList) []corev1.ResourceName {
	var out []corev1.ResourceName
	for n, q := range l {
		if q.Sign() < 0 {
			out = append(out, n)
		}
	}
	return out
}

// rqPretty: "limits.cpu=2,pods=1", sorted by name.
func rqPretty(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for _, n := range quota.Names(l) {
		q := l[n]
		parts = append(parts, string(n)+"="+q.String())
	}
	return strings.Join(parts, ",")
}

func rqJoinNames(names []corev1.ResourceName) string {
	s := make([]string, len(names))
	for i, n := range names {
		s[i] = string(n)
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}
