package admission

import (
	"context"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/rudder-dev/rudder/internal/auth"
)

// EscalationChecker decides whether a user may write a role or binding
// (auth.EscalationCheck implements it).
type EscalationChecker interface {
	CheckRole(u *auth.User, namespace, name string, rules []rbacv1.PolicyRule) error
	CheckBinding(u *auth.User, namespace, name string, ref rbacv1.RoleRef) error
}

// RBACEscalation stops users from granting, through roles and bindings,
// permissions they do not hold. Upstream enforces this in its RBAC storage
// rather than as a named plugin; it is always on and cannot be disabled.
type RBACEscalation struct {
	Checker EscalationChecker
}

func (RBACEscalation) Name() string { return "RBACEscalation" }

// Validate implements Validator.
func (p RBACEscalation) Validate(_ context.Context, a *Attributes) error {
	if a.Resource.Group != rbacv1.GroupName || (a.Operation != Create && a.Operation != Update) || a.Subresource != "" {
		return nil
	}
	switch obj := a.Object.(type) {
	case *rbacv1.Role:
		return p.Checker.CheckRole(a.User, obj.Namespace, obj.Name, obj.Rules)
	case *rbacv1.ClusterRole:
		return p.Checker.CheckRole(a.User, "", obj.Name, obj.Rules)
	case *rbacv1.RoleBinding:
		return p.Checker.CheckBinding(a.User, obj.Namespace, obj.Name, obj.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return p.Checker.CheckBinding(a.User, "", obj.Name, obj.RoleRef)
	}
	return nil
}
