package apiserver_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/clustertest"
)

// reviewPolicy is the RBAC state the access-review tests ask about:
// a cluster-wide grant, a namespaced grant to a group, one to a service
// account, and a binding whose role does not exist.
func reviewPolicy(t *testing.T, ctx context.Context, c kubernetes.Interface) {
	t.Helper()
	for _, ns := range []string{"team", "other"} {
		if _, err := c.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	rb := c.RbacV1()
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	subj := func(kind, name, ns string) []rbacv1.Subject {
		s := rbacv1.Subject{Kind: kind, Name: name, Namespace: ns}
		if kind != rbacv1.ServiceAccountKind {
			s.APIGroup = rbacv1.GroupName
		}
		return []rbacv1.Subject{s}
	}
	must(rb.ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "pod-reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}, metav1.CreateOptions{}))
	must(rb.ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "read-pods"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "pod-reader"}, Subjects: subj(rbacv1.UserKind, "jane", "")}, metav1.CreateOptions{}))
	must(rb.Roles("team").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "cm-writer"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"create"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}}, metav1.CreateOptions{}))
	must(rb.RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cm"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "cm-writer"}, Subjects: subj(rbacv1.GroupKind, "devs", "")}, metav1.CreateOptions{}))
	must(rb.RoleBindings("team").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "sa-view"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"}, Subjects: subj(rbacv1.ServiceAccountKind, "bot", "team")}, metav1.CreateOptions{}))
	must(rb.RoleBindings("other").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "dangling"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "missing"}, Subjects: subj(rbacv1.UserKind, "jane", "")}, metav1.CreateOptions{}))
}

