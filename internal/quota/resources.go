package quota

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Small arithmetic on ResourceLists, the currency of quota.

// addTo adds b into a (a must not be nil).
func addTo(a, b corev1.ResourceList) {
	for name, q := range b {
		if cur, ok := a[name]; ok {
			cur.Add(q)
			a[name] = cur
		} else {
			a[name] = q.DeepCopy()
		}
	}
}

// mask keeps the entries of list whose names are in names.
func mask(list corev1.ResourceList, names []corev1.ResourceName) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, n := range names {
		if q, ok := list[n]; ok {
			out[n] = q
		}
	}
	return out
}

// EqualLists compares by value: "1000m" equals "1".
func EqualLists(a, b corev1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

// Names returns list's names, sorted.
func Names(list corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(list))
	for n := range list {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// intersect returns the names of a that are in b.
func intersect(a, b []corev1.ResourceName) []corev1.ResourceName {
	set := sets.New(b...)
	var out []corev1.ResourceName
	for _, n := range a {
		if set.Has(n) {
			out = append(out, n)
		}
	}
	return out
}

func one() resource.Quantity { return *resource.NewQuantity(1, resource.DecimalSI) }

func zero() resource.Quantity { return resource.Quantity{Format: resource.DecimalSI} }

// isNativeResource: a name without a domain, or in kubernetes.io.
func isNativeResource(name corev1.ResourceName) bool {
	s := string(name)
	return !strings.Contains(s, "/") || strings.Contains(s, corev1.ResourceDefaultNamespacePrefix)
}

// isExtendedResource: a resource a device plugin or operator advertises
// (example.com/gpu), which pods request and quota names as
// "requests.example.com/gpu".
func isExtendedResource(name corev1.ResourceName) bool {
	return !isNativeResource(name) && !strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
}

// isQuotaExtendedResource: a quota name for an extended resource. Only
// requests can be limited: extended resources are never overcommitted, so
// their limits equal their requests.
func isQuotaExtendedResource(name corev1.ResourceName) bool {
	return !isNativeResource(name) && strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
}

// scopeSelector turns a scope requirement with an operator into a label
// selector over the one label the scope stands for (e.g. PriorityClass:
// "high").
func scopeSelector(req corev1.ScopedResourceSelectorRequirement) (labels.Selector, error) {
	var op selection.Operator
	switch req.Operator {
	case corev1.ScopeSelectorOpIn:
		op = selection.In
	case corev1.ScopeSelectorOpNotIn:
		op = selection.NotIn
	case corev1.ScopeSelectorOpExists:
		op = selection.Exists
	case corev1.ScopeSelectorOpDoesNotExist:
		op = selection.DoesNotExist
	default:
		return nil, errUnknownOperator(req.Operator)
	}
	r, err := labels.NewRequirement(string(req.ScopeName), op, req.Values)
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*r), nil
}

type errUnknownOperator corev1.ScopeSelectorOperator

func (e errUnknownOperator) Error() string {
	return "unsupported scope selector operator " + string(e)
}
