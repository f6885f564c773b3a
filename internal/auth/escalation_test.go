package auth

import (
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

func TestEscalationCheck(t *testing.T) {
	src := newFakeRBAC().
		addClusterRole("pod-reader", rule("get list watch", "core", "pods")).
		addClusterRole("rbac-writer", rule("create update", "rbac.authorization.k8s.io", "roles rolebindings")).
		addClusterRole("binder", rule("bind", "rbac.authorization.k8s.io", "clusterroles")).
		addClusterRole("escalator", rule("escalate", "rbac.authorization.k8s.io", "roles")).
		addClusterRole("admin-ish", rule("*", "*", "*")).
		bind("demo", "jane-reads", "ClusterRole", "pod-reader", userSubject("jane")).
		bind("demo", "jane-writes-rbac", "ClusterRole", "rbac-writer", userSubject("jane")).
		bind("demo", "bob-binds", "ClusterRole", "binder", userSubject("bob")).
		bind("demo", "eve-escalates", "ClusterRole", "escalator", userSubject("eve"))
	check := &EscalationCheck{Authorizer: NewDefaultAuthorizer(src), RBAC: NewRBACAuthorizer(src), Source: src}
	jane := &User{Name: "jane", Groups: []string{AllAuthenticated}}
	bob := &User{Name: "bob", Groups: []string{AllAuthenticated}}
	eve := &User{Name: "eve", Groups: []string{AllAuthenticated}}
	root := &User{Name: "root", Groups: []string{SystemPrivilegedGroup}}

	roleCases := []struct {
		name  string
		user  *User
		ns    string
		rules []rbacv1.PolicyRule
		allow bool
	}{
		{"a subset of held rules", jane, "demo", []rbacv1.PolicyRule{rule("get list", "core", "pods")}, true},
		{"a verb not held", jane, "demo", []rbacv1.PolicyRule{rule("delete", "core", "pods")}, false},
		{"a wildcard verb is not covered by listed verbs", jane, "demo", []rbacv1.PolicyRule{rule("*", "core", "pods")}, false},
		{"held rules do not reach another namespace", jane, "other", []rbacv1.PolicyRule{rule("get", "core", "pods")}, false},
		{"a subresource is not covered by its resource", jane, "demo", []rbacv1.PolicyRule{rule("get", "core", "pods/log")}, false},
		{"escalate allows anything", eve, "demo", []rbacv1.PolicyRule{rule("*", "*", "*")}, true},
		{"system:masters allows anything", root, "", []rbacv1.PolicyRule{rule("*", "*", "*")}, true},
	}
	for _, tc := range roleCases {
		t.Run("role/"+tc.name, func(t *testing.T) {
			err := check.CheckRole(tc.user, tc.ns, "r", tc.rules)
			if tc.allow && err != nil {
				t.Fatalf("want allowed, got %v", err)
			}
			if !tc.allow && !apierrors.IsForbidden(err) {
				t.Fatalf("want Forbidden, got %v", err)
			}
		})
	}

	t.Run("forbidden message lists what is missing", func(t *testing.T) {
		err := check.CheckRole(jane, "demo", "r", []rbacv1.PolicyRule{rule("delete get", "core", "pods")})
		want := `roles.rbac.authorization.k8s.io "r" is forbidden: user "jane" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}`
		if err == nil || err.Error() != want {
			t.Fatalf("got  %v\nwant %s", err, want)
		}
	})

	bindCases := []struct {
		name  string
		user  *User
		ref   rbacv1.RoleRef
		allow bool
	}{
		{"binding a role whose rules are held", jane, rbacv1.RoleRef{Kind: "ClusterRole", Name: "pod-reader"}, true},
		{"binding cluster-admin-like rules not held", jane, rbacv1.RoleRef{Kind: "ClusterRole", Name: "admin-ish"}, false},
		{"bind verb allows any cluster role", bob, rbacv1.RoleRef{Kind: "ClusterRole", Name: "admin-ish"}, true},
	}
	for _, tc := range bindCases {
		t.Run("binding/"+tc.name, func(t *testing.T) {
			err := check.CheckBinding(tc.user, "demo", "b", tc.ref)
			if tc.allow && err != nil {
				t.Fatalf("want allowed, got %v", err)
			}
			if !tc.allow && !apierrors.IsForbidden(err) {
				t.Fatalf("want Forbidden, got %v", err)
			}
		})
	}
	t.Run("binding a missing role without bind is NotFound", func(t *testing.T) {
		err := check.CheckBinding(jane, "demo", "b", rbacv1.RoleRef{Kind: "Role", Name: "nope"})
		if !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), "nope") {
			t.Fatalf("want NotFound, got %v", err)
		}
	})
}

// TestEscalationCheckBounded: a role whose lists multiply into millions of
// permissions is refused quickly instead of being expanded.
func TestEscalationCheckBounded(t *testing.T) {
	src := newFakeRBAC()
	check := &EscalationCheck{Authorizer: NewDefaultAuthorizer(src), RBAC: NewRBACAuthorizer(src), Source: src}
	many := func(prefix string) []string {
		out := make([]string, 300)
		for i := range out {
			out[i] = prefix + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + strings.Repeat("y", i/26)
		}
		return out
	}
	huge := rbacv1.PolicyRule{Verbs: many("v"), APIGroups: many("g"), Resources: many("r"), ResourceNames: many("n")}
	err := check.CheckRole(&User{Name: "jane"}, "demo", "r", []rbacv1.PolicyRule{huge})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "more than the") {
		t.Fatalf("want a quick Forbidden for an unverifiable rule, got %v", err)
	}
}
