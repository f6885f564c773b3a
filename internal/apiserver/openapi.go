package apiserver

import (
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/apiserver/openapi"
	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// openAPI serves /openapi/v2 and /openapi/v3: the schemas of every served
// kind and the paths, verbs and parameters of every served resource, built
// by the openapi package on first request. Clients read them to learn what
// the server supports: `kubectl explain` prints their field docs, kubectl
// checks that writes accept fieldValidation before relying on server-side
// validation, and `kubectl apply` computes strategic merge patches from
// their patch extensions.
type openAPI struct {
	svc *openapi.Service
}

// newOpenAPI describes the resources as discovery lists them (same verbs,
// same subresources), without building any document.
func newOpenAPI(resources []*registry.Resource) *openAPI {
	resources = rmAPIResources(resources) // metrics.k8s.io (resourcemetrics_serve.go)
	rs := make([]openapi.Resource, 0, len(resources))
	for _, res := range resources {
		if !openapi.Describes(res.GroupVersionKind()) {
			// The openapi package describes the kinds k8s.io/api and
			// k8s.io/metrics have Go types and generated definitions for;
			// apiextensions.k8s.io is not one of them.
			continue
		}
		r := openapi.Resource{
			Group: res.Group, Version: res.Version, Resource: res.Resource, Kind: res.Kind,
			Namespaced: res.Namespaced, Verbs: verbsOf(res),
			DeleteReturnsObject: returnsDeletedObject[res.Resource],
		}
		for _, sub := range subresourcesOf(res) {
			r.Subresources = append(r.Subresources, openapi.Subresource{
				Name:  sub.name,
				Kind:  schema.GroupVersionKind{Group: sub.kind.Group, Version: sub.kind.Version, Kind: sub.kind.Kind},
				Verbs: sub.verbs,
			})
		}
		rs = append(rs, r)
	}
	return &openAPI{svc: openapi.New(openapi.Config{Resources: rs, Version: Version.GitVersion})}
}

func (s *Server) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	if s.serveCRDOpenAPI(w, r) {
		return
	}
	if !s.openapi.svc.Serve(w, r) {
		s.writeError(w, r, notFound())
	}
}
