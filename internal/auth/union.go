package auth

import (
	"net/http"
	"slices"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// AuthenticatorConfig configures NewAuthenticator.
type AuthenticatorConfig struct {
	// Authenticators are asked in order; the first that recognises the
	// request's credentials decides who the user is.
	Authenticators []Authenticator

	// Anonymous lets a request that carries no credentials through as
	// user system:anonymous in group system:unauthenticated, for RBAC to
	// decide on (the bootstrap policy lets it read /healthz and /version).
	// Off by default: rudder answers such requests with 401. A request
	// with invalid credentials is a 401 either way.
	Anonymous bool

	// AnonymousPaths, when not empty, limits anonymous access to requests
	// for exactly these paths (say /healthz, /readyz, /livez), like the
	// anonymous conditions of upstream's AuthenticationConfiguration.
	AnonymousPaths []string
}

// NewAuthenticator composes the authentication chain:
//
//  1. Each authenticator is asked in turn. The first ok wins, even when
//     an earlier one returned an error: a request may carry both a stale
//     token and a good certificate.
//  2. The winner's user gets group system:authenticated, unless it is
//     system:anonymous or already has system:authenticated or
//     system:unauthenticated, as upstream does.
//  3. If nobody said ok and somebody returned an error, the result is that
//     error (the server answers 401): bad credentials are never anonymous.
//  4. Otherwise, with Anonymous enabled and the path allowed, the user is
//     system:anonymous; if not, ok=false (401).
//
// The User returned is a fresh value the caller may keep and modify.
func NewAuthenticator(cfg AuthenticatorConfig) Authenticator {
	return &unionAuthenticator{
		authenticators: slices.Clone(cfg.Authenticators),
		anonymous:      cfg.Anonymous,
		anonymousPaths: slices.Clone(cfg.AnonymousPaths),
	}
}

type unionAuthenticator struct {
	authenticators []Authenticator
	anonymous      bool
	anonymousPaths []string
}

func (u *unionAuthenticator) AuthenticateRequest(r *http.Request) (*User, bool, error) {
	var errs []error
	for _, a := range u.authenticators {
		user, ok, err := a.AuthenticateRequest(r)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok && user != nil {
			return withAuthenticatedGroup(user), true, nil
		}
	}
	if len(errs) > 0 {
		return nil, false, utilerrors.NewAggregate(errs)
	}
	if u.anonymous && (len(u.anonymousPaths) == 0 || (r.URL != nil && slices.Contains(u.anonymousPaths, r.URL.Path))) {
		return &User{Name: Anonymous, Groups: []string{AllUnauthenticated}}, true, nil
	}
	return nil, false, nil
}

// withAuthenticatedGroup copies u before adding the group, because an
// authenticator may hand out a user it shares with other requests.
func withAuthenticatedGroup(u *User) *User {
	out := u.DeepCopy()
	if out.Name == Anonymous || slices.Contains(out.Groups, AllAuthenticated) || slices.Contains(out.Groups, AllUnauthenticated) {
		return out
	}
	out.Groups = append(out.Groups, AllAuthenticated)
	return out
}
