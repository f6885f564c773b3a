package admission

import (
	"context"
	"fmt"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Which webhooks a write calls. The decision is pure: it takes the hook,
// the write and the labels of the write's namespace, and returns whether
// to call the hook and as which resource. Upstream's order of checks is
// kept because it decides which error a user sees: namespaceSelector,
// objectSelector, rules (exact, then equivalent), and — once the hook is
// known to match — matchConditions.

// whExempt are the resources no webhook sees: a broken webhook must not
// be able to stop its own configuration from being fixed or removed.
var whExempt = map[schema.GroupResource]bool{
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}:   true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:     true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicies"}:       true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingadmissionpolicybindings"}: true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicies"}:         true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingadmissionpolicybindings"}:   true,
}

// whInvocation is a matched hook: the resource and kind the webhook is
// told about, which differ from the request's when the hook matched
// through an equivalent version, and the objects in that version
// (filled by the plugin just before the call).
type whInvocation struct {
	hook              *whHook
	resource          schema.GroupVersionResource
	kind              schema.GroupVersionKind
	object, oldObject runtime.Object
}

// whNamespaceLabels returns the labels of the write's namespace, or
// of the namespace being written; ok is false when the write is
// cluster-scoped and not a namespace (no namespaceSelector applies).
type whNamespaceLabels func() (labels.Set, bool, error)

// whMatch decides whether hook is called for the write a describes. An
// error is a 500 the request fails with, whatever the failurePolicy, as
// upstream fails a request whose namespace it cannot read.
func whMatch(h *whHook, a *Attributes, nsLabels whNamespaceLabels, equivalents func(schema.GroupVersionResource) []ServedResource) (*whInvocation, error) {
	if !h.nsSelector.Empty() {
		set, ok, err := nsLabels()
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if ok && !h.nsSelector.Matches(set) {
			return nil, nil
		}
	}
	if !h.objSelector.Empty() && !whObjectMatches(a.Object, h.objSelector) && !whObjectMatches(a.OldObject, h.objSelector) {
		return nil, nil
	}
	if whRulesMatch(h.rules, a, a.Resource) {
		return &whInvocation{hook: h, resource: a.Resource, kind: a.Kind}, nil
	}
	if h.matchPolicy == admissionregistrationv1.Equivalent && equivalents != nil {
		for _, eq := range equivalents(a.Resource) {
			if eq.Resource == a.Resource {
				continue
			}
			if whRulesMatch(h.rules, a, eq.Resource) {
				return &whInvocation{hook: h, resource: eq.Resource, kind: eq.Kind}, nil
			}
		}
	}
	return nil, nil
}

func whObjectMatches(obj runtime.Object, sel labels.Selector) bool {
	if obj == nil {
		return false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	return sel.Matches(labels.Set(m.GetLabels()))
}

// whRulesMatch reports whether any rule covers the write, taken as a
// write to gvr (the request's own resource, or an equivalent one).
func whRulesMatch(rules []admissionregistrationv1.RuleWithOperations, a *Attributes, gvr schema.GroupVersionResource) bool {
	for _, r := range rules {
		if whOperationMatches(r.Operations, a.Operation) &&
			whOneOf(r.APIGroups, gvr.Group) && whOneOf(r.APIVersions, gvr.Version) &&
			whResourceMatches(r.Resources, gvr.Resource, a.Subresource) && whScopeMatches(r.Scope, a) {
			return true
		}
	}
	return false
}

func whOperationMatches(ops []admissionregistrationv1.OperationType, op Operation) bool {
	for _, o := range ops {
		if o == admissionregistrationv1.OperationAll || string(o) == string(op) {
			return true
		}
	}
	return false
}

func whOneOf(list []string, v string) bool {
	for _, s := range list {
		if s == "*" || s == v {
			return true
		}
	}
	return false
}

// whResourceMatches: "pods" is the main resource only, "pods/status" one
// subresource, "pods/*" every subresource (and, as upstream's matcher
// has it, the main resource too), "*" every main resource, "*/*"
// everything, "*/status" one subresource of every resource.
func whResourceMatches(resources []string, resource, sub string) bool {
	for _, r := range resources {
		res, rsub, _ := strings.Cut(r, "/")
		if (res == "*" || res == resource) && (rsub == "*" || rsub == sub) {
			return true
		}
	}
	return false
}

// whScopeMatches: a Namespace is cluster-scoped, whatever its request's
// namespace says.
func whScopeMatches(scope *admissionregistrationv1.ScopeType, a *Attributes) bool {
	if scope == nil || *scope == admissionregistrationv1.AllScopes {
		return true
	}
	isNamespace := a.Resource.Group == "" && a.Resource.Resource == "namespaces"
	switch *scope {
	case admissionregistrationv1.NamespacedScope:
		return !isNamespace && a.Namespace != ""
	case admissionregistrationv1.ClusterScope:
		return isNamespace || a.Namespace == ""
	}
	return false
}

// whConditionsMatch evaluates a matched hook's matchConditions: any
// false means "do not call"; otherwise an error decides by the
// failurePolicy (Ignore: do not call; Fail: reject the write). Errors
// do not hide a false: a condition that is false wins over one that
// failed.
func whConditionsMatch(ctx context.Context, h *whHook, a *Attributes, act func() *CELActivation) (bool, error) {
	if len(h.conditions) == 0 {
		return true, nil
	}
	var firstErr error
	var spent int64
	for _, c := range h.conditions {
		ok, cost, err := c.prog.EvalBool(ctx, act())
		spent += cost
		if err == nil && spent > celMatchConditionsBudget {
			err = fmt.Errorf("validation failed due to running out of cost budget, no further validation rules will be run")
		}
		if err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("failed to evaluate match condition %q: %w", c.name, err)
			}
			continue
		}
		if !ok {
			return false, nil
		}
	}
	if firstErr == nil {
		return true, nil
	}
	if h.failurePolicy == admissionregistrationv1.Ignore {
		return false, nil
	}
	return false, apierrors.NewForbidden(a.Resource.GroupResource(), a.Name,
		fmt.Errorf("webhook %q: %w", h.name, firstErr))
}
