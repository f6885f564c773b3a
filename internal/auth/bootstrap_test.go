package auth

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bootstrapSource is the bootstrap policy loaded into a fake source, with
// users bound in namespace "team" to the three user-facing roles the way
// an administrator would (RoleBindings to the ClusterRoles).
func bootstrapSource() *fakeRBAC {
	src := newFakeRBAC()
	for _, r := range BootstrapClusterRoles() {
		src.clusterRoles[r.Name] = r
	}
	src.clusterRoleBindings = BootstrapClusterRoleBindings()
	src.bind("team", "viewers", "ClusterRole", "view", userSubject("viewer"))
	src.bind("team", "editors", "ClusterRole", "edit", userSubject("editor"))
	src.bind("team", "admins", "ClusterRole", "admin", userSubject("admin"))
	return src
}

func TestBootstrapPolicyGrants(t *testing.T) {
	az := NewDefaultAuthorizer(bootstrapSource())
	authed := func(name string, groups ...string) *User {
		return &User{Name: name, Groups: append(groups, AllAuthenticated)}
	}
	viewer, editor, admin := authed("viewer"), authed("editor"), authed("admin")
	stranger := authed("stranger")
	master := authed("root", SystemPrivilegedGroup)
	anonymous := &User{Name: Anonymous, Groups: []string{AllUnauthenticated}}

	tests := []struct {
		name  string
		attrs Attributes
		want  bool
	}{
		// view
		{"view lists pods", resourceAttrs(viewer, "list", "", "pods", "", "team", ""), true},
		{"view reads pod logs", resourceAttrs(viewer, "get", "", "pods", "log", "team", "p"), true},
		{"view reads deployments", resourceAttrs(viewer, "watch", "apps", "deployments", "", "team", ""), true},
		{"view reads its namespace", resourceAttrs(viewer, "get", "", "namespaces", "", "team", "team"), true},
		{"view reads endpointslices", resourceAttrs(viewer, "list", "discovery.k8s.io", "endpointslices", "", "team", ""), true},
		{"view reads resourceclaims", resourceAttrs(viewer, "get", "resource.k8s.io", "resourceclaims", "", "team", "c"), true},
		{"view can't read secrets", resourceAttrs(viewer, "get", "", "secrets", "", "team", "s"), false},
		{"view can't list secrets", resourceAttrs(viewer, "list", "", "secrets", "", "team", ""), false},
		{"view can't exec", resourceAttrs(viewer, "create", "", "pods", "exec", "team", "p"), false},
		{"view can't create pods", resourceAttrs(viewer, "create", "", "pods", "", "team", ""), false},
		{"view can't read roles", resourceAttrs(viewer, "list", rbacv1.GroupName, "roles", "", "team", ""), false},
		{"view is namespaced", resourceAttrs(viewer, "list", "", "pods", "", "other", ""), false},
		// edit
		{"edit reads secrets", resourceAttrs(editor, "get", "", "secrets", "", "team", "s"), true},
		{"edit creates secrets", resourceAttrs(editor, "create", "", "secrets", "", "team", ""), true},
		{"edit creates deployments", resourceAttrs(editor, "create", "apps", "deployments", "", "team", ""), true},
		{"edit scales deployments", resourceAttrs(editor, "patch", "apps", "deployments", "scale", "team", "d"), true},
		{"edit keeps view's reads", resourceAttrs(editor, "get", "", "pods", "log", "team", "p"), true},
		{"edit execs", resourceAttrs(editor, "create", "", "pods", "exec", "team", "p"), true},
		{"edit evicts", resourceAttrs(editor, "create", "", "pods", "eviction", "team", "p"), true},
		{"edit requests SA tokens", resourceAttrs(editor, "create", "", "serviceaccounts", "token", "team", "sa"), true},
		{"edit impersonates SAs", resourceAttrs(editor, "impersonate", "", "serviceaccounts", "", "team", "sa"), true},
		{"edit writes leases", resourceAttrs(editor, "update", "coordination.k8s.io", "leases", "", "team", "l"), true},
		{"edit can't write endpoints", resourceAttrs(editor, "create", "", "endpoints", "", "team", ""), false},
		{"edit can't write pod status", resourceAttrs(editor, "update", "", "pods", "status", "team", "p"), false},
		{"edit can't write quotas", resourceAttrs(editor, "update", "", "resourcequotas", "", "team", "q"), false},
		{"edit can't create rolebindings", resourceAttrs(editor, "create", rbacv1.GroupName, "rolebindings", "", "team", ""), false},
		// admin
		{"admin creates rolebindings", resourceAttrs(admin, "create", rbacv1.GroupName, "rolebindings", "", "team", ""), true},
		{"admin deletes roles", resourceAttrs(admin, "delete", rbacv1.GroupName, "roles", "", "team", "r"), true},
		{"admin creates local SARs", resourceAttrs(admin, "create", "authorization.k8s.io", "localsubjectaccessreviews", "", "team", ""), true},
		{"admin keeps edit's powers", resourceAttrs(admin, "delete", "batch", "jobs", "", "team", "j"), true},
		{"admin keeps view's reads", resourceAttrs(admin, "get", "policy", "poddisruptionbudgets", "status", "team", "p"), true},
		{"admin can't create clusterroles", resourceAttrs(admin, "create", rbacv1.GroupName, "clusterroles", "", "", ""), false},
		{"admin can't delete its namespace", resourceAttrs(admin, "delete", "", "namespaces", "", "team", "team"), false},
		// cluster-wide bootstrap bindings
		{"masters do anything", resourceAttrs(master, "delete", "", "nodes", "", "", "n"), true},
		{"anyone authenticated discovers APIs", pathAttrs(stranger, "get", "/apis/apps/v1"), true},
		{"anyone authenticated reads openapi", pathAttrs(stranger, "get", "/openapi/v3"), true},
		{"anyone authenticated may ask what it can do", resourceAttrs(stranger, "create", "authorization.k8s.io", "selfsubjectrulesreviews", "", "", ""), true},
		{"anyone authenticated may ask who it is", resourceAttrs(stranger, "create", "authentication.k8s.io", "selfsubjectreviews", "", "", ""), true},
		{"authenticated user has no resource access", resourceAttrs(stranger, "list", "", "pods", "", "team", ""), false},
		{"anonymous reads version", pathAttrs(anonymous, "get", "/version"), true},
		{"anonymous reads healthz", pathAttrs(anonymous, "get", "/healthz"), true},
		{"anonymous can't discover", pathAttrs(anonymous, "get", "/apis"), false},
		{"service accounts read the issuer discovery document", pathAttrs(authed("system:serviceaccount:ns:app", "system:serviceaccounts"), "get", "/.well-known/openid-configuration"), true},
		{"service accounts read the issuer keys", pathAttrs(authed("system:serviceaccount:ns:app", "system:serviceaccounts"), "get", "/openid/v1/jwks"), true},
		{"other users can't read the issuer keys", pathAttrs(stranger, "get", "/openid/v1/jwks"), false},
		{"anonymous can't ask SARs", resourceAttrs(anonymous, "create", "authorization.k8s.io", "selfsubjectaccessreviews", "", "", ""), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Authorize(az, tc.attrs)
			if got := err == nil; got != tc.want {
				t.Errorf("allowed = %v, want %v (err: %v)", got, tc.want, err)
			}
		})
	}
}

