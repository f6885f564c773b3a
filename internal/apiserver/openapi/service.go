package openapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"strings"
	"sync"

	"github.com/NYTimes/gziphandler"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Config is what the documents describe.
type Config struct {
	// Resources are the served resources, in discovery order.
	Resources []Resource
	// Version is info.version of every document: the server's version.
	Version string
}

// Service serves /openapi/v2 and /openapi/v3. It builds each document on
// first request and keeps the bytes; it is safe for concurrent use.
type Service struct {
	cfg     Config
	v2      http.Handler
	v3      *handler3.OpenAPIService
	v3Paths map[string]bool
	// v3Docs builds every v3 document at once, on first use: they share
	// one set of definitions, which the builder extends in place, so they
	// are built one after the other.
	v3Docs func() (map[string]*spec3.OpenAPI, error)
}

// New returns the service for cfg. It builds nothing: that is left to the
// first request, so the server's start-up does not pay for documents that
// no client may ask for.
func New(cfg Config) *Service {
	s := &Service{cfg: cfg, v3Paths: map[string]bool{}}
	s.v3Docs = sync.OnceValues(s.buildV3)

	// kube-openapi's v2 handler negotiates JSON or protobuf, sets the ETag
	// (a SHA-512 of the JSON), answers If-None-Match with 304 and gzips.
	v2 := handler.NewOpenAPIServiceLazy(cached.Once(cached.Func(func() (*spec.Swagger, string, error) {
		doc, err := s.BuildV2()
		return doc, "built", err
	})))
	mux := &pathMux{}
	v2.RegisterOpenAPIVersionedService("/openapi/v2", mux)
	s.v2 = mux.handlers["/openapi/v2"]

	// The v3 handler hashes each document into the index's URLs, and
	// answers a URL with the current hash with immutable caching headers.
	s.v3 = handler3.NewOpenAPIService()
	for _, p := range v3Paths(cfg.Resources) {
		s.v3Paths[p] = true
		s.v3.UpdateGroupVersionLazy(p, cached.Func(func() (*spec3.OpenAPI, string, error) {
			docs, err := s.v3Docs()
			if err != nil {
				return nil, "", err
			}
			// The etag only tells the handler's caches whether to
			// re-encode; the documents never change once built.
			return docs[p], "built", nil
		}))
	}
	return s
}

// pathMux records the handlers kube-openapi registers.
type pathMux struct{ handlers map[string]http.Handler }

func (m *pathMux) Handle(path string, h http.Handler) {
	if m.handlers == nil {
		m.handlers = map[string]http.Handler{}
	}
	m.handlers[path] = h
}

// Serve answers a request for /openapi/v2, /openapi/v3 or a v3 document
// and reports true, or reports false, writing nothing, when the path names
// no document.
func (s *Service) Serve(w http.ResponseWriter, r *http.Request) bool {
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/openapi/v2":
		s.v2.ServeHTTP(w, r)
	case p == "/openapi/v3":
		s.v3.HandleDiscovery(w, r)
	case strings.HasPrefix(p, "/openapi/v3/") && s.v3Paths[strings.TrimPrefix(p, "/openapi/v3/")]:
		if _, err := s.v3Docs(); err != nil {
			// handler3 would answer an empty 200.
			slog.Error("OpenAPI v3 documents failed to build", "err", err)
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return true
		}
		if p != r.URL.Path {
			// The handler reads the group version from the path.
			r = r.Clone(r.Context())
			r.URL.Path = p
		}
		// Upstream compresses large responses in its filter chain; a
		// group version's document is hundreds of kilobytes of JSON.
		gziphandler.GzipHandler(http.HandlerFunc(s.v3.HandleGroupVersion)).ServeHTTP(w, r)
	default:
		return false
	}
	return true
}

// V3Paths lists the documents of /openapi/v3, sorted: "api", "api/v1",
// "apis", "apis/apps", "apis/apps/v1", ..., "version".
func (s *Service) V3Paths() []string {
	out := make([]string, 0, len(s.v3Paths))
	for p := range s.v3Paths {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// v3Paths lists the documents the resources make, without building them.
func v3Paths(resources []Resource) []string {
	paths := []string{"api", "apis", "version"}
	seen := map[string]bool{}
	for _, res := range resources {
		for _, p := range []string{"apis/" + res.Group, strings.TrimPrefix(gvRoot(res.Group, res.Version), "/")} {
			if p == "apis/" || seen[p] {
				continue
			}
			seen[p] = true
			paths = append(paths, p)
		}
	}
	return paths
}

func (s *Service) info() *spec.Info {
	return &spec.Info{InfoProps: spec.InfoProps{Title: "Kubernetes", Version: s.cfg.Version}}
}

// bearerToken is the security scheme the server accepts besides client
// certificates, as kube-apiserver declares it.
var bearerToken = spec.SecuritySchemeProps{Type: "apiKey", Name: "authorization", In: "header", Description: "Bearer Token authentication"}

// BuildV2 builds the /openapi/v2 document: every path of every resource,
// and every definition they reach, defaults pruned as upstream prunes them
// from v2.
func (s *Service) BuildV2() (*spec.Swagger, error) {
	cs, err := containers(s.cfg.Resources)
	if err != nil {
		return nil, err
	}
	doc, err := builder.BuildOpenAPISpecFromRoutes(cs, &common.Config{
		ProtocolList:                   []string{"https"},
		Info:                           s.info(),
		CommonResponses:                map[int]spec.Response{401: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}}},
		GetDefinitions:                 getDefinitions,
		GetDefinitionName:              kinds().name,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		SecurityDefinitions:            &spec.SecurityDefinitions{"BearerToken": &spec.SecurityScheme{SecuritySchemeProps: bearerToken}},
		DefaultSecurity:                []map[string][]string{{"BearerToken": {}}},
	})
	if err != nil {
		return nil, fmt.Errorf("openapi: build v2: %w", err)
	}
	doc.Definitions = handler.PruneDefaults(doc.Definitions)
	return doc, nil
}

// BuildV3 builds the /openapi/v3 document at path ("apis/apps/v1"), or
// returns nil if there is none. Documents are built once and shared:
// callers must not modify them.
func (s *Service) BuildV3(path string) (*spec3.OpenAPI, error) {
	docs, err := s.v3Docs()
	if err != nil {
		return nil, err
	}
	return docs[path], nil
}

func (s *Service) buildV3() (map[string]*spec3.OpenAPI, error) {
	cs, err := containers(s.cfg.Resources)
	if err != nil {
		return nil, err
	}
	defs := definitionsWithRefs(refPrefixV3)
	docs := make(map[string]*spec3.OpenAPI, len(cs))
	for _, c := range cs {
		doc, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{c}, &common.OpenAPIV3Config{
			Info:                           s.info(),
			CommonResponses:                map[int]*spec3.Response{401: {ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}}},
			Definitions:                    defs,
			GetDefinitionName:              kinds().name,
			GetOperationIDAndTagsFromRoute: operationIDAndTags,
			SecuritySchemes: spec3.SecuritySchemes{"BearerToken": &spec3.SecurityScheme{SecuritySchemeProps: spec3.SecuritySchemeProps{
				Type: bearerToken.Type, Name: bearerToken.Name, In: bearerToken.In, Description: bearerToken.Description}}},
		})
		if err != nil {
			return nil, fmt.Errorf("openapi: build v3 %s: %w", c.RootPath(), err)
		}
		doc.SecurityRequirement = []map[string][]string{{"BearerToken": {}}}
		docs[strings.TrimPrefix(c.RootPath(), "/")] = doc
	}
	return docs, nil
}
