package apiserver

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// route sends an authorized request to its handler.
func (s *Server) route(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	if !info.IsResourceRequest {
		s.routeNonResource(w, r, info)
		return
	}
	if info.APIGroup == rmGroup {
		s.serveResourceMetrics(w, r, info) // resourcemetrics_serve.go
		return
	}
	gvr := schema.GroupVersionResource{Group: info.APIGroup, Version: info.APIVersion, Resource: info.Resource}
	if v, ok := s.virtual[gvr]; ok && len(info.Parts) <= 3 {
		if v.res.Computed {
			v.serveComputed(w, r, info)
			return
		}
		v.serveReview(w, r, info)
		return
	}
	h, ok := s.handlerFor(gvr)
	if !ok || (len(info.Parts) > 3 && !isProxyPath(info)) {
		if info.Resource == "" && r.Method == http.MethodGet {
			s.serveDiscovery(w, r, info)
			return
		}
		s.writeError(w, r, notFound())
		return
	}
	if h.deprecation != "" {
		addWarning(w, h.deprecation)
	}
	namespace := info.Namespace
	if h.res.Namespaced {
		// A namespaced object needs its namespace in the path.
		if namespace == "" && info.Name != "" {
			s.writeError(w, r, notFound())
			return
		}
	} else {
		if info.Resource != "namespaces" && namespace != "" {
			s.writeError(w, r, notFound())
			return
		}
		namespace = ""
	}
	if h.custom != nil && !h.crdAdmitRequest(w, r, info) {
		return
	}
	switch sub := info.Subresource; sub {
	case "":
		info.served = true
		h.serveMain(w, r, info, namespace)
	case "status":
		if !h.res.HasStatus {
			s.writeError(w, r, notFound())
			return
		}
		info.served = true
		switch r.Method {
		case http.MethodGet:
			h.get(w, r, namespace, info.Name)
		case http.MethodPut:
			h.update(w, r, namespace, info.Name, "status")
		case http.MethodPatch:
			h.patch(w, r, namespace, info.Name, "status")
		default:
			s.writeError(w, r, methodNotAllowed(r, info))
		}
	case "scale":
		if h.res.Scale == nil {
			s.writeError(w, r, notFound())
			return
		}
		info.served = true
		switch r.Method {
		case http.MethodGet, http.MethodPut, http.MethodPatch:
			h.scale(w, r, namespace, info.Name)
		default:
			s.writeError(w, r, methodNotAllowed(r, info))
		}
	case "approval":
		if h.res.Approval == nil {
			s.writeError(w, r, notFound())
			return
		}
		info.served = true
		switch r.Method {
		case http.MethodGet:
			h.get(w, r, namespace, info.Name)
		case http.MethodPut, http.MethodPatch:
			h.approve(w, r, info.Name)
		default:
			s.writeError(w, r, methodNotAllowed(r, info))
		}
	case "binding":
		if h.res.Resource != "pods" {
			s.writeError(w, r, notFound())
			return
		}
		info.served = true
		if r.Method != http.MethodPost {
			s.writeError(w, r, methodNotAllowed(r, info))
			return
		}
		h.bind(w, r, namespace, info.Name)
	case "token":
		if h.res.Resource != "serviceaccounts" || s.saTokens == nil {
			s.writeError(w, r, notFound())
			return
		}
		info.served = true
		if r.Method != http.MethodPost {
			s.writeError(w, r, methodNotAllowed(r, info))
			return
		}
		h.createToken(w, r, namespace, info.Name)
	case "finalize":
		if h.res.Resource != "namespaces" {
			s.writeError(w, r, notFound())
			return
		}
		info.served = true
		if r.Method != http.MethodPut {
			s.writeError(w, r, methodNotAllowed(r, info))
			return
		}
		h.finalize(w, r, info.Name)
	default:
		// Pod subresources (eviction, ephemeralcontainers, log, exec,
		// attach, portforward, proxy) and service and node proxies.
		if !h.routePodSubresource(w, r, info, namespace) {
			s.writeError(w, r, notFound())
		}
	}
}

