package auth

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// HasImpersonationHeaders reports whether h asks for impersonation at all,
// so the server can skip Impersonate (and its allocations) on the common
// path.
func HasImpersonationHeaders(h http.Header) bool {
	if h.Get(authenticationv1.ImpersonateUserHeader) != "" ||
		len(h.Values(authenticationv1.ImpersonateGroupHeader)) > 0 ||
		h.Get(authenticationv1.ImpersonateUIDHeader) != "" {
		return true
	}
	for name := range h {
		if strings.HasPrefix(name, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			return true
		}
	}
	return false
}

// Impersonate returns the user a request acts as. With no impersonation
// headers that is requestor itself. Otherwise each requested attribute is
// authorized, for requestor, with verb "impersonate", in upstream's order:
//
//	Impersonate-User: jane                   users "jane"                          (group "")
//	Impersonate-User: system:serviceaccount:ns:sa
//	                                         serviceaccounts "sa" in namespace ns (group "")
//	Impersonate-Uid: 1234                    uids "1234"                           (authentication.k8s.io)
//	Impersonate-Group: devs (repeatable)     groups "devs"                         (group "")
//	Impersonate-Extra-<key>: v (repeatable)  userextras/<key> "v"                  (authentication.k8s.io)
//
// <key> is the header name's remainder lower-cased and %-unescaped, since
// header names are case-insensitive and cannot carry "/". The impersonated user has
// exactly the requested groups, except that a service account with no
// groups requested gets its fixed ones (system:serviceaccounts and
// system:serviceaccounts:<ns>), system:anonymous always gets
// system:unauthenticated, and anyone else gets system:authenticated
// unless system:unauthenticated was requested.
//
// Errors: a *ForbiddenError (403) for the first check that is not allowed,
// whose message is upstream's, e.g.
//
//	users "jane" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope
//
// or a 400 when groups, UID or extras are given without a user.
//
// Impersonate does not modify h. After it succeeds the server should
// remove the headers with DeleteImpersonationHeaders, as upstream does, so
// that they are not forwarded to anything the request is proxied to.
func Impersonate(requestor *User, h http.Header, az Authorizer) (*User, error) {
	wanted, err := wantedUser(h)
	if err != nil {
		return nil, err
	}
	if wanted == nil {
		return requestor, nil
	}
	if requestor == nil {
		return nil, apierrors.NewInternalError(errors.New("no user found for request"))
	}
	// wanted is freshly built from the headers, so it becomes the result;
	// requested keeps the groups asked for, which are what is checked.
	effective, requested := wanted, wanted.Groups

	userAttrs := impersonationAttributes(requestor, "", "users", effective.Name)
	if ns, name, ok := SplitServiceAccountUsername(effective.Name); ok {
		userAttrs.Resource = "serviceaccounts"
		userAttrs.Namespace = ns
		userAttrs.Name = name
		if len(requested) == 0 {
			effective.Groups = ServiceAccountGroups(ns)
		}
	}
	if err := checkImpersonation(az, userAttrs); err != nil {
		return nil, err
	}

	if effective.UID != "" {
		if err := checkImpersonation(az, impersonationAttributes(requestor, authenticationv1.GroupName, "uids", effective.UID)); err != nil {
			return nil, err
		}
	}

	for _, g := range requested {
		if err := checkImpersonation(az, impersonationAttributes(requestor, "", "groups", g)); err != nil {
			return nil, err
		}
	}

	// Sorted so that the same headers always fail on the same check.
	keys := make([]string, 0, len(effective.Extra))
	for k := range effective.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		attrs := impersonationAttributes(requestor, authenticationv1.GroupName, "userextras", "")
		attrs.Subresource = k
		for _, v := range effective.Extra[k] {
			attrs.Name = v
			if err := checkImpersonation(az, attrs); err != nil {
				return nil, err
			}
		}
	}

	if effective.Name == Anonymous {
		effective.Groups = withGroup(effective.Groups, AllUnauthenticated)
	} else if !slices.Contains(effective.Groups, AllUnauthenticated) {
		effective.Groups = withGroup(effective.Groups, AllAuthenticated)
	}
	return effective, nil
}

// DeleteImpersonationHeaders removes every impersonation header from h.
func DeleteImpersonationHeaders(h http.Header) {
	h.Del(authenticationv1.ImpersonateUserHeader)
	h.Del(authenticationv1.ImpersonateGroupHeader)
	h.Del(authenticationv1.ImpersonateUIDHeader)
	for name := range h {
		if strings.HasPrefix(name, authenticationv1.ImpersonateUserExtraHeaderPrefix) {
			delete(h, name)
		}
	}
}

// wantedUser reads the impersonation headers into the user they ask for,
// or nil when there are none.
func wantedUser(h http.Header) (*User, error) {
	u := &User{
		Name:   h.Get(authenticationv1.ImpersonateUserHeader),
		UID:    h.Get(authenticationv1.ImpersonateUIDHeader),
		Groups: slices.Clone(h.Values(authenticationv1.ImpersonateGroupHeader)),
	}
	hasExtra := false
	for name, values := range h {
		rest, ok := strings.CutPrefix(name, authenticationv1.ImpersonateUserExtraHeaderPrefix)
		if !ok {
			continue
		}
		hasExtra = true
		if len(values) == 0 {
			continue
		}
		key := unescapeExtraKey(strings.ToLower(rest))
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[key] = append(u.Extra[key], values...)
	}
	if u.Name == "" {
		if u.UID != "" || len(u.Groups) > 0 || hasExtra {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("requested %#v without impersonating a user name", u))
		}
		return nil, nil
	}
	return u, nil
}

// unescapeExtraKey undoes the %-encoding clients use to put characters
// such as "/" into a header name. A malformed escape is kept as written:
// upstream records such keys rather than rejecting the request.
func unescapeExtraKey(key string) string {
	if k, err := url.PathUnescape(key); err == nil {
		return k
	}
	return key
}

// impersonationAttributes is the question "may requestor impersonate this
// resource/name?". users, groups and serviceaccounts are in the core group
// and uids and userextras in authentication.k8s.io, which is what RBAC
// rules granting impersonation have to name.
func impersonationAttributes(requestor *User, group, resource, name string) Attributes {
	return Attributes{
		User:            requestor,
		Verb:            "impersonate",
		ResourceRequest: true,
		APIGroup:        group,
		APIVersion:      "v1",
		Resource:        resource,
		Name:            name,
	}
}

// checkImpersonation authorizes one impersonation check. Unlike a normal
// request, an authorizer error here is a 403, not a 500, with the error in
// the message: upstream treats "could not decide" as "may not impersonate".
func checkImpersonation(az Authorizer, a Attributes) error {
	d, reason, err := az.Authorize(a)
	if d == DecisionAllow {
		return nil
	}
	var fe *ForbiddenError
	if errors.As(err, &fe) {
		return fe
	}
	switch {
	case err != nil && reason != "":
		reason = fmt.Sprintf("%v: %s", err, reason)
	case err != nil:
		reason = err.Error()
	}
	return &ForbiddenError{Attributes: a, Reason: reason}
}
