package openapi

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/schemaconv"
	"k8s.io/kube-openapi/pkg/validation/spec"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// builtinTypeConverter is the structured-merge-diff type converter of the
// built-in kinds. It answers as managedfields' own converter does, with
// one saving: a Go object (never an unstructured one) converted with
// typed.AllowDuplicates is not validated against its schema.
//
// The field manager asks for exactly that conversion on every write, for
// the live object and the new one, to see which fields changed. A Go
// object of a built-in type is its schema's shape by construction (the
// schema is generated from the type), and with AllowDuplicates a repeated
// key is accepted anyway, so validation could not fail; it was a whole
// extra walk of both objects, about a fifth of what tracking an update
// cost. Applied configurations (unstructured, validated without
// AllowDuplicates) are validated as before.
type builtinTypeConverter struct {
	parser *typed.Parser
	byGVK  map[schema.GroupVersionKind]*typed.ParseableType
	// none knows no kind: it answers an unknown one with managedfields'
	// own error, which the field manager recognizes (an entry of a version
	// no longer served is dropped, not failed on).
	none managedfields.TypeConverter
}

var typeConverter = sync.OnceValues(func() (managedfields.TypeConverter, error) {
	s, err := Schemas()
	if err != nil {
		return nil, err
	}
	converted, err := schemaconv.ToSchemaFromOpenAPI(s, false)
	if err != nil {
		return nil, fmt.Errorf("openapi: type converter: %w", err)
	}
	none, err := managedfields.NewTypeConverter(map[string]*spec.Schema{}, false)
	if err != nil {
		return nil, err
	}
	c := &builtinTypeConverter{
		parser: &typed.Parser{Schema: smdschema.Schema{Types: converted.Types}},
		byGVK:  map[schema.GroupVersionKind]*typed.ParseableType{},
		none:   none,
	}
	for model, gvks := range kinds().gvks {
		if _, ok := s[model]; !ok {
			continue
		}
		t := c.parser.Type(model)
		for _, gvk := range gvks {
			c.byGVK[gvk] = &t
		}
	}
	return c, nil
})

// TypeConverter returns the structured-merge-diff type converter of every
// built-in kind, built from Schemas once, on the first call: what
// server-side apply needs to turn objects into typed values (the list
// types and map keys of the schemas decide how fields merge and who owns
// them).
func TypeConverter() (managedfields.TypeConverter, error) { return typeConverter() }

func (c *builtinTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	gvk := obj.GetObjectKind().GroupVersionKind()
	t := c.byGVK[gvk]
	if t == nil {
		return c.none.ObjectToTyped(obj, opts...)
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return t.FromUnstructured(u.UnstructuredContent(), opts...)
	}
	if slices.Contains(opts, typed.AllowDuplicates) {
		v, err := value.NewValueReflect(obj)
		if err != nil {
			return nil, err
		}
		return typed.AsTypedUnvalidated(v, t.Schema, t.TypeRef), nil
	}
	return t.FromStructured(obj, opts...)
}

// TypedToObject is the value as an unstructured object, as managedfields
// makes it.
func (c *builtinTypeConverter) TypedToObject(tv *typed.TypedValue) (runtime.Object, error) {
	switch o := tv.AsValue().Unstructured().(type) {
	case map[string]interface{}:
		return &unstructured.Unstructured{Object: o}, nil
	default:
		return nil, fmt.Errorf("cannot convert a %T to an object", o)
	}
}