// TestAccessReviewsMatchAuthorizer asks each question four ways — a
// SubjectAccessReview, a LocalSubjectAccessReview, a
// SelfSubjectAccessReview under impersonation, and the real request under
// impersonation — and checks that all agree with the server's authorizer
// and with upstream's reason text.
func TestAccessReviewsMatchAuthorizer(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	reviewPolicy(t, ctx, c.Client)
	authz := auth.NewDefaultAuthorizer(c.Server.API.RBACSource())

	authed := []string{auth.AllAuthenticated}
	cases := []struct {
		name       string
		user       string
		groups     []string
		attrs      authorizationv1.ResourceAttributes
		path       string // a non-resource question instead
		wantAllow  bool
		wantReason string
	}{
		{name: "cluster role binding allows", user: "jane", groups: authed,
			attrs:     authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "team", Name: "p"},
			wantAllow: true, wantReason: `RBAC: allowed by ClusterRoleBinding "read-pods" of ClusterRole "pod-reader" to User "jane"`},
		{name: "no rule: no reason", user: "jane", groups: authed,
			attrs: authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "team"}},
		{name: "dangling binding shows in the reason", user: "jane", groups: authed,
			attrs:      authorizationv1.ResourceAttributes{Verb: "create", Resource: "pods", Namespace: "other"},
			wantReason: `RBAC: role.rbac.authorization.k8s.io "missing" not found`},
		{name: "role binding to a group", user: "bob", groups: []string{"devs", auth.AllAuthenticated},
			attrs:     authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: "team"},
			wantAllow: true, wantReason: `RBAC: allowed by RoleBinding "cm/team" of Role "cm-writer" to Group "devs"`},
		{name: "role binding is namespaced", user: "bob", groups: []string{"devs", auth.AllAuthenticated},
			attrs: authorizationv1.ResourceAttributes{Verb: "create", Resource: "configmaps", Namespace: "other"}},
		{name: "service account subject", user: "system:serviceaccount:team:bot",
			groups:    []string{"system:serviceaccounts", "system:serviceaccounts:team", auth.AllAuthenticated},
			attrs:     authorizationv1.ResourceAttributes{Verb: "list", Group: "apps", Resource: "deployments", Namespace: "team"},
			wantAllow: true, wantReason: `RBAC: allowed by RoleBinding "sa-view/team" of ClusterRole "view" to ServiceAccount "bot/team"`},
		{name: "subresource needs its own rule", user: "jane", groups: authed,
			attrs: authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Subresource: "log", Namespace: "team", Name: "p"}},
		{name: "system:masters", user: "root", groups: []string{auth.SystemPrivilegedGroup, auth.AllAuthenticated},
			attrs: authorizationv1.ResourceAttributes{Verb: "delete", Resource: "nodes", Name: "n"}, wantAllow: true},
		{name: "non-resource path", user: "jane", groups: authed, path: "/healthz", wantAllow: true,
			wantReason: `RBAC: allowed by ClusterRoleBinding "system:discovery" of ClusterRole "system:discovery" to Group "system:authenticated"`},
		{name: "non-resource path denied", user: "jane", groups: authed, path: "/metrics"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := authorizationv1.SubjectAccessReviewSpec{User: tc.user, Groups: tc.groups}
			want := auth.Attributes{User: &auth.User{Name: tc.user, Groups: tc.groups}}
			if tc.path != "" {
				spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: tc.path, Verb: "get"}
				want.Verb, want.Path = "get", tc.path
			} else {
				ra := tc.attrs
				spec.ResourceAttributes = &ra
				want.ResourceRequest, want.Verb, want.APIGroup, want.Resource = true, ra.Verb, ra.Group, ra.Resource
				want.Subresource, want.Namespace, want.Name = ra.Subresource, ra.Namespace, ra.Name
			}
			d, reason, _ := authz.Authorize(want)
			if (d == auth.DecisionAllow) != tc.wantAllow || reason != tc.wantReason {
				t.Fatalf("authorizer: %v %q, want allowed=%v %q", d, reason, tc.wantAllow, tc.wantReason)
			}
			sar, err := c.Client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			reviewCheckStatus(t, "SubjectAccessReview", sar.Status, tc.wantAllow, tc.wantReason)

			if tc.path == "" && tc.attrs.Namespace != "" {
				lsar, err := c.Client.AuthorizationV1().LocalSubjectAccessReviews(tc.attrs.Namespace).Create(ctx,
					&authorizationv1.LocalSubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				reviewCheckStatus(t, "LocalSubjectAccessReview", lsar.Status, tc.wantAllow, tc.wantReason)
			}

			as := reviewAs(t, c.Config, tc.user, tc.groups)
			self, err := as.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: spec.ResourceAttributes, NonResourceAttributes: spec.NonResourceAttributes},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			reviewCheckStatus(t, "SelfSubjectAccessReview", self.Status, tc.wantAllow, tc.wantReason)

			// The request itself: forbidden exactly when the reviews say no.
			err = reviewDoRequest(ctx, as, spec)
			if forbidden := apierrors.IsForbidden(err); forbidden == tc.wantAllow {
				t.Errorf("real request: err %v, want allowed=%v", err, tc.wantAllow)
			}
			if !tc.wantAllow && tc.wantReason != "" && !strings.HasSuffix(err.Error(), ": "+tc.wantReason) {
				t.Errorf("403 message %q does not end with the review's reason %q", err.Error(), tc.wantReason)
			}
		})
	}
}

func reviewCheckStatus(t *testing.T, kind string, st authorizationv1.SubjectAccessReviewStatus, allow bool, reason string) {
	t.Helper()
	if st.Allowed != allow || st.Denied || st.Reason != reason || st.EvaluationError != "" {
		t.Errorf("%s status %+v, want allowed=%v reason %q", kind, st, allow, reason)
	}
}

