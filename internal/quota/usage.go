package quota

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// What one object costs, for quota admission. The admission plugin charges
// a write before the object is stored; the controller later sums the
// stored objects. Both go through the same functions (PodUsage,
// ServiceUsage, PVCUsage, the scope matchers), so what admission charges
// is exactly what the next recalculation finds.

// Measure is how quota sees one kind of object. The zero Measure measures
// nothing.
type Measure struct {
	// Resource is the kind measured.
	Resource schema.GroupResource
	// Counted reports that the kind is measured only by object count
	// (count/<resource>.<group> and its legacy name): no scope applies and
	// an update never changes what it costs.
	Counted bool

	match   func([]corev1.ResourceName) []corev1.ResourceName
	inScope func(runtime.Object, corev1.ScopedResourceSelectorRequirement) (bool, error)
	usage   func(runtime.Object, time.Time) (corev1.ResourceList, error)
}

// MeasureFor returns how quota measures gr: pods, services and persistent
// volume claims by what they ask for, any other kind by count.
func MeasureFor(gr schema.GroupResource) Measure {
	switch gr {
	case corev1.Resource("pods"):
		return Measure{Resource: gr, match: podMatching, inScope: typedScope(podMatchesScope),
			usage: typedUsage(func(p *corev1.Pod, now time.Time) corev1.ResourceList {
				u, _ := PodUsage(p, now)
				return u
			})}
	case corev1.Resource("services"):
		return Measure{Resource: gr,
			match: func(in []corev1.ResourceName) []corev1.ResourceName { return intersect(in, serviceResources) },
			usage: typedUsage(func(s *corev1.Service, _ time.Time) corev1.ResourceList { return ServiceUsage(s) })}
	case corev1.Resource("persistentvolumeclaims"):
		return Measure{Resource: gr, match: pvcMatching, inScope: typedScope(pvcMatchesScope),
			usage: typedUsage(func(c *corev1.PersistentVolumeClaim, _ time.Time) corev1.ResourceList { return PVCUsage(c) })}
	}
	counted := []corev1.ResourceName{countName(gr)}
	for alias, g := range legacyCounts {
		if g == gr {
			counted = append(counted, alias)
		}
	}
	return Measure{Resource: gr, Counted: true,
		match: func(in []corev1.ResourceName) []corev1.ResourceName { return intersect(in, counted) },
		usage: func(runtime.Object, time.Time) (corev1.ResourceList, error) {
			out := make(corev1.ResourceList, len(counted))
			for _, n := range counted {
				out[n] = one()
			}
			return out, nil
		}}
}

// Matching returns the names among names that m charges.
func (m Measure) Matching(names []corev1.ResourceName) []corev1.ResourceName {
	if m.match == nil {
		return nil
	}
	return m.match(names)
}

// InScope reports whether obj falls under every requirement of scopes
// (QuotaScopes of a quota). A kind no scope knows falls under none, so a
// scoped quota never charges it; with no requirements everything is in.
func (m Measure) InScope(obj runtime.Object, scopes []corev1.ScopedResourceSelectorRequirement) (bool, error) {
	for _, s := range scopes {
		if m.inScope == nil {
			return false, nil
		}
		in, err := m.inScope(obj, s)
		if err != nil {
			return false, fmt.Errorf("scope %s: %w", s.ScopeName, err)
		}
		if !in {
			return false, nil
		}
	}
	return true, nil
}

// Usage is what obj costs at now, under every name m knows (mask it with
// a quota's names). It fails only when obj is not of m's kind.
func (m Measure) Usage(obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
	if m.usage == nil {
		return corev1.ResourceList{}, nil
	}
	return m.usage(obj, now)
}

// QuotaScopes is every requirement q puts on the objects it charges: its
// scopes (as Exists) and its scope selector's expressions.
func QuotaScopes(q *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	return quotaScopes(q)
}

func typedScope[T runtime.Object](f func(T, corev1.ScopedResourceSelectorRequirement) (bool, error)) func(runtime.Object, corev1.ScopedResourceSelectorRequirement) (bool, error) {
	return func(obj runtime.Object, req corev1.ScopedResourceSelectorRequirement) (bool, error) {
		t, ok := obj.(T)
		if !ok {
			return false, fmt.Errorf("quota: unexpected %T", obj)
		}
		return f(t, req)
	}
}

func typedUsage[T runtime.Object](f func(T, time.Time) corev1.ResourceList) func(runtime.Object, time.Time) (corev1.ResourceList, error) {
	return func(obj runtime.Object, now time.Time) (corev1.ResourceList, error) {
		t, ok := obj.(T)
		if !ok {
			return nil, fmt.Errorf("quota: unexpected %T", obj)
		}
		return f(t, now), nil
	}
}
