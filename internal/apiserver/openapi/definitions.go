package openapi

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
)

// The two reference styles: a v2 document keeps its schemas under
// definitions, a v3 document under components/schemas. The generated code
// bakes the reference into every schema, so each style is a separate call
// of GetOpenAPIDefinitions.
const (
	refPrefixV2 = "#/definitions/"
	refPrefixV3 = "#/components/schemas/"
)

// definitionBuilds counts calls of GetOpenAPIDefinitions, so a test can
// hold the server's start-up to building nothing.
var definitionBuilds atomic.Int64

// getDefinitions is GetOpenAPIDefinitions, counted. Its signature is
// common.GetOpenAPIDefinitions: the builders call it with a callback that
// turns a model name into a reference.
func getDefinitions(ref common.ReferenceCallback) map[string]common.OpenAPIDefinition {
	definitionBuilds.Add(1)
	return GetOpenAPIDefinitions(ref)
}

// definitionsWithRefs returns every generated definition, referring to
// others with prefix.
func definitionsWithRefs(prefix string) map[string]common.OpenAPIDefinition {
	return getDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef(prefix + common.EscapeJsonPointer(name))
	})
}

// kindNamer names definitions and tags the ones that are kinds. The
// builders call name for every definition they add; a definition whose Go
// type the scheme knows gets x-kubernetes-group-version-kind listing every
// kind it is registered as, sorted by group, version and kind as upstream
// sorts them (meta/v1 DeleteOptions is a kind of every group version).
type kindNamer struct {
	gvks map[string][]schema.GroupVersionKind // by model name
}

// kinds is the namer over the kinds the documents describe. It is built
// once, on first use.
var kinds = sync.OnceValue(func() *kindNamer { return newKindNamer(kindScheme()) })

// kindScheme registers the Go types of the kinds the documents describe:
// every group version of k8s.io/api (the client-go scheme) and the
// resource metrics API (metrics.k8s.io/v1beta1, which metrics-server
// serves upstream and the API server serves here). Built once, on first
// use.
var kindScheme = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err) // static registrations
	}
	// The kinds alone: metricsv1beta1.AddToScheme would also make the
	// meta/v1 options (DeleteOptions, WatchEvent...) kinds of the group,
	// which changes their x-kubernetes-group-version-kind everywhere.
	s.AddKnownTypes(metricsv1beta1.SchemeGroupVersion, &metricsv1beta1.NodeMetrics{}, &metricsv1beta1.NodeMetricsList{},
		&metricsv1beta1.PodMetrics{}, &metricsv1beta1.PodMetricsList{})
	// apiregistration.k8s.io/v1 (APIService), which upstream's aggregator
	// serves and the API server serves here.
	s.AddKnownTypes(apiregistrationv1.SchemeGroupVersion, &apiregistrationv1.APIService{}, &apiregistrationv1.APIServiceList{})
	return s
})

// Describes reports whether the documents can describe gvk: whether it is
// a kind with a Go type and generated schema.
func Describes(gvk schema.GroupVersionKind) bool { return kindScheme().Recognizes(gvk) }

func newKindNamer(s *runtime.Scheme) *kindNamer {
	n := &kindNamer{gvks: map[string][]schema.GroupVersionKind{}}
	for gvk, t := range s.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		name := modelName(t)
		if !slices.Contains(n.gvks[name], gvk) {
			n.gvks[name] = append(n.gvks[name], gvk)
		}
	}
	for _, list := range n.gvks {
		sort.Slice(list, func(i, j int) bool {
			a, b := list[i], list[j]
			if a.Group != b.Group {
				return a.Group < b.Group
			}
			if a.Version != b.Version {
				return a.Version < b.Version
			}
			return a.Kind < b.Kind
		})
	}
	return n
}

// modelName is the definition name of a Go type: what its OpenAPIModelName
// method says (every k8s.io/api and apimachinery type has one), else its
// package path and name, reversed the way upstream reverses them.
func modelName(t reflect.Type) string {
	if n, ok := reflect.New(t).Interface().(util.OpenAPIModelNamer); ok {
		return n.OpenAPIModelName()
	}
	return util.ToRESTFriendlyName(t.PkgPath() + "." + t.Name())
}

// name is a common.Config GetDefinitionName. The extension value is built
// of plain maps and slices, the shape it has after a JSON round trip,
// because managedfields reads it in process in exactly that shape.
func (n *kindNamer) name(model string) (string, spec.Extensions) {
	list, ok := n.gvks[model]
	if !ok {
		return model, nil
	}
	ext := make([]interface{}, 0, len(list))
	for _, gvk := range list {
		ext = append(ext, map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
	}
	return model, spec.Extensions{extensionGVK: ext}
}

// kindModels lists the model names of every kind that has a generated
// definition, sorted.
func (n *kindNamer) kindModels(defs map[string]common.OpenAPIDefinition) []string {
	var names []string
	for name := range n.gvks {
		if _, ok := defs[name]; ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

const extensionGVK = "x-kubernetes-group-version-kind"

// schemas builds the v3 schemas of every kind and what they reference.
var schemas = sync.OnceValues(func() (map[string]*spec.Schema, error) {
	defs := definitionsWithRefs(refPrefixV3)
	names := kinds().kindModels(defs)
	out, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		Definitions:       defs,
		GetDefinitionName: kinds().name,
	}, names...)
	if err != nil {
		return nil, fmt.Errorf("openapi: build schemas: %w", err)
	}
	return out, nil
})

// Schemas returns the OpenAPI v3 schema of every built-in kind (every kind
// of the client-go scheme) and of every type those schemas reference,
// keyed by model name ("io.k8s.api.apps.v1.Deployment"). Kinds carry
// x-kubernetes-group-version-kind; references point into the same map
// ("#/components/schemas/<name>"). The map is built once, on the first
// call, and shared: callers must not modify it.
func Schemas() (map[string]*spec.Schema, error) { return schemas() }