func reviewAs(t *testing.T, cfg *rest.Config, user string, groups []string) kubernetes.Interface {
	t.Helper()
	rc := rest.CopyConfig(cfg)
	// The server adds system:authenticated to whoever is impersonated.
	rc.Impersonate = rest.ImpersonationConfig{UserName: user,
		Groups: slices.DeleteFunc(slices.Clone(groups), func(g string) bool { return g == auth.AllAuthenticated })}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// doRequest makes the request a review describes. Its body is empty JSON:
// authorization comes before decoding, so a 403 or anything else tells
// the authorizer's answer.
func reviewDoRequest(ctx context.Context, cs kubernetes.Interface, spec authorizationv1.SubjectAccessReviewSpec) error {
	rc := cs.CoreV1().RESTClient()
	if nra := spec.NonResourceAttributes; nra != nil {
		return rc.Get().AbsPath(nra.Path).Do(ctx).Error()
	}
	ra := spec.ResourceAttributes
	path := "/api/v1"
	if ra.Group != "" {
		path = "/apis/" + ra.Group + "/v1"
	}
	if ra.Namespace != "" {
		path += "/namespaces/" + ra.Namespace
	}
	path += "/" + ra.Resource
	if ra.Name != "" {
		path += "/" + ra.Name
	}
	if ra.Subresource != "" {
		path += "/" + ra.Subresource
	}
	var req *rest.Request
	switch ra.Verb {
	case "get", "list":
		req = rc.Get()
	case "create":
		req = rc.Post().Body([]byte("{}")).SetHeader("Content-Type", "application/json")
	case "delete":
		req = rc.Delete()
	default:
		return errors.New("verb not covered: " + ra.Verb)
	}
	return req.AbsPath(path).Do(ctx).Error()
}

// TestReviewRequestErrors: what a malformed question gets, as upstream
// answers it.
func TestReviewRequestErrors(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	az := c.Client.AuthorizationV1()
	cases := []struct {
		name     string
		do       func() error
		wantCode int32
		wantMsg  string
	}{
		{"SAR without attributes", func() error {
			_, err := az.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane"}}, metav1.CreateOptions{})
			return err
		}, 422, "spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"},
		{"SAR without subject", func() error {
			_, err := az.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/x", Verb: "get"}}}, metav1.CreateOptions{})
			return err
		}, 422, `spec.user: Invalid value: "": at least one of user or group must be specified`},
		{"SAR with a name", func() error {
			_, err := az.SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Name: "x"},
				Spec: authorizationv1.SubjectAccessReviewSpec{User: "u", NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/x", Verb: "get"}}}, metav1.CreateOptions{})
			return err
		}, 422, "metadata: Invalid value"},
		{"local SAR about another namespace", func() error {
			_, err := az.LocalSubjectAccessReviews("team").Create(ctx, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: "jane",
				ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "other"}}}, metav1.CreateOptions{})
			return err
		}, 422, `spec.resourceAttributes.namespace: Invalid value: "other": must match metadata.namespace`},
		{"rules review without namespace", func() error {
			_, err := az.SelfSubjectRulesReviews().Create(ctx, &authorizationv1.SelfSubjectRulesReview{}, metav1.CreateOptions{})
			return err
		}, 400, "no namespace on request"},
		{"token review without token", func() error {
			_, err := c.Client.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{}, metav1.CreateOptions{})
			return err
		}, 400, "token is required for TokenReview in authentication"},
		{"reviews cannot be listed", func() error {
			return c.Client.AuthorizationV1().RESTClient().Get().AbsPath("/apis/authorization.k8s.io/v1/subjectaccessreviews").Do(ctx).Error()
		}, 405, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			var se apierrors.APIStatus
			if !errors.As(err, &se) || se.Status().Code != tc.wantCode || !strings.Contains(se.Status().Message, tc.wantMsg) {
				t.Fatalf("err = %v, want %d with %q", err, tc.wantCode, tc.wantMsg)
			}
		})
	}
}

// reviewKubectlBin is the kubectl the tests drive: $KUBECTL, else
// /usr/bin/kubectl, else the one on PATH.
func reviewKubectlBin(t *testing.T) string {
	t.Helper()
	for _, bin := range []string{os.Getenv("KUBECTL"), "/usr/bin/kubectl", "kubectl"} {
		if bin == "" {
			continue
		}
		if p, err := exec.LookPath(bin); err == nil {
			return p
		}
	}
	t.Skip("kubectl not found: set $KUBECTL")
	return ""
}

