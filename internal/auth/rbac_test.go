package auth

import (
	"fmt"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeRBAC is an in-memory RBACSource: RBACSource is our own interface, and
// the watch-cache-backed one lives in the API server.
type fakeRBAC struct {
	roles               map[string]*rbacv1.Role // "ns/name"
	clusterRoles        map[string]*rbacv1.ClusterRole
	roleBindings        map[string][]*rbacv1.RoleBinding // by namespace
	clusterRoleBindings []*rbacv1.ClusterRoleBinding
}

func newFakeRBAC() *fakeRBAC {
	return &fakeRBAC{
		roles:        map[string]*rbacv1.Role{},
		clusterRoles: map[string]*rbacv1.ClusterRole{},
		roleBindings: map[string][]*rbacv1.RoleBinding{},
	}
}

func (f *fakeRBAC) GetRole(namespace, name string) *rbacv1.Role { return f.roles[namespace+"/"+name] }
func (f *fakeRBAC) GetClusterRole(name string) *rbacv1.ClusterRole {
	return f.clusterRoles[name]
}
func (f *fakeRBAC) ListRoleBindings(namespace string) []*rbacv1.RoleBinding {
	return f.roleBindings[namespace]
}
func (f *fakeRBAC) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	return f.clusterRoleBindings
}

func (f *fakeRBAC) addRole(ns, name string, rules ...rbacv1.PolicyRule) *fakeRBAC {
	f.roles[ns+"/"+name] = &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Rules: rules}
	return f
}

func (f *fakeRBAC) addClusterRole(name string, rules ...rbacv1.PolicyRule) *fakeRBAC {
	f.clusterRoles[name] = &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}
	return f
}

func (f *fakeRBAC) bind(ns, name, kind, role string, subjects ...rbacv1.Subject) *fakeRBAC {
	ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: role}
	if ns == "" {
		f.clusterRoleBindings = append(f.clusterRoleBindings, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subjects})
		return f
	}
	f.roleBindings[ns] = append(f.roleBindings[ns], &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, RoleRef: ref, Subjects: subjects})
	return f
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func saSubject(ns, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}
}

func rule(verbs, groups, resources string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: strings.Fields(verbs), APIGroups: splitGroups(groups), Resources: strings.Fields(resources)}
}

// splitGroups reads "core" as the empty (core) group, so tables stay readable.
func splitGroups(s string) []string {
	var out []string
	for _, g := range strings.Fields(s) {
		if g == "core" {
			g = ""
		}
		out = append(out, g)
	}
	return out
}

func resourceAttrs(u *User, verb, group, resource, subresource, ns, name string) Attributes {
	return Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, APIVersion: "v1",
		Resource: resource, Subresource: subresource, Namespace: ns, Name: name}
}

func pathAttrs(u *User, verb, path string) Attributes {
	return Attributes{User: u, Verb: verb, Path: path}
}

