package registry

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const rbacGroup = "rbac.authorization.k8s.io"

func TestRBACSubjectDefaults(t *testing.T) {
	b := &rbacv1.RoleBinding{
		ObjectMeta: objMeta("read"),
		RoleRef:    rbacv1.RoleRef{Kind: "Role", Name: "reader"},
		Subjects: []rbacv1.Subject{
			{Kind: "User", Name: "jane"},
			{Kind: "Group", Name: "devs"},
			{Kind: "ServiceAccount", Name: "ci", Namespace: "default"},
			{Kind: "User", Name: "bob", APIGroup: "example.com"},
		},
	}
	mustResource(t, rbacGroup, "rolebindings").Default(b)
	if b.RoleRef.APIGroup != rbacGroup {
		t.Errorf("roleRef.apiGroup = %q", b.RoleRef.APIGroup)
	}
	for i, want := range []string{rbacGroup, rbacGroup, "", "example.com"} {
		if got := b.Subjects[i].APIGroup; got != want {
			t.Errorf("subjects[%d].apiGroup = %q, want %q", i, got, want)
		}
	}
}

func TestRBACValidate(t *testing.T) {
	rules := func(r ...rbacv1.PolicyRule) []rbacv1.PolicyRule { return r }
	for _, tc := range []struct {
		name, resource string
		obj            runtime.Object
		want           []string
	}{
		{name: "role", resource: "roles", obj: &rbacv1.Role{ObjectMeta: objMeta("pod-reader"),
			Rules: rules(rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}})}},
		{name: "role with colon name", resource: "roles", obj: &rbacv1.Role{ObjectMeta: objMeta("system:reader")}},
		{name: "role with slash name", resource: "roles", obj: &rbacv1.Role{ObjectMeta: objMeta("a/b")},
			want: []string{"metadata.name: Invalid value"}},
		{name: "rule without verbs", resource: "roles", obj: &rbacv1.Role{ObjectMeta: objMeta("r"),
			Rules: rules(rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}})},
			want: []string{"rules[0].verbs: Required value"}},
		{name: "rule without groups and resources", resource: "roles", obj: &rbacv1.Role{ObjectMeta: objMeta("r"),
			Rules: rules(rbacv1.PolicyRule{Verbs: []string{"get"}})},
			want: []string{"rules[0].apiGroups: Required value", "rules[0].resources: Required value"}},
		{name: "namespaced non-resource url", resource: "roles", obj: &rbacv1.Role{ObjectMeta: objMeta("r"),
			Rules: rules(rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}})},
			want: []string{"rules[0].nonResourceURLs: Invalid value"}},
		{name: "cluster non-resource url", resource: "clusterroles", obj: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "health"},
			Rules: rules(rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}})}},
		{name: "aggregation without selectors", resource: "clusterroles", obj: &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "agg"},
			AggregationRule: &rbacv1.AggregationRule{}},
			want: []string{"aggregationRule.clusterRoleSelectors: Required value"}},
		{name: "binding", resource: "rolebindings", obj: &rbacv1.RoleBinding{ObjectMeta: objMeta("b"),
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "jane"}}}},
		{name: "binding without role", resource: "rolebindings", obj: &rbacv1.RoleBinding{ObjectMeta: objMeta("b")},
			want: []string{"roleRef.kind: Unsupported value", "roleRef.name: Required value"}},
		{name: "bad subject kind", resource: "rolebindings", obj: &rbacv1.RoleBinding{ObjectMeta: objMeta("b"),
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: []rbacv1.Subject{{Kind: "Robot", Name: "r2"}}},
			want: []string{"subjects[0].kind: Unsupported value"}},
		{name: "user in core group", resource: "rolebindings", obj: &rbacv1.RoleBinding{ObjectMeta: objMeta("b"),
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}, Subjects: []rbacv1.Subject{{Kind: "User", Name: "jane", APIGroup: "v1"}}},
			want: []string{"subjects[0].apiGroup: Unsupported value"}},
		{name: "cluster binding to role", resource: "clusterrolebindings", obj: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			RoleRef: rbacv1.RoleRef{Kind: "Role", Name: "r"}},
			want: []string{"roleRef.kind: Unsupported value"}},
		{name: "cluster binding service account without namespace", resource: "clusterrolebindings", obj: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"},
			RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}, Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "ci"}}},
			want: []string{"subjects[0].namespace: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obj := tc.obj.DeepCopyObject()
			expectErrs(t, runCreate(mustResource(t, rbacGroup, tc.resource), obj), tc.want...)
		})
	}
}

func TestRoleRefImmutable(t *testing.T) {
	r := mustResource(t, rbacGroup, "clusterrolebindings")
	old := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "admins"},
		RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "admin"}, Subjects: []rbacv1.Subject{{Kind: "Group", Name: "ops"}}}
	expectErrs(t, runCreate(r, old))
	markStored(&old.ObjectMeta)

	b := old.DeepCopy()
	b.Subjects = append(b.Subjects, rbacv1.Subject{Kind: "User", Name: "jane"})
	expectErrs(t, runUpdate(r, b, old))

	b.RoleRef.Name = "cluster-admin"
	errs := runUpdate(r, b, old)
	expectErrs(t, errs, "roleRef: Invalid value")
	expectErrWith(t, errs, "roleRef: Invalid value", "cannot change roleRef")
}
