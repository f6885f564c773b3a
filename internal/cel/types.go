package cel

import (
	"fmt"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiservercel "k8s.io/apiserver/pkg/cel"
	celcommon "k8s.io/apiserver/pkg/cel/common"
	"k8s.io/apiserver/pkg/cel/library"
	celopenapi "k8s.io/apiserver/pkg/cel/openapi"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// TypedEnv is the admission environment with object, oldObject and
// (when known) params declared by schema instead of dyn: what a policy's
// expressions are type-checked against.
func TypedEnv(object, params *apiservercel.DeclType, hasParams bool) (*celgo.Env, error) {
	base, err := celgo.NewEnv(Libraries()...)
	if err != nil {
		return nil, err
	}
	roots := []*apiservercel.DeclType{object}
	if params != nil {
		roots = append(roots, params)
	}
	rt := apiservercel.NewDeclTypeProvider(roots...)
	opts, err := rt.EnvOptions(base.CELTypeProvider())
	if err != nil {
		return nil, err
	}
	opts = append(opts,
		celgo.Variable("object", object.CelType()),
		celgo.Variable("oldObject", object.CelType()),
		celgo.Variable("request", celgo.DynType),
		celgo.Variable("namespaceObject", celgo.DynType),
		celgo.Variable("variables", celgo.MapType(celgo.StringType, celgo.DynType)),
		celgo.Variable("authorizer", library.AuthorizerType),
		celgo.Variable("authorizer.requestResource", library.ResourceCheckType))
	if hasParams {
		pt := celgo.DynType
		if params != nil {
			pt = params.CelType()
		}
		opts = append(opts, celgo.Variable("params", pt))
	}
	return base.Extend(opts...)
}

// Types gives built-in kinds their CEL types, from the OpenAPI schemas
// of the server that serves them. Building a kind's type walks its whole
// schema, so each is built once and kept. Safe for concurrent use; a nil
// *Types knows no kinds.
type Types struct {
	index func() (schemaIndex, error)
	cache sync.Map // schema.GroupVersionKind -> *apiservercel.DeclType (nil: none)
}

// NewTypes reads schemas (a model name -> schema map such as
// internal/apiserver/openapi.Schemas returns) the first time a type is
// asked for.
func NewTypes(schemas func() (map[string]*spec.Schema, error)) *Types {
	return &Types{index: sync.OnceValues(func() (schemaIndex, error) {
		all, err := schemas()
		if err != nil {
			return schemaIndex{}, err
		}
		idx := map[schema.GroupVersionKind]string{}
		for name, s := range all {
			list, _ := s.Extensions["x-kubernetes-group-version-kind"].([]interface{})
			for _, item := range list {
				m, _ := item.(map[string]interface{})
				g, _ := m["group"].(string)
				v, _ := m["version"].(string)
				k, _ := m["kind"].(string)
				if k != "" {
					idx[schema.GroupVersionKind{Group: g, Version: v, Kind: k}] = name
				}
			}
		}
		return schemaIndex{all, idx}, nil
	})}
}

// schemaIndex is the schemas and each kind's model name among them.
type schemaIndex struct {
	schemas map[string]*spec.Schema
	names   map[schema.GroupVersionKind]string
}

// Of returns the CEL type of a built-in kind; nil for kinds without a
// schema (custom resources).
func (t *Types) Of(gvk schema.GroupVersionKind) *apiservercel.DeclType {
	if t == nil {
		return nil
	}
	if dt, ok := t.cache.Load(gvk); ok {
		return dt.(*apiservercel.DeclType)
	}
	var dt *apiservercel.DeclType
	if s := t.schemaOf(gvk); s != nil {
		if dt = celcommon.SchemaDeclType(&celopenapi.Schema{Schema: s}, true); dt != nil {
			dt = dt.MaybeAssignTypeName(fmt.Sprintf("rudder.typecheck.%s.%s.%s", strings.ReplaceAll(gvk.Group, ".", "_"), gvk.Version, gvk.Kind))
		}
	}
	t.cache.Store(gvk, dt)
	return dt
}

// schemaOf returns a kind's schema with every reference inlined.
func (t *Types) schemaOf(gvk schema.GroupVersionKind) *spec.Schema {
	idx, err := t.index()
	if err != nil {
		return nil
	}
	name, ok := idx.names[gvk]
	if !ok {
		return nil
	}
	return inline(idx.schemas, idx.schemas[name], map[string]bool{name: true})
}

const refPrefix = "#/components/schemas/"

// inline copies s with references replaced by the schemas they name.
// A reference back into a schema being inlined becomes an open object, so
// recursive types end.
func inline(schemas map[string]*spec.Schema, s *spec.Schema, visiting map[string]bool) *spec.Schema {
	if s == nil {
		return nil
	}
	ref := s.Ref.String()
	if ref == "" && len(s.AllOf) == 1 {
		// A field with its own description or default refers through allOf.
		ref = s.AllOf[0].Ref.String()
	}
	if ref != "" {
		name := strings.TrimPrefix(ref, refPrefix)
		target, ok := schemas[name]
		if !ok || visiting[name] {
			open := &spec.Schema{}
			open.Type = spec.StringOrArray{"object"}
			open.Extensions = spec.Extensions{"x-kubernetes-preserve-unknown-fields": true}
			return open
		}
		visiting[name] = true
		out := inline(schemas, target, visiting)
		delete(visiting, name)
		return out
	}
	out := *s
	if len(s.Properties) > 0 {
		out.Properties = make(map[string]spec.Schema, len(s.Properties))
		for k, v := range s.Properties {
			out.Properties[k] = *inline(schemas, &v, visiting)
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		out.Items = &spec.SchemaOrArray{Schema: inline(schemas, s.Items.Schema, visiting)}
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		out.AdditionalProperties = &spec.SchemaOrBool{Allows: true, Schema: inline(schemas, s.AdditionalProperties.Schema, visiting)}
	}
	return &out
}
