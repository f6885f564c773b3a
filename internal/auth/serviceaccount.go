package auth

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/validation"
)

// Names that tie a ServiceAccount object to the user its tokens authenticate
// as. RBAC subjects of kind ServiceAccount, impersonation of
// "system:serviceaccount:ns:name" and the service-account token
// authenticator all have to agree on them.
const (
	ServiceAccountUsernamePrefix = "system:serviceaccount:"
	AllServiceAccountsGroup      = "system:serviceaccounts"
	ServiceAccountGroupPrefix    = "system:serviceaccounts:"
)

// ServiceAccountUsername is the user name a service account's tokens
// authenticate as.
func ServiceAccountUsername(namespace, name string) string {
	return ServiceAccountUsernamePrefix + namespace + ":" + name
}

// ServiceAccountGroups are the groups every service account of namespace
// belongs to.
func ServiceAccountGroups(namespace string) []string {
	return []string{AllServiceAccountsGroup, ServiceAccountGroupPrefix + namespace}
}

// SplitServiceAccountUsername parses "system:serviceaccount:<ns>:<name>".
// Like upstream it insists on a valid namespace (DNS label) and service
// account name (DNS subdomain): "system:serviceaccount:a:b:c" is then an
// ordinary user name, and impersonating it is checked against "users".
func SplitServiceAccountUsername(username string) (namespace, name string, ok bool) {
	rest, found := strings.CutPrefix(username, ServiceAccountUsernamePrefix)
	if !found {
		return "", "", false
	}
	namespace, name, found = strings.Cut(rest, ":")
	if !found || strings.Contains(name, ":") {
		return "", "", false
	}
	if len(validation.ValidateNamespaceName(namespace, false)) != 0 ||
		len(validation.ValidateServiceAccountName(name, false)) != 0 {
		return "", "", false
	}
	return namespace, name, true
}

// matchesServiceAccount reports whether username is the service account
// namespace/name, without building the full user name: RBAC calls it for
// every ServiceAccount subject of every binding on every request.
func matchesServiceAccount(namespace, name, username string) bool {
	rest, ok := strings.CutPrefix(username, ServiceAccountUsernamePrefix)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, namespace)
	if !ok {
		return false
	}
	rest, ok = strings.CutPrefix(rest, ":")
	return ok && rest == name
}
