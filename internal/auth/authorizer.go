package auth

import (
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// AuthorizerFunc adapts a function to Authorizer.
type AuthorizerFunc func(a Attributes) (Decision, string, error)

func (f AuthorizerFunc) Authorize(a Attributes) (Decision, string, error) { return f(a) }

// NewDefaultAuthorizer is the authorization chain with no node relations:
// NewNodeRBACAuthorizer(src, nil). Nodes keep their fixed rules but reach
// secrets and the like only through RBAC; for evaluators that have no
// view of pods, such as the CSR approver's.
func NewDefaultAuthorizer(src RBACSource) Authorizer {
	return NewNodeRBACAuthorizer(src, nil)
}

// NewNodeRBACAuthorizer is the authorization chain rudder runs, upstream's
// --authorization-mode=Node,RBAC behind the system:masters short cut:
// members of system:masters are allowed everything, then the Node
// authorizer decides for kubelets (system:node:<name>) over nodes, then
// RBAC. It is the one place the chain is put together.
func NewNodeRBACAuthorizer(src RBACSource, nodes NodeRelations) Authorizer {
	return NewUnionAuthorizer(
		NewPrivilegedGroupsAuthorizer(SystemPrivilegedGroup),
		NewNodeAuthorizer(nodes),
		NewRBACAuthorizer(src),
	)
}

// NewPrivilegedGroupsAuthorizer allows any request from a member of one of
// groups and has no opinion otherwise. It exists so that system:masters
// keeps working when RBAC objects are missing or broken: it is how an
// administrator repairs a cluster whose cluster-admin binding was deleted.
func NewPrivilegedGroupsAuthorizer(groups ...string) Authorizer {
	groups = slices.Clone(groups)
	return AuthorizerFunc(func(a Attributes) (Decision, string, error) {
		if a.User != nil {
			for _, g := range a.User.Groups {
				if slices.Contains(groups, g) {
					return DecisionAllow, "", nil
				}
			}
		}
		return DecisionNoOpinion, "", nil
	})
}

// NewUnionAuthorizer asks each authorizer in turn; the first Allow or Deny
// wins, with that authorizer's reason and error. When all have no opinion
// their reasons are joined with newlines and their errors aggregated, as
// upstream does, so the 403 shows why every authorizer declined.
func NewUnionAuthorizer(authorizers ...Authorizer) Authorizer {
	authorizers = slices.Clone(authorizers)
	return AuthorizerFunc(func(a Attributes) (Decision, string, error) {
		var reasons []string
		var errs []error
		for _, az := range authorizers {
			d, reason, err := az.Authorize(a)
			if d == DecisionAllow || d == DecisionDeny {
				return d, reason, err
			}
			if err != nil {
				errs = append(errs, err)
			}
			if reason != "" {
				reasons = append(reasons, reason)
			}
		}
		return DecisionNoOpinion, strings.Join(reasons, "\n"), utilerrors.NewAggregate(errs)
	})
}

// Authorize asks az about a and turns the answer into what the server
// writes back: nil when allowed; a 500 when the authorizer failed and did
// not allow (an allow wins over an evaluation error, as upstream: RBAC may
// fail to read one binding yet be allowed by another); otherwise a
// *ForbiddenError carrying upstream's 403 message.
func Authorize(az Authorizer, a Attributes) error {
	d, reason, err := az.Authorize(a)
	if d == DecisionAllow {
		return nil
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	return &ForbiddenError{Attributes: a, Reason: reason}
}
