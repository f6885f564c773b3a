package registry

import (
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func rbacResources() []*Resource {
	const g = "rbac.authorization.k8s.io"
	return []*Resource{
		{Group: g, Version: "v1", Resource: "clusterrolebindings", Kind: "ClusterRoleBinding", Singular: "clusterrolebinding",
			New:     func() runtime.Object { return &rbacv1.ClusterRoleBinding{} },
			Default: defaultClusterRoleBinding, Validate: validateClusterRoleBinding, ValidateUpdate: validateClusterRoleBindingUpdate,
			Table: clusterRoleBindingTable},
		{Group: g, Version: "v1", Resource: "clusterroles", Kind: "ClusterRole", Singular: "clusterrole",
			New:      func() runtime.Object { return &rbacv1.ClusterRole{} },
			Validate: validateClusterRole, ValidateUpdate: validateClusterRoleUpdate, Table: roleTable},
		{Group: g, Version: "v1", Resource: "rolebindings", Kind: "RoleBinding", Singular: "rolebinding", Namespaced: true,
			New:     func() runtime.Object { return &rbacv1.RoleBinding{} },
			Default: defaultRoleBinding, Validate: validateRoleBinding, ValidateUpdate: validateRoleBindingUpdate,
			Table: roleBindingTable},
		{Group: g, Version: "v1", Resource: "roles", Kind: "Role", Singular: "role", Namespaced: true,
			New:      func() runtime.Object { return &rbacv1.Role{} },
			Validate: validateRole, ValidateUpdate: validateRoleUpdate, Table: roleTable},
	}
}
