package auth

import (
	"net/http"

	rbacv1 "k8s.io/api/rbac/v1"
)

// User is an authenticated identity, as Kubernetes' user.Info describes it.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// Well-known users and groups.
const (
	Anonymous             = "system:anonymous"
	AllUnauthenticated    = "system:unauthenticated"
	AllAuthenticated      = "system:authenticated"
	SystemPrivilegedGroup = "system:masters"
)

// Authenticator identifies the user behind a request. It returns ok=false
// when the request carries no credentials this authenticator understands,
// and an error when it carries credentials that are invalid (a 401).
// Implementations are safe for concurrent use.
type Authenticator interface {
	AuthenticateRequest(r *http.Request) (u *User, ok bool, err error)
}

// Attributes is what an authorizer decides on: who asks to do what to
// which object. For non-resource requests (e.g. /healthz) ResourceRequest
// is false and Path is set.
type Attributes struct {
	User            *User
	Verb            string // get list watch create update patch delete deletecollection; or impersonate, bind, escalate, use
	ResourceRequest bool
	APIGroup        string
	APIVersion      string
	Resource        string
	Subresource     string
	Namespace       string
	Name            string
	Path            string
}

// Decision is an authorizer's answer.
type Decision int

const (
	DecisionNoOpinion Decision = iota
	DecisionAllow
	DecisionDeny
)

// Authorizer decides whether a request may proceed. reason explains a
// denial (or an allow) in the words Kubernetes uses in its 403 messages.
// Implementations are safe for concurrent use.
type Authorizer interface {
	Authorize(a Attributes) (d Decision, reason string, err error)
}

// RBACSource is where the RBAC authorizer reads roles and bindings. The API
// server backs it with its watch cache; the returned objects are shared and
// must not be modified. Get methods return nil when the object is absent.
type RBACSource interface {
	GetRole(namespace, name string) *rbacv1.Role
	GetClusterRole(name string) *rbacv1.ClusterRole
	ListRoleBindings(namespace string) []*rbacv1.RoleBinding
	ListClusterRoleBindings() []*rbacv1.ClusterRoleBinding
}
