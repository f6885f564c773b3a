package certificates

import (
	"context"
	"fmt"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/controller"
)

// AccessReviewer answers a SubjectAccessReview: may spec's user do what
// spec's attributes say? It is how the approver checks a requester's
// permission; the approver owns the interface, so that where the answer
// comes from can change without it. Implementations are safe for
// concurrent use; an error means no answer (the approver retries), never
// a denial.
type AccessReviewer interface {
	Review(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (allowed bool, err error)
}

// APIReviewer posts each review to the API server's
// authorization.k8s.io/v1 SubjectAccessReviews, as upstream's approver
// does. Use it (NewApprovingDescriptor(APIReviewer)) once the API server
// serves that resource.
func APIReviewer(cx *controller.Context) AccessReviewer {
	return apiReviewer{client: cx.Client}
}

type apiReviewer struct{ client kubernetes.Interface }

func (r apiReviewer) Review(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
	sar, err := r.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("subject access review: %w", err)
	}
	return sar.Status.Allowed, nil
}

// InProcessReviewer evaluates reviews with the API server's own
// authorization chain (system:masters, then RBAC) over RBAC objects read
// through shared informers, so it sees what the API server sees, a watch
// event later. It requests the four RBAC informers.
func InProcessReviewer(cx *controller.Context) AccessReviewer {
	rbac := cx.Informers.Rbac().V1()
	src := &informerRBAC{
		roles:               rbac.Roles().Lister(),
		clusterRoles:        rbac.ClusterRoles().Lister(),
		roleBindings:        rbac.RoleBindings().Lister(),
		clusterRoleBindings: rbac.ClusterRoleBindings().Lister(),
	}
	// Listers alone do not start informers: ask for them.
	rbac.Roles().Informer()
	rbac.ClusterRoles().Informer()
	rbac.RoleBindings().Informer()
	rbac.ClusterRoleBindings().Informer()
	return inProcessReviewer{authorizer: auth.NewDefaultAuthorizer(src)}
}

type inProcessReviewer struct{ authorizer auth.Authorizer }

func (r inProcessReviewer) Review(_ context.Context, spec authorizationv1.SubjectAccessReviewSpec) (bool, error) {
	u := &auth.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	a := auth.Attributes{User: u}
	if ra := spec.ResourceAttributes; ra != nil {
		a.ResourceRequest = true
		a.Verb, a.APIGroup, a.APIVersion, a.Resource = ra.Verb, ra.Group, ra.Version, ra.Resource
		a.Subresource, a.Namespace, a.Name = ra.Subresource, ra.Namespace, ra.Name
	} else if nra := spec.NonResourceAttributes; nra != nil {
		a.Verb, a.Path = nra.Verb, nra.Path
	}
	d, _, err := r.authorizer.Authorize(a)
	if d == auth.DecisionAllow {
		return true, nil
	}
	return false, err
}

// informerRBAC is auth.RBACSource over listers. Objects are the
// informers' shared copies, which the authorizer only reads.
type informerRBAC struct {
	roles               rbaclisters.RoleLister
	clusterRoles        rbaclisters.ClusterRoleLister
	roleBindings        rbaclisters.RoleBindingLister
	clusterRoleBindings rbaclisters.ClusterRoleBindingLister
}

func (s *informerRBAC) GetRole(namespace, name string) *rbacv1.Role {
	r, err := s.roles.Roles(namespace).Get(name)
	if err != nil {
		return nil
	}
	return r
}

func (s *informerRBAC) GetClusterRole(name string) *rbacv1.ClusterRole {
	r, err := s.clusterRoles.Get(name)
	if err != nil {
		return nil
	}
	return r
}

func (s *informerRBAC) ListRoleBindings(namespace string) []*rbacv1.RoleBinding {
	out, _ := s.roleBindings.RoleBindings(namespace).List(labels.Everything())
	return out
}

func (s *informerRBAC) ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	out, _ := s.clusterRoleBindings.List(labels.Everything())
	return out
}
