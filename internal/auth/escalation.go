package auth

import (
	"fmt"
	"sort"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// EscalationCheck enforces RBAC's rule against privilege escalation: a user
// may write a role only with rules they already hold (or with the escalate
// verb on roles), and may bind a role only if they hold its rules (or have
// the bind verb on it). Without it, anyone allowed to create a RoleBinding
// could grant themselves cluster-admin.
type EscalationCheck struct {
	// Authorizer is the full chain, asked for escalate and bind.
	Authorizer Authorizer
	// RBAC lists the rules a user holds.
	RBAC *RBACAuthorizer
	// Source resolves the role a binding refers to.
	Source RBACSource
}

// CheckRole allows writing a Role (namespace set) or ClusterRole
// (namespace "") named name with rules.
func (c *EscalationCheck) CheckRole(u *User, namespace, name string, rules []rbacv1.PolicyRule) error {
	resource := "clusterroles"
	if namespace != "" {
		resource = "roles"
	}
	if c.allowed(u, "escalate", resource, namespace, name) {
		return nil
	}
	return c.confirmHeld(u, namespace, resource, name, rules)
}

// CheckBinding allows writing a RoleBinding (namespace set) or
// ClusterRoleBinding named name that refers to ref.
func (c *EscalationCheck) CheckBinding(u *User, namespace, name string, ref rbacv1.RoleRef) error {
	bindingResource := "clusterrolebindings"
	if namespace != "" {
		bindingResource = "rolebindings"
	}
	roleResource := "clusterroles"
	if ref.Kind == "Role" {
		roleResource = "roles"
	}
	if c.allowed(u, "bind", roleResource, namespace, ref.Name) {
		return nil
	}
	var rules []rbacv1.PolicyRule
	switch ref.Kind {
	case "Role":
		role := c.Source.GetRole(namespace, ref.Name)
		if role == nil {
			return apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "roles"}, ref.Name)
		}
		rules = role.Rules
	default:
		role := c.Source.GetClusterRole(ref.Name)
		if role == nil {
			return apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}, ref.Name)
		}
		rules = role.Rules
	}
	return c.confirmHeld(u, namespace, bindingResource, name, rules)
}

func (c *EscalationCheck) allowed(u *User, verb, resource, namespace, name string) bool {
	d, _, _ := c.Authorizer.Authorize(Attributes{User: u, Verb: verb, ResourceRequest: true,
		APIGroup: rbacv1.GroupName, APIVersion: "v1", Resource: resource, Namespace: namespace, Name: name})
	return d == DecisionAllow
}

// confirmHeld answers upstream's 403 when rules grant anything u does not
// hold in namespace, listing what is missing.
func (c *EscalationCheck) confirmHeld(u *User, namespace, resource, name string, rules []rbacv1.PolicyRule) error {
	held, _ := c.RBAC.RulesFor(u, namespace)
	if n := permissionCount(rules); n > maxPermissionsChecked {
		return apierrors.NewForbidden(schema.GroupResource{Group: rbacv1.GroupName, Resource: resource}, name,
			fmt.Errorf("rules grant %d individual permissions, more than the %d that can be verified; use wildcards or split the role", n, maxPermissionsChecked))
	}
	missing := uncovered(held, rules)
	if len(missing) == 0 {
		return nil
	}
	groups := make([]string, len(u.Groups))
	for i, g := range u.Groups {
		groups[i] = fmt.Sprintf("%q", g)
	}
	msg := fmt.Sprintf("user %q (groups=[%s]) is attempting to grant RBAC permissions not currently held:\n%s",
		u.Name, strings.Join(groups, " "), strings.Join(missing, "\n"))
	return apierrors.NewForbidden(schema.GroupResource{Group: rbacv1.GroupName, Resource: resource}, name, fmt.Errorf("%s", msg))
}

// maxPermissionsChecked bounds the work of one escalation check: a rule's
// lists multiply (verbs × groups × resources × names), and a small request
// could otherwise ask for billions of checks.
const maxPermissionsChecked = 100000

// maxMissingReported bounds the 403's list of permissions not held.
const maxMissingReported = 20

// permissionCount is how many single permissions rules break down into.
func permissionCount(rules []rbacv1.PolicyRule) int {
	n := 0
	for _, r := range rules {
		names := max(len(r.ResourceNames), 1)
		n += len(r.Verbs) * (len(r.NonResourceURLs) + len(r.APIGroups)*len(r.Resources)*names)
		if n > maxPermissionsChecked {
			return n
		}
	}
	return n
}

// uncovered breaks each rule into single permissions (one verb on one
// resource of one group, or one verb on one URL) and returns those no held
// rule grants, rendered as upstream prints them. A wildcard in the granted
// rule is covered only by the same wildcard: holding "get pods" does not
// allow granting "* pods".
func uncovered(held, rules []rbacv1.PolicyRule) []string {
	var missing []string
	// Once enough is missing the answer is known; the rest is not listed.
	full := func() bool { return len(missing) >= maxMissingReported }
	grants := func(a Attributes) bool {
		if full() {
			return true
		}
		for i := range held {
			if RuleAllows(a, &held[i]) {
				return true
			}
		}
		return false
	}
	for _, rule := range rules {
		for _, verb := range rule.Verbs {
			for _, url := range rule.NonResourceURLs {
				if !grants(Attributes{Verb: verb, Path: url}) {
					missing = append(missing, fmt.Sprintf("{NonResourceURLs:[%q], Verbs:[%q]}", url, verb))
				}
			}
			for _, group := range rule.APIGroups {
				for _, res := range rule.Resources {
					resource, sub, _ := strings.Cut(res, "/")
					names := rule.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, name := range names {
						a := Attributes{Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Name: name}
						if grants(a) {
							continue
						}
						s := fmt.Sprintf("{APIGroups:[%q], Resources:[%q], Verbs:[%q]}", group, res, verb)
						if name != "" {
							s = fmt.Sprintf("{APIGroups:[%q], Resources:[%q], ResourceNames:[%q], Verbs:[%q]}", group, res, name, verb)
						}
						missing = append(missing, s)
					}
				}
			}
		}
	}
	sort.Strings(missing)
	return missing
}
