package server

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/auth"
)

// netpolReaderRole lets nodes enforce NetworkPolicy (internal/netpolicy):
// a node fences its own pods but matches peers across the cluster, so it
// reads policies, pods and namespaces everywhere. The node authorizer
// grants pods already; policies and namespaces come from this role.
const netpolReaderRole = "system:rudder:network-policy"

func netpolRBACObjects() []runtime.Object {
	meta := metav1.ObjectMeta{Name: netpolReaderRole, Labels: map[string]string{auth.BootstrappingLabel: auth.BootstrappingLabelValue},
		Annotations: map[string]string{auth.AutoUpdateAnnotation: "true"}}
	role := &rbacv1.ClusterRole{ObjectMeta: meta, Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"networking.k8s.io"}, Resources: []string{"networkpolicies"}},
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods", "namespaces"}},
	}}
	role.SetGroupVersionKind(rbacGVK("ClusterRole"))
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: *meta.DeepCopy(),
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: netpolReaderRole},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}}}
	binding.SetGroupVersionKind(rbacGVK("ClusterRoleBinding"))
	return []runtime.Object{role, binding}
}