// kubectl runs the real kubectl and returns its stdout and exit code.
func reviewKubectl(t *testing.T, kubeconfig string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, reviewKubectlBin(t), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return stdout.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("kubectl %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String(), 0
}

// TestKubectlAuth: `kubectl auth can-i` (one question and --list) and
// `kubectl auth whoami` print what they print against Kubernetes.
func TestKubectlAuth(t *testing.T) {
	reviewKubectlBin(t)
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	kc := c.Server.Kubeconfig
	if _, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	if out, code := reviewKubectl(t, kc, "auth", "can-i", "create", "pods", "--as=jane", "-n", "ns"); out != "no\n" || code != 1 {
		t.Errorf("can-i before binding: %q exit %d, want \"no\" exit 1", out, code)
	}
	if out, code := reviewKubectl(t, kc, "auth", "can-i", "create", "pods"); out != "yes\n" || code != 0 {
		t.Errorf("admin can-i: %q exit %d", out, code)
	}
	if _, err := c.Client.RbacV1().RoleBindings("ns").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "jane-edit"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "jane"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The binding reaches the authorizer through the watch cache.
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, code := reviewKubectl(t, kc, "auth", "can-i", "create", "pods", "--as=jane", "-n", "ns")
		if out == "yes\n" && code == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("can-i after binding: %q exit %d", out, code)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if out, code := reviewKubectl(t, kc, "auth", "can-i", "create", "pods", "--as=jane", "-n", "default"); out != "no\n" || code != 1 {
		t.Errorf("can-i in another namespace: %q exit %d", out, code)
	}
	if out, code := reviewKubectl(t, kc, "auth", "can-i", "get", "/healthz", "--as=jane"); out != "yes\n" || code != 0 {
		t.Errorf("can-i non-resource: %q exit %d", out, code)
	}

	t.Run("list", func(t *testing.T) {
		out, code := reviewKubectl(t, kc, "auth", "can-i", "--list", "--as=jane", "-n", "ns")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if got := strings.Fields(lines[0]); !slices.Equal(got, []string{"Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"}) {
			t.Errorf("header %q", lines[0])
		}
		// kubectl merges the rules of one resource into a row; check the
		// verbs each row must have.
		verbsOf := map[string]string{}
		for _, l := range lines[1:] {
			if f := strings.Fields(l); len(f) > 0 && !strings.HasPrefix(f[0], "[") {
				verbsOf[f[0]] = l[strings.LastIndex(l, "["):]
			}
		}
		for res, verbs := range map[string][]string{
			"pods":             {"create", "delete", "get", "list", "watch"},
			"secrets":          {"create", "get"},
			"deployments.apps": {"create", "patch", "get"},
			"selfsubjectaccessreviews.authorization.k8s.io": {"create"},
		} {
			got := strings.Fields(strings.Trim(verbsOf[res], "[]"))
			for _, v := range verbs {
				if !slices.Contains(got, v) {
					t.Errorf("%s: verbs %q lack %s\n%s", res, verbsOf[res], v, out)
				}
			}
		}
		if _, ok := verbsOf["roles.rbac.authorization.k8s.io"]; ok {
			t.Errorf("edit does not grant roles:\n%s", out)
		}
		if other, _ := reviewKubectl(t, kc, "auth", "can-i", "--list", "--as=jane", "-n", "default"); strings.Contains(other, "deployments.apps") {
			t.Errorf("namespace rules leaked into another namespace:\n%s", other)
		}
	})

	t.Run("whoami", func(t *testing.T) {
		out, code := reviewKubectl(t, kc, "auth", "whoami")
		if code != 0 {
			t.Fatalf("exit %d: %s", code, out)
		}
		rows := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(l)
			rows[f[0]] = strings.Join(f[1:], " ")
		}
		if rows["ATTRIBUTE"] != "VALUE" || rows["Username"] != "rudder-admin" || rows["Groups"] != "[system:masters system:authenticated]" {
			t.Errorf("whoami:\n%s", out)
		}
		out, _ = reviewKubectl(t, kc, "auth", "whoami", "--as=jane", "--as-group=devs", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}")
		if out != `jane ["devs","system:authenticated"]` {
			t.Errorf("whoami as jane: %q", out)
		}
	})
}
