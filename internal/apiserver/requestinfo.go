package apiserver

import (
	"net/http"
	"strings"
)

// requestInfo is what a request path and method mean in Kubernetes terms.
// It is computed once, before authorization, and carried through the
// handler chain.
type requestInfo struct {
	IsResourceRequest bool
	Path              string
	Verb              string // get list watch create update patch delete deletecollection
	APIPrefix         string // "api" or "apis"
	APIGroup          string
	APIVersion        string
	Namespace         string
	Resource          string
	Subresource       string
	Name              string
	// Parts are the path segments after the namespace/resource prefix.
	Parts []string
	// served is set by route once the path names a resource and
	// subresource this server serves. Metrics label requests by resource
	// only then: the path is the client's, and label values it could mint
	// freely would grow the metrics without bound (or, not being UTF-8,
	// panic in the Prometheus client).
	served bool
}

// lowerMethod is strings.ToLower(method), without an allocation for the
// methods of the API.
func lowerMethod(method string) string {
	switch method {
	case http.MethodGet:
		return "get"
	case http.MethodPost:
		return "post"
	case http.MethodPut:
		return "put"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return strings.ToLower(method)
}

// parseRequestInfo maps a path to its resource and verb, following
// upstream's rules:
//
//	/api/v1/namespaces/{ns}/{resource}/{name}/{subresource}
//	/apis/{group}/{version}/{resource}/{name}
//	/api/v1/watch/...                     (legacy watch paths)
//
// Anything else is a non-resource request, authorized by its path.
func parseRequestInfo(r *http.Request) *requestInfo {
	info := &requestInfo{Path: r.URL.Path, Verb: lowerMethod(r.Method)}
	parts := splitPath(r.URL.Path)
	if len(parts) < 3 || (parts[0] != "api" && parts[0] != "apis") {
		return info
	}
	info.APIPrefix = parts[0]
	parts = parts[1:]
	if info.APIPrefix == "apis" {
		if len(parts) < 3 {
			return info
		}
		info.APIGroup = parts[0]
		parts = parts[1:]
	}
	info.APIVersion = parts[0]
	parts = parts[1:]
	info.IsResourceRequest = true

	watchPath := false
	if len(parts) > 0 && parts[0] == "watch" {
		watchPath = true
		parts = parts[1:]
	}
	switch r.Method {
	case http.MethodPost:
		info.Verb = "create"
	case http.MethodGet, http.MethodHead:
		info.Verb = "get"
	case http.MethodPut:
		info.Verb = "update"
	case http.MethodPatch:
		info.Verb = "patch"
	case http.MethodDelete:
		info.Verb = "delete"
	default:
		info.Verb = ""
	}
	// /namespaces/{ns}/{resource}... addresses objects in a namespace, but
	// /namespaces/{name} and /namespaces/{name}/{status,finalize} address
	// the namespace itself. Either way the namespace attribute is set, as
	// upstream reports it to authorizers: a RoleBinding in "demo" may grant
	// reading namespace "demo".
	if len(parts) > 1 && parts[0] == "namespaces" {
		info.Namespace = parts[1]
		if len(parts) > 2 && parts[2] != "finalize" && parts[2] != "status" {
			parts = parts[2:]
		}
	}
	info.Parts = parts
	if len(parts) > 0 {
		info.Resource = parts[0]
	}
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = parts[2]
	}
	if info.Verb == "get" && info.Name == "" {
		info.Verb = "list"
	}
	if watchPath || ((info.Verb == "list" || info.Verb == "get") && isTrue(r.URL.Query().Get("watch"))) {
		if info.Verb == "list" || info.Verb == "get" {
			info.Verb = "watch"
		}
	}
	if info.Verb == "delete" && info.Name == "" {
		info.Verb = "deletecollection"
	}
	return info
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

func isTrue(s string) bool { return s == "true" || s == "1" }