func TestBootstrapObjects(t *testing.T) {
	roles := map[string]*rbacv1.ClusterRole{}
	for _, r := range BootstrapClusterRoles() {
		if roles[r.Name] != nil {
			t.Fatalf("duplicate cluster role %s", r.Name)
		}
		roles[r.Name] = r
	}
	bindings := map[string]*rbacv1.ClusterRoleBinding{}
	for _, b := range BootstrapClusterRoleBindings() {
		bindings[b.Name] = b
	}

	t.Run("all carry the bootstrap label and autoupdate annotation", func(t *testing.T) {
		var metas []metav1.ObjectMeta
		for _, r := range roles {
			metas = append(metas, r.ObjectMeta)
		}
		for _, b := range bindings {
			metas = append(metas, b.ObjectMeta)
		}
		for _, m := range metas {
			if m.Labels[BootstrappingLabel] != "rbac-defaults" || m.Annotations["rbac.authorization.kubernetes.io/autoupdate"] != "true" {
				t.Errorf("%s: labels %v annotations %v", m.Name, m.Labels, m.Annotations)
			}
		}
	})

	t.Run("expected roles exist", func(t *testing.T) {
		for _, name := range []string{"cluster-admin", "admin", "edit", "view", "system:aggregate-to-admin",
			"system:aggregate-to-edit", "system:aggregate-to-view", "system:basic-user", "system:discovery", "system:public-info-viewer",
			"system:auth-delegator", "system:service-account-issuer-discovery", "system:kubelet-api-admin"} {
			if roles[name] == nil {
				t.Errorf("missing cluster role %s", name)
			}
		}
	})

	t.Run("aggregation labels and rules", func(t *testing.T) {
		tests := []struct {
			role, selects, label string
		}{
			{"admin", "rbac.authorization.k8s.io/aggregate-to-admin", ""},
			{"edit", "rbac.authorization.k8s.io/aggregate-to-edit", "rbac.authorization.k8s.io/aggregate-to-admin"},
			{"view", "rbac.authorization.k8s.io/aggregate-to-view", "rbac.authorization.k8s.io/aggregate-to-edit"},
			{"system:aggregate-to-admin", "", "rbac.authorization.k8s.io/aggregate-to-admin"},
			{"system:aggregate-to-edit", "", "rbac.authorization.k8s.io/aggregate-to-edit"},
			{"system:aggregate-to-view", "", "rbac.authorization.k8s.io/aggregate-to-view"},
		}
		for _, tc := range tests {
			r := roles[tc.role]
			if tc.selects != "" {
				if r.AggregationRule == nil || len(r.AggregationRule.ClusterRoleSelectors) != 1 ||
					r.AggregationRule.ClusterRoleSelectors[0].MatchLabels[tc.selects] != "true" {
					t.Errorf("%s: aggregationRule %+v, want selector on %s", tc.role, r.AggregationRule, tc.selects)
				}
				if len(r.Rules) == 0 {
					t.Errorf("%s: aggregated rules not filled in", tc.role)
				}
			}
			if tc.label != "" && r.Labels[tc.label] != "true" {
				t.Errorf("%s: missing label %s", tc.role, tc.label)
			}
		}
		// Upstream's aggregation order: edit = aggregate-to-edit then view;
		// admin = edit then aggregate-to-admin.
		want := len(roles["system:aggregate-to-edit"].Rules) + len(roles["system:aggregate-to-view"].Rules)
		if got := len(roles["edit"].Rules); got != want {
			t.Errorf("edit has %d rules, want %d", got, want)
		}
		want += len(roles["system:aggregate-to-admin"].Rules)
		if got := len(roles["admin"].Rules); got != want {
			t.Errorf("admin has %d rules, want %d", got, want)
		}
		if last := roles["admin"].Rules[len(roles["admin"].Rules)-1]; last.Resources[0] != "rolebindings" {
			t.Errorf("admin's last rule = %+v, want aggregate-to-admin's roles rule", last)
		}
	})

	t.Run("bindings", func(t *testing.T) {
		tests := []struct {
			name   string
			groups []string
			role   string // when not the binding's name
		}{
			{"cluster-admin", []string{"system:masters"}, ""},
			{"system:basic-user", []string{"system:authenticated"}, ""},
			{"system:discovery", []string{"system:authenticated"}, ""},
			{"system:public-info-viewer", []string{"system:authenticated", "system:unauthenticated"}, ""},
			{"system:service-account-issuer-discovery", []string{"system:serviceaccounts"}, ""},
			{"system:kubelet-api-admin", []string{"User:kube-apiserver-kubelet-client"}, ""},
			{"system:node-proxier", []string{"User:system:kube-proxy"}, ""},
			{"rudder:kubelet-bootstrap", []string{"system:bootstrappers"}, "system:node-bootstrapper"},
			{"rudder:node-autoapprove-bootstrap", []string{"system:bootstrappers"}, "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
			{"rudder:node-autoapprove-certificate-rotation", []string{"system:nodes"}, "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"},
		}
		if len(bindings) != len(tests) {
			t.Errorf("got %d bindings, want %d", len(bindings), len(tests))
		}
		for _, tc := range tests {
			b := bindings[tc.name]
			if b == nil {
				t.Errorf("missing binding %s", tc.name)
				continue
			}
			role := tc.role
			if role == "" {
				role = tc.name
			}
			if b.RoleRef != (rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role}) {
				t.Errorf("%s: roleRef %+v", tc.name, b.RoleRef)
			}
			var got []string
			for _, s := range b.Subjects {
				name := s.Name
				if s.Kind == rbacv1.UserKind {
					name = "User:" + name
				} else if s.Kind != rbacv1.GroupKind {
					t.Errorf("%s: subject %+v", tc.name, s)
				}
				if s.APIGroup != rbacv1.GroupName {
					t.Errorf("%s: subject %+v", tc.name, s)
				}
				got = append(got, name)
			}
			if len(got) != len(tc.groups) || (len(got) > 0 && got[0] != tc.groups[0]) || (len(got) > 1 && got[1] != tc.groups[1]) {
				t.Errorf("%s: subjects %v, want %v", tc.name, got, tc.groups)
			}
		}
	})

	t.Run("each call returns fresh objects", func(t *testing.T) {
		a, b := BootstrapClusterRoles(), BootstrapClusterRoles()
		a[0].Rules[0].Verbs[0] = "mutated"
		a[0].Labels["x"] = "y"
		if b[0].Rules[0].Verbs[0] == "mutated" || b[0].Labels["x"] == "y" {
			t.Error("BootstrapClusterRoles shares state between calls")
		}
	})
}

func TestAggregatedRulesPicksUpNewRoles(t *testing.T) {
	roles := BootstrapClusterRoles()
	var view *rbacv1.ClusterRole
	for _, r := range roles {
		if r.Name == "view" {
			view = r
		}
	}
	crd := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "crontabs-view", Labels: map[string]string{AggregateToViewLabel: "true"}},
		Rules:      []rbacv1.PolicyRule{rule("get list watch", "stable.example.com", "crontabs")},
	}
	got, err := AggregatedRules(view, append(roles, crd))
	if err != nil {
		t.Fatal(err)
	}
	// Roles are taken in name order: "crontabs-view" sorts first.
	if len(got) != len(view.Rules)+1 || got[0].APIGroups[0] != "stable.example.com" {
		t.Errorf("aggregated rules did not pick up the new role: %d rules, first %+v", len(got), got[0])
	}
}