func TestRBACDecisions(t *testing.T) {
	src := newFakeRBAC().
		addClusterRole("pod-reader", rule("get list watch", "core", "pods")).
		addClusterRole("wildcards",
			rule("*", "apps", "*/scale"),
			rule("get", "*", "widgets"),
			rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"special"}},
		).
		addClusterRole("logs", rule("get", "core", "pods/log")).
		addClusterRole("urls", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz", "/metrics/*"}}).
		addRole("team", "secret-reader", rule("get", "core", "secrets")).
		bind("", "alice-reads-pods", "ClusterRole", "pod-reader", userSubject("alice")).
		bind("", "devs-wildcards", "ClusterRole", "wildcards", groupSubject("devs")).
		bind("", "urls", "ClusterRole", "urls", groupSubject("system:authenticated")).
		bind("", "sa-logs", "ClusterRole", "logs", saSubject("kube-system", "logger")).
		bind("", "dangling", "ClusterRole", "missing", userSubject("carol")).
		// A ServiceAccount subject without namespace means nothing in a ClusterRoleBinding.
		bind("", "sa-no-ns", "ClusterRole", "pod-reader", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "nobody"}).
		bind("team", "bob-secrets", "Role", "secret-reader", userSubject("bob")).
		// ...but in a RoleBinding it means the binding's namespace.
		bind("team", "local-sa", "ClusterRole", "pod-reader", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "builder"}).
		bind("team", "dangling-role", "Role", "gone", userSubject("carol"))

	alice := &User{Name: "alice", Groups: []string{AllAuthenticated}}
	bob := &User{Name: "bob", Groups: []string{"devs", AllAuthenticated}}
	logger := &User{Name: "system:serviceaccount:kube-system:logger"}
	builder := &User{Name: "system:serviceaccount:team:builder"}
	otherBuilder := &User{Name: "system:serviceaccount:other:builder"}
	nobody := &User{Name: "system:serviceaccount:default:nobody"}
	carol := &User{Name: "carol"}

	tests := []struct {
		name       string
		attrs      Attributes
		want       Decision
		wantReason string // substring
	}{
		{"cluster binding allows in any namespace", resourceAttrs(alice, "list", "", "pods", "", "ns1", ""), DecisionAllow,
			`RBAC: allowed by ClusterRoleBinding "alice-reads-pods" of ClusterRole "pod-reader" to User "alice"`},
		{"cluster binding allows cluster-wide", resourceAttrs(alice, "watch", "", "pods", "", "", ""), DecisionAllow, ""},
		{"verb not in rule", resourceAttrs(alice, "delete", "", "pods", "", "ns1", "p"), DecisionNoOpinion, ""},
		{"resource rule does not cover subresource", resourceAttrs(alice, "get", "", "pods", "log", "ns1", "p"), DecisionNoOpinion, ""},
		{"group mismatch", resourceAttrs(alice, "get", "apps", "pods", "", "ns1", "p"), DecisionNoOpinion, ""},
		{"star subresource matches any resource's subresource", resourceAttrs(bob, "update", "apps", "deployments", "scale", "x", "d"), DecisionAllow,
			`to Group "devs"`},
		{"star subresource does not match the resource", resourceAttrs(bob, "update", "apps", "deployments", "", "x", "d"), DecisionNoOpinion, ""},
		{"star subresource does not match other subresource", resourceAttrs(bob, "update", "apps", "deployments", "status", "x", "d"), DecisionNoOpinion, ""},
		{"star group", resourceAttrs(bob, "get", "example.com", "widgets", "", "x", "w"), DecisionAllow, ""},
		{"resourceNames match", resourceAttrs(bob, "get", "", "configmaps", "", "x", "special"), DecisionAllow, ""},
		{"resourceNames mismatch", resourceAttrs(bob, "get", "", "configmaps", "", "x", "other"), DecisionNoOpinion, ""},
		{"resourceNames never match unnamed requests", resourceAttrs(bob, "get", "", "configmaps", "", "x", ""), DecisionNoOpinion, ""},
		{"role binding in its namespace", resourceAttrs(bob, "get", "", "secrets", "", "team", "s"), DecisionAllow,
			`RBAC: allowed by RoleBinding "bob-secrets/team" of Role "secret-reader" to User "bob"`},
		{"role binding not in other namespace", resourceAttrs(bob, "get", "", "secrets", "", "other", "s"), DecisionNoOpinion, ""},
		{"role binding not cluster-wide", resourceAttrs(bob, "get", "", "secrets", "", "", "s"), DecisionNoOpinion, ""},
		{"service account subject", resourceAttrs(logger, "get", "", "pods", "log", "any", "p"), DecisionAllow,
			`to ServiceAccount "logger/kube-system"`},
		{"namespaceless SA subject in RoleBinding means binding namespace", resourceAttrs(builder, "list", "", "pods", "", "team", ""), DecisionAllow,
			`to ServiceAccount "builder/team"`},
		{"namespaceless SA subject does not match other namespace's SA", resourceAttrs(otherBuilder, "list", "", "pods", "", "team", ""), DecisionNoOpinion, ""},
		{"namespaceless SA subject in ClusterRoleBinding matches nothing", resourceAttrs(nobody, "list", "", "pods", "", "default", ""), DecisionNoOpinion, ""},
		{"non-resource exact", pathAttrs(alice, "get", "/healthz"), DecisionAllow, ""},
		{"non-resource prefix", pathAttrs(alice, "get", "/metrics/cadvisor"), DecisionAllow, ""},
		{"non-resource prefix needs the slash", pathAttrs(alice, "get", "/metrics"), DecisionNoOpinion, ""},
		{"non-resource verb", pathAttrs(alice, "post", "/healthz"), DecisionNoOpinion, ""},
		{"resource rules do not grant paths", pathAttrs(bob, "get", "/api"), DecisionNoOpinion, ""},
		{"missing roles are reported", resourceAttrs(carol, "get", "", "pods", "", "team", "p"), DecisionNoOpinion,
			`RBAC: [clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "gone" not found]`},
		{"nil user", resourceAttrs(nil, "get", "", "pods", "", "team", "p"), DecisionNoOpinion, ""},
	}
	az := NewRBACAuthorizer(src)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, err := az.Authorize(tc.attrs)
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if got != tc.want {
				t.Fatalf("decision = %v, want %v (reason %q)", got, tc.want, reason)
			}
			if tc.wantReason != "" && !strings.Contains(reason, tc.wantReason) {
				t.Errorf("reason = %q, want it to contain %q", reason, tc.wantReason)
			}
			if tc.wantReason == "" && got != DecisionAllow && reason != "" {
				t.Errorf("reason = %q, want none", reason)
			}
		})
	}
}

func TestRuleAllowsWildcards(t *testing.T) {
	tests := []struct {
		name  string
		rule  rbacv1.PolicyRule
		attrs Attributes
		want  bool
	}{
		{"star subresource", rule("get", "apps", "*/scale"), resourceAttrs(nil, "get", "apps", "deployments", "scale", "", ""), true},
		{"star verb", rule("*", "core", "pods"), resourceAttrs(nil, "escalate", "", "pods", "", "", ""), true},
		{"star resource covers subresources", rule("get", "core", "*"), resourceAttrs(nil, "get", "", "pods", "exec", "", ""), true},
		{"explicit subresource", rule("create", "core", "pods/exec"), resourceAttrs(nil, "create", "", "pods", "exec", "", ""), true},
		{"other resource's subresource", rule("get", "apps", "x/scale"), resourceAttrs(nil, "get", "apps", "deployments", "scale", "", ""), false},
		{"subresource rule is not the resource", rule("get", "core", "pods/exec"), resourceAttrs(nil, "get", "", "pods", "", "", ""), false},
		{"star url", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}, pathAttrs(nil, "get", "/anything"), true},
		{"url rule does not grant resources", rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"*"}}, resourceAttrs(nil, "get", "", "pods", "", "", ""), false},
		{"empty rule", rbacv1.PolicyRule{}, resourceAttrs(nil, "get", "", "pods", "", "", ""), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := RuleAllows(tc.attrs, &tc.rule); got != tc.want {
				t.Errorf("RuleAllows = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRulesFor(t *testing.T) {
	src := newFakeRBAC().
		addClusterRole("cluster", rule("get", "core", "nodes")).
		addRole("team", "local", rule("list", "core", "pods")).
		bind("", "c", "ClusterRole", "cluster", userSubject("u")).
		bind("team", "l", "Role", "local", userSubject("u")).
		bind("team", "broken", "ClusterRole", "nope", userSubject("u"))
	az := NewRBACAuthorizer(src)
	u := &User{Name: "u"}

	tests := []struct {
		name      string
		namespace string
		wantRules []string // verb/resource of each rule, in order
		wantErr   string
	}{
		{"cluster scope only", "", []string{"get/nodes"}, ""},
		{"namespace adds its bindings", "team", []string{"get/nodes", "list/pods"}, `clusterrole.rbac.authorization.k8s.io "nope" not found`},
		{"other namespace", "elsewhere", []string{"get/nodes"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rules, err := az.RulesFor(u, tc.namespace)
			var got []string
			for _, r := range rules {
				got = append(got, r.Verbs[0]+"/"+r.Resources[0])
			}
			if strings.Join(got, ",") != strings.Join(tc.wantRules, ",") {
				t.Errorf("rules = %v, want %v", got, tc.wantRules)
			}
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("error = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestDefaultAuthorizerAndForbiddenMessages(t *testing.T) {
	src := newFakeRBAC().
		addClusterRole("pod-reader", rule("get", "core", "pods")).
		bind("", "dangling", "ClusterRole", "ghost", userSubject("jane"))
	az := NewDefaultAuthorizer(src)
	master := &User{Name: "root", Groups: []string{SystemPrivilegedGroup, AllAuthenticated}}
	jane := &User{Name: "jane", Groups: []string{AllAuthenticated}}

	tests := []struct {
		name    string
		attrs   Attributes
		wantErr string // "" means allowed
	}{
		{"masters may do anything without any binding", resourceAttrs(master, "delete", "", "nodes", "", "", "n1"), ""},
		{"masters may get any path", pathAttrs(master, "get", "/debug/pprof"), ""},
		{"namespaced denial", resourceAttrs(jane, "list", "", "pods", "", "default", ""),
			`pods is forbidden: User "jane" cannot list resource "pods" in API group "" in the namespace "default": RBAC: clusterrole.rbac.authorization.k8s.io "ghost" not found`},
		{"named cluster-scoped denial with group", resourceAttrs(jane, "get", "apps", "deployments", "scale", "", "web"),
			`deployments.apps "web" is forbidden: User "jane" cannot get resource "deployments/scale" in API group "apps" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io "ghost" not found`},
		{"path denial", pathAttrs(&User{Name: "system:anonymous"}, "get", "/"),
			`forbidden: User "system:anonymous" cannot get path "/"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Authorize(az, tc.attrs)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("want allowed, got %v", err)
				}
				return
			}
			if !apierrors.IsForbidden(err) {
				t.Fatalf("want a 403, got %v", err)
			}
			if err.Error() != tc.wantErr {
				t.Errorf("message\n got %s\nwant %s", err.Error(), tc.wantErr)
			}
		})
	}
}

func TestUnionAuthorizer(t *testing.T) {
	allow := AuthorizerFunc(func(Attributes) (Decision, string, error) { return DecisionAllow, "yes", nil })
	deny := AuthorizerFunc(func(Attributes) (Decision, string, error) { return DecisionDeny, "no", nil })
	pass := func(reason string) Authorizer {
		return AuthorizerFunc(func(Attributes) (Decision, string, error) { return DecisionNoOpinion, reason, nil })
	}
	tests := []struct {
		name       string
		chain      []Authorizer
		want       Decision
		wantReason string
	}{
		{"first allow wins", []Authorizer{pass("a"), allow, deny}, DecisionAllow, "yes"},
		{"deny stops the chain", []Authorizer{deny, allow}, DecisionDeny, "no"},
		{"no opinion joins reasons", []Authorizer{pass("a"), pass(""), pass("b")}, DecisionNoOpinion, "a\nb"},
		{"empty chain", nil, DecisionNoOpinion, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, reason, _ := NewUnionAuthorizer(tc.chain...).Authorize(Attributes{})
			if got != tc.want || reason != tc.wantReason {
				t.Errorf("got (%v, %q), want (%v, %q)", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

// BenchmarkRBACAuthorize measures one decision against the bootstrap policy
// plus n unrelated bindings, the per-request cost of RBAC. Cost grows with
// the number of bindings (upstream's evaluation is the same linear scan);
// the sub-benchmarks show by how much.
func BenchmarkRBACAuthorize(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		src := bootstrapSource()
		for i := range n {
			name := fmt.Sprintf("u%d", i)
			src.bind("", "crb-"+name, "ClusterRole", "view", userSubject(name))
			src.bind("team", "rb-"+name, "ClusterRole", "edit", userSubject(name))
		}
		az := NewDefaultAuthorizer(src)
		editor := &User{Name: "editor", Groups: []string{AllAuthenticated}}
		allowed := resourceAttrs(editor, "get", "", "secrets", "", "team", "db")
		denied := resourceAttrs(editor, "create", rbacv1.GroupName, "rolebindings", "", "team", "")
		b.Run(fmt.Sprintf("bindings=%d/allowed", 2*n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := az.Authorize(allowed); d != DecisionAllow {
					b.Fatal("not allowed")
				}
			}
		})
		b.Run(fmt.Sprintf("bindings=%d/denied", 2*n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if d, _, _ := az.Authorize(denied); d == DecisionAllow {
					b.Fatal("allowed")
				}
			}
		})
	}
}
