package auth

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// RBACAuthorizer allows a request when some rule, reached through a binding
// whose subjects include the user, covers it. It never denies: a request no
// rule covers gets DecisionNoOpinion, so authorizers after it in a union
// still have their say (upstream behaves the same way).
//
// It reads the RBACSource afresh on every call and keeps no state, so it is
// safe for concurrent use and sees a role change as soon as the source does.
type RBACAuthorizer struct {
	src RBACSource
}

// NewRBACAuthorizer returns an authorizer over src.
func NewRBACAuthorizer(src RBACSource) *RBACAuthorizer {
	return &RBACAuthorizer{src: src}
}

// Authorize implements Authorizer. The reason of an allow names the binding
// ("RBAC: allowed by ClusterRoleBinding ..."), for audit logs. The reason
// of a no-opinion is empty unless some binding could not be evaluated,
// typically because its role does not exist: then it lists those errors,
// e.g. `RBAC: clusterrole.rbac.authorization.k8s.io "foo" not found`, which
// upstream shows at the end of the 403 message. Those are not returned as
// err: a dangling binding is a configuration state, not a server failure.
func (r *RBACAuthorizer) Authorize(a Attributes) (Decision, string, error) {
	var (
		allowedBy fmt.Stringer
		errs      []error
	)
	r.VisitRulesFor(a.User, a.Namespace, func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil && RuleAllows(a, rule) {
			allowedBy = source
			return false
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	if allowedBy != nil {
		return DecisionAllow, "RBAC: allowed by " + allowedBy.String(), nil
	}
	if len(errs) > 0 {
		return DecisionNoOpinion, fmt.Sprintf("RBAC: %v", utilerrors.NewAggregate(errs)), nil
	}
	return DecisionNoOpinion, "", nil
}

// RulesFor lists every rule that applies to u in namespace (cluster-wide
// rules included; namespace "" gives only those), in evaluation order. The
// error aggregates the bindings that could not be evaluated; the rules are
// still returned, so SelfSubjectRulesReview can answer with
// incomplete=true and the error text, as upstream does.
func (r *RBACAuthorizer) RulesFor(u *User, namespace string) ([]rbacv1.PolicyRule, error) {
	var (
		rules []rbacv1.PolicyRule
		errs  []error
	)
	r.VisitRulesFor(u, namespace, func(_ fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool {
		if rule != nil {
			rules = append(rules, *rule)
		}
		if err != nil {
			errs = append(errs, err)
		}
		return true
	})
	return rules, utilerrors.NewAggregate(errs)
}

// VisitRulesFor calls visit for each rule that applies to u in namespace:
// first those of ClusterRoleBindings, then those of the namespace's
// RoleBindings. A binding whose role cannot be resolved is reported as a
// call with a nil rule and the error. visit returns false to stop early.
// The rules passed are the source's own: visit must not modify them.
func (r *RBACAuthorizer) VisitRulesFor(u *User, namespace string, visit func(source fmt.Stringer, rule *rbacv1.PolicyRule, err error) bool) {
	if u == nil {
		return
	}
	for _, b := range r.src.ListClusterRoleBindings() {
		i, ok := appliesTo(u, b.Subjects, "")
		if !ok {
			continue
		}
		rules, err := r.roleRules(b.RoleRef, "")
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		src := &bindingSource{kind: "ClusterRoleBinding", name: b.Name, roleRef: b.RoleRef, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(src, &rules[j], nil) {
				return
			}
		}
	}
	if namespace == "" {
		return
	}
	for _, b := range r.src.ListRoleBindings(namespace) {
		i, ok := appliesTo(u, b.Subjects, namespace)
		if !ok {
			continue
		}
		rules, err := r.roleRules(b.RoleRef, namespace)
		if err != nil {
			if !visit(nil, nil, err) {
				return
			}
			continue
		}
		src := &bindingSource{kind: "RoleBinding", name: b.Name + "/" + b.Namespace, namespace: b.Namespace, roleRef: b.RoleRef, subject: &b.Subjects[i]}
		for j := range rules {
			if !visit(src, &rules[j], nil) {
				return
			}
		}
	}
}

// roleRules resolves a binding's roleRef. The not-found errors use the
// singular resource names upstream's listers use, because those words
// reach users in 403 messages.
func (r *RBACAuthorizer) roleRules(ref rbacv1.RoleRef, namespace string) ([]rbacv1.PolicyRule, error) {
	switch ref.Kind {
	case "Role":
		role := r.src.GetRole(namespace, ref.Name)
		if role == nil {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "role"}, ref.Name)
		}
		return role.Rules, nil
	case "ClusterRole":
		role := r.src.GetClusterRole(ref.Name)
		if role == nil {
			return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterrole"}, ref.Name)
		}
		return role.Rules, nil
	default:
		return nil, fmt.Errorf("unsupported role reference kind: %q", ref.Kind)
	}
}

// appliesTo returns the index of the first subject that matches u.
// namespace is the binding's namespace ("" for a ClusterRoleBinding): a
// ServiceAccount subject without a namespace means one in the binding's
// own namespace, and matches nothing in a ClusterRoleBinding.
func appliesTo(u *User, subjects []rbacv1.Subject, namespace string) (int, bool) {
	for i := range subjects {
		s := &subjects[i]
		switch s.Kind {
		case rbacv1.UserKind:
			if u.Name == s.Name {
				return i, true
			}
		case rbacv1.GroupKind:
			if slices.Contains(u.Groups, s.Name) {
				return i, true
			}
		case rbacv1.ServiceAccountKind:
			ns := namespace
			if s.Namespace != "" {
				ns = s.Namespace
			}
			if ns != "" && matchesServiceAccount(ns, s.Name, u.Name) {
				return i, true
			}
		}
	}
	return 0, false
}

// bindingSource names the binding and subject through which a rule
// applies; its String is what upstream puts after "RBAC: allowed by". It
// formats lazily because only the allowing rule's source is ever printed.
type bindingSource struct {
	kind      string // ClusterRoleBinding or RoleBinding
	name      string // RoleBindings: name/namespace, as upstream prints them
	namespace string
	roleRef   rbacv1.RoleRef
	subject   *rbacv1.Subject
}

func (b *bindingSource) String() string {
	subject := fmt.Sprintf("%s %q", b.subject.Kind, b.subject.Name)
	if b.subject.Kind == rbacv1.ServiceAccountKind {
		ns := b.subject.Namespace
		if ns == "" {
			ns = b.namespace
		}
		subject = fmt.Sprintf("%s %q", b.subject.Kind, b.subject.Name+"/"+ns)
	}
	return fmt.Sprintf("%s %q of %s %q to %s", b.kind, b.name, b.roleRef.Kind, b.roleRef.Name, subject)
}

// RuleAllows reports whether rule covers the request a, by upstream's
// matching: "*" matches any verb, group, resource or URL; a resource
// request names "resource/subresource", which a rule matches exactly, by
// "*", or by "*/subresource"; resourceNames, when present, must contain
// the object's name (so they never match a list or create without a name);
// a nonResourceURL ending in "*" matches every path with that prefix.
func RuleAllows(a Attributes, rule *rbacv1.PolicyRule) bool {
	if !verbMatches(rule, a.Verb) {
		return false
	}
	if !a.ResourceRequest {
		return nonResourceURLMatches(rule, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	return apiGroupMatches(rule, a.APIGroup) &&
		resourceMatches(rule, resource, a.Subresource) &&
		resourceNameMatches(rule, a.Name)
}

func verbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	for _, v := range rule.Verbs {
		if v == rbacv1.VerbAll || v == verb {
			return true
		}
	}
	return false
}

func apiGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	for _, g := range rule.APIGroups {
		if g == rbacv1.APIGroupAll || g == group {
			return true
		}
	}
	return false
}

func resourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		if r == rbacv1.ResourceAll || r == combined {
			return true
		}
		if subresource != "" && len(r) == len(subresource)+2 &&
			strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource) {
			return true
		}
	}
	return false
}

func resourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	return len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, name)
}

func nonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		if u == rbacv1.NonResourceAll || u == path {
			return true
		}
		if strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")) {
			return true
		}
	}
	return false
}
