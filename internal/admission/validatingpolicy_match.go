package admission

import (
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Matching a write against a policy's matchConstraints or a binding's
// matchResources. The rules are pure functions of the write; the
// selectors also need the labels of the write's namespace, which the
// caller fetches once per request and only when a selector asks for it.

// vapRuleMatches reports whether one rule covers the write.
func vapRuleMatches(r *admissionregistrationv1.NamedRuleWithOperations, a *Attributes) bool {
	if !vapOperationMatches(r.Operations, a.Operation) {
		return false
	}
	if !vapContains(r.APIGroups, a.Resource.Group) || !vapContains(r.APIVersions, a.Resource.Version) {
		return false
	}
	if !vapResourceMatches(r.Resources, a.Resource.Resource, a.Subresource) {
		return false
	}
	if r.Scope != nil {
		switch *r.Scope {
		case admissionregistrationv1.ClusterScope:
			if a.Namespace != "" {
				return false
			}
		case admissionregistrationv1.NamespacedScope:
			// A Namespace itself counts as namespaced, as upstream.
			if a.Namespace == "" && !(a.Resource.Group == "" && a.Resource.Resource == "namespaces") {
				return false
			}
		}
	}
	if len(r.ResourceNames) > 0 {
		name := a.Name
		if name == "" && a.Object != nil {
			if m, err := meta.Accessor(a.Object); err == nil {
				name = m.GetName()
			}
		}
		if !vapContains(r.ResourceNames, name) {
			return false
		}
	}
	return true
}

func vapOperationMatches(ops []admissionregistrationv1.OperationType, op Operation) bool {
	for _, o := range ops {
		if o == admissionregistrationv1.OperationAll || string(o) == string(op) {
			return true
		}
	}
	return false
}

func vapContains(list []string, v string) bool {
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}

// vapResourceMatches applies upstream's resource patterns: "pods" is the
// main resource only, "pods/status" one subresource, "pods/*" the
// resource and all its subresources, "*" every main resource, "*/status"
// that subresource of every resource, "*/*" everything.
func vapResourceMatches(patterns []string, resource, sub string) bool {
	for _, p := range patterns {
		res, psub, hasSub := strings.Cut(p, "/")
		if res != "*" && res != resource {
			continue
		}
		if !hasSub {
			if sub == "" {
				return true
			}
			continue
		}
		if psub == "*" || psub == sub {
			return true
		}
	}
	return false
}

// vapLabelsOf returns an object's labels, or nil.
func vapLabelsOf(obj runtime.Object) labels.Set {
	if obj == nil {
		return nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m.GetLabels()
}

// vapMatchResources reports whether the write matches m. nsLabels returns
// the labels of the write's namespace; an error from it is returned.
// equivalents are the write's resource under its other served versions,
// which matchPolicy Equivalent also matches (the object is judged as
// written, not converted to the version the rule names).
func vapMatchResources(m *admissionregistrationv1.MatchResources, a *Attributes, nsLabels func() (labels.Set, error),
	equivalents []schema.GroupVersionResource) (bool, error) {
	if m == nil {
		return true, nil
	}
	for i := range m.ExcludeResourceRules {
		if vapRuleMatches(&m.ExcludeResourceRules[i], a) {
			return false, nil
		}
	}
	// A binding's matchResources without resourceRules narrows by
	// selectors only; the policy's rules were checked already.
	if len(m.ResourceRules) > 0 && !vapRulesMatch(m, a, equivalents) {
		return false, nil
	}
	if sel := m.ObjectSelector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
		s, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			return false, err
		}
		// Either object matching is enough: a delete has only the old one,
		// and an update removing a label must still be judged.
		if !s.Matches(vapLabelsOf(a.Object)) && (a.OldObject == nil || !s.Matches(vapLabelsOf(a.OldObject))) {
			return false, nil
		}
	}
	if sel := m.NamespaceSelector; sel != nil && (len(sel.MatchLabels) > 0 || len(sel.MatchExpressions) > 0) {
		switch {
		case a.Resource.Group == "" && a.Resource.Resource == "namespaces" && a.Subresource == "":
			// A namespace is judged by its own labels.
			obj := a.Object
			if obj == nil {
				obj = a.OldObject
			}
			ok, err := vapSelectorMatches(sel, func() (labels.Set, error) { return vapLabelsOf(obj), nil })
			if err != nil || !ok {
				return false, err
			}
		case a.Namespace == "":
			// Other cluster-scoped writes are never excluded by it.
		default:
			ok, err := vapSelectorMatches(sel, nsLabels)
			if err != nil || !ok {
				return false, err
			}
		}
	}
	return true, nil
}

func vapRulesMatch(m *admissionregistrationv1.MatchResources, a *Attributes, equivalents []schema.GroupVersionResource) bool {
	for i := range m.ResourceRules {
		if vapRuleMatches(&m.ResourceRules[i], a) {
			return true
		}
	}
	if m.MatchPolicy != nil && *m.MatchPolicy == admissionregistrationv1.Exact {
		return false
	}
	for _, gvr := range equivalents {
		eq := *a
		eq.Resource = gvr
		for i := range m.ResourceRules {
			if vapRuleMatches(&m.ResourceRules[i], &eq) {
				return true
			}
		}
	}
	return false
}

// vapSelectorMatches: nil or empty selectors match everything, without
// reading labels.
func vapSelectorMatches(sel *metav1.LabelSelector, get func() (labels.Set, error)) (bool, error) {
	if sel == nil || (len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0) {
		return true, nil
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return false, err
	}
	l, err := get()
	if err != nil {
		return false, err
	}
	return s.Matches(l), nil
}
