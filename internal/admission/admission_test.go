package admission

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/auth"
)

// namespaces is a NamespaceGetter over a fixed set, our own interface.
type namespaces map[string]*corev1.Namespace

func (n namespaces) GetNamespace(_ context.Context, name string) (*corev1.Namespace, error) {
	return n[name], nil
}

func TestNamespaceLifecycle(t *testing.T) {
	now := metav1.Now()
	plugin := NamespaceLifecycle{
		Namespaces: namespaces{
			"live":  {ObjectMeta: metav1.ObjectMeta{Name: "live"}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			"dying": {ObjectMeta: metav1.ObjectMeta{Name: "dying", DeletionTimestamp: &now}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating}},
		},
		Immortal: []string{"default", "kube-system"},
	}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	nsRes := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	cases := []struct {
		name  string
		attrs Attributes
		check func(error) bool
	}{
		{"create in a live namespace", Attributes{Operation: Create, Resource: pods, Namespace: "live", Name: "p"}, isNil},
		{"create in a missing namespace", Attributes{Operation: Create, Resource: pods, Namespace: "gone", Name: "p"}, apierrors.IsNotFound},
		{"create in a terminating namespace", Attributes{Operation: Create, Resource: pods, Namespace: "dying", Name: "p"}, apierrors.IsForbidden},
		{"update in a terminating namespace goes on", Attributes{Operation: Update, Resource: pods, Namespace: "dying", Name: "p"}, isNil},
		{"delete of an immortal namespace", Attributes{Operation: Delete, Resource: nsRes, Name: "kube-system"}, apierrors.IsForbidden},
		{"delete of an ordinary namespace", Attributes{Operation: Delete, Resource: nsRes, Name: "live"}, isNil},
		{"cluster-scoped objects are not checked", Attributes{Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Name: "n"}, isNil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := plugin.Validate(context.Background(), &tc.attrs); !tc.check(err) {
				t.Fatalf("unexpected result: %v", err)
			}
		})
	}
	t.Run("terminating message is upstream's", func(t *testing.T) {
		err := plugin.Validate(context.Background(), &Attributes{Operation: Create, Resource: pods, Namespace: "dying", Name: "p"})
		want := `pods "p" is forbidden: unable to create new content in namespace dying because it is being terminated`
		if err == nil || err.Error() != want {
			t.Fatalf("got %v", err)
		}
	})
}

func isNil(err error) bool { return err == nil }

// recordingChecker records which check the plugin asked for.
type recordingChecker struct{ calls []string }

func (r *recordingChecker) CheckRole(_ *auth.User, ns, name string, _ []rbacv1.PolicyRule) error {
	r.calls = append(r.calls, "role "+ns+"/"+name)
	return errors.New("denied")
}

func (r *recordingChecker) CheckBinding(_ *auth.User, ns, name string, ref rbacv1.RoleRef) error {
	r.calls = append(r.calls, "binding "+ns+"/"+name+"->"+ref.Name)
	return nil
}

func TestRBACEscalationRoutesToChecks(t *testing.T) {
	rec := &recordingChecker{}
	plugin := RBACEscalation{Checker: rec}
	rbacRes := func(r string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: rbacv1.GroupName, Version: "v1", Resource: r}
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "r"}}
	if err := plugin.Validate(context.Background(), &Attributes{Operation: Create, Resource: rbacRes("roles"), Object: role}); err == nil {
		t.Fatal("the checker's denial must be returned")
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "b"}, RoleRef: rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"}}
	if err := plugin.Validate(context.Background(), &Attributes{Operation: Update, Resource: rbacRes("clusterrolebindings"), Object: crb}); err != nil {
		t.Fatal(err)
	}
	// Deletes and other groups are not checked.
	plugin.Validate(context.Background(), &Attributes{Operation: Delete, Resource: rbacRes("roles"), OldObject: role})
	plugin.Validate(context.Background(), &Attributes{Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: &corev1.Pod{}})
	want := "[role demo/r binding /b->view]"
	if got := fmtCalls(rec.calls); got != want {
		t.Fatalf("calls %s, want %s", got, want)
	}
}

func fmtCalls(calls []string) string { return "[" + strings.Join(calls, " ") + "]" }
