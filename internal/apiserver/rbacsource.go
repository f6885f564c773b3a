package apiserver

import (
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rudder-dev/rudder/internal/auth"
)

// RBACSource returns the server's roles and bindings, read from its watch
// caches, for the RBAC authorizer: authorization costs no etcd read.
func (s *Server) RBACSource() auth.RBACSource { return rbacSource{s} }

type rbacSource struct{ s *Server }

func (r rbacSource) handler(resource string) *resourceHandler {
	return r.s.handlers[rbacv1.SchemeGroupVersion.WithResource(resource)]
}

func (r rbacSource) GetRole(namespace, name string) *rbacv1.Role {
	h := r.handler("roles")
	if o := h.cache.get(h.key(namespace, name)); o != nil {
		return o.obj.(*rbacv1.Role)
	}
	return nil
}

func (r rbacSource) GetClusterRole(name string) *rbacv1.ClusterRole {
	h := r.handler("clusterroles")
	if o := h.cache.get(h.key("", name)); o != nil {
		return o.obj.(*rbacv1.ClusterRole)
	}
	return nil
}

func (r rbacSource) ListRoleBindings(namespace string) []*rbacv1.RoleBinding {
	h := r.handler("rolebindings")
	items, _ := h.cache.list(h.prefix(namespace), nil)
	out := make([]*rbacv1.RoleBinding, len(items))
	for i, o := range items {
		out[i] = o.obj.(*rbacv1.RoleBinding)
	}
	return out
}

func (r rbacSource) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	h := r.handler("clusterrolebindings")
	items, _ := h.cache.list(h.prefix(""), nil)
	out := make([]*rbacv1.ClusterRoleBinding, len(items))
	for i, o := range items {
		out[i] = o.obj.(*rbacv1.ClusterRoleBinding)
	}
	return out
}