func (h *resourceHandler) serveMain(w http.ResponseWriter, r *http.Request, info *requestInfo, namespace string) {
	switch info.Verb {
	case "get":
		h.get(w, r, namespace, info.Name)
	case "list":
		h.list(w, r, namespace)
	case "watch":
		h.watch(w, r, namespace, info.Name)
	case "create":
		if info.Name != "" {
			h.s.writeError(w, r, methodNotAllowed(r, info))
			return
		}
		h.create(w, r, namespace)
	case "update":
		if info.Name == "" {
			h.s.writeError(w, r, methodNotAllowed(r, info))
			return
		}
		h.update(w, r, namespace, info.Name, "")
	case "patch":
		if info.Name == "" {
			h.s.writeError(w, r, methodNotAllowed(r, info))
			return
		}
		h.patch(w, r, namespace, info.Name, "")
	case "delete":
		h.delete(w, r, namespace, info.Name)
	case "deletecollection":
		h.deleteCollection(w, r, namespace)
	default:
		h.s.writeError(w, r, methodNotAllowed(r, info))
	}
}

func (s *Server) routeNonResource(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	p := r.URL.Path
	switch {
	case p == "/version" || p == "/version/":
		s.serveVersion(w, r)
	// /api/v1 has too few segments to be a resource request, like /apis/<group>/<version>.
	case p == "/api" || strings.HasPrefix(p, "/api/") || p == "/apis" || strings.HasPrefix(p, "/apis/"):
		s.serveDiscovery(w, r, info)
	case p == "/healthz" || strings.HasPrefix(p, "/healthz/"):
		s.serveHealth(w, r, "healthz", false)
	case p == "/livez" || strings.HasPrefix(p, "/livez/"):
		s.serveHealth(w, r, "livez", false)
	case p == "/readyz" || strings.HasPrefix(p, "/readyz/"):
		s.serveHealth(w, r, "readyz", true)
	case p == "/openapi/v2" || p == "/openapi/v3" || strings.HasPrefix(p, "/openapi/v3/"):
		s.serveOpenAPI(w, r)
	case p == oidcConfigPath || p == jwksPath:
		s.serveOIDC(w, r, p)
	case p == "/metrics":
		promhttp.HandlerFor(s.metrics, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	case s.cfg.Profiling && strings.HasPrefix(p, "/debug/pprof"):
		servePprof(w, r)
	case p == "/":
		s.serveRootPaths(w, r)
	default:
		s.writeError(w, r, notFound())
	}
}

func notFound() error {
	err := apierrors.NewNotFound(schema.GroupResource{}, "")
	err.ErrStatus.Message = "the server could not find the requested resource"
	err.ErrStatus.Details = &metav1.StatusDetails{}
	return err
}

func methodNotAllowed(r *http.Request, info *requestInfo) error {
	return apierrors.NewMethodNotSupported(schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}, strings.ToLower(r.Method))
}

// lifecycle is what k8s.io/api's generated lifecycle methods offer; only a
// few kinds have them (core/v1 Endpoints, deprecated in 1.33).
type lifecycle interface {
	APILifecycleDeprecated() (major, minor int)
	APILifecycleReplacement() schema.GroupVersionKind
}

// deprecationWarning is the warning upstream attaches to every request for
// a kind deprecated at or before the served version, so kubectl prints
// "Warning: v1 Endpoints is deprecated in v1.33+; use ..." as it does
// against Kubernetes. It is computed once per resource, in New.
func deprecationWarning(res *registry.Resource) string {
	msg := ""
	if l, ok := res.New().(lifecycle); ok {
		major, minor := l.APILifecycleDeprecated()
		served, _ := strconv.Atoi(Version.Minor)
		if major == 1 && minor <= served {
			msg = fmt.Sprintf("%s %s is deprecated in v%d.%d+", res.GroupVersion(), res.Kind, major, minor)
			if gvk := l.APILifecycleReplacement(); !gvk.Empty() {
				msg += fmt.Sprintf("; use %s %s", gvk.GroupVersion(), gvk.Kind)
			}
		}
	}
	return msg
}
