package apiserver

import (
	"reflect"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The schema of apiextensions.k8s.io/v1 itself. The project's generated
// OpenAPI definitions cover k8s.io/api, not the apiextensions types, so
// their schemas are derived here from the Go types by reflection: JSON
// field names and types, descriptions from the types' SwaggerDoc, and
// references to the apimachinery schemas the generated definitions hold
// (ObjectMeta, Condition times). It is what `kubectl explain crd` reads.

const apiextensionsModelPrefix = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."

var apiextensionsPkg = reflect.TypeOf(apiextensionsv1.CustomResourceDefinition{}).PkgPath()

// apiextensionsSchemas returns the definitions of CustomResourceDefinition
// and every apiextensions type it reaches, referring to each other with
// refPrefix.
func apiextensionsSchemas(refPrefix string) map[string]interface{} {
	defs := map[string]interface{}{}
	typeSchema(reflect.TypeOf(apiextensionsv1.CustomResourceDefinition{}), refPrefix, defs)
	typeSchema(reflect.TypeOf(apiextensionsv1.CustomResourceDefinitionList{}), refPrefix, defs)
	crd := defs[apiextensionsModelPrefix+"CustomResourceDefinition"].(map[string]interface{})
	crd["x-kubernetes-group-version-kind"] = []interface{}{map[string]interface{}{"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinition"}}
	list := defs[apiextensionsModelPrefix+"CustomResourceDefinitionList"].(map[string]interface{})
	list["x-kubernetes-group-version-kind"] = []interface{}{map[string]interface{}{"group": "apiextensions.k8s.io", "version": "v1", "kind": "CustomResourceDefinitionList"}}
	return defs
}

type openAPIModelNamer interface{ OpenAPIModelName() string }
type openAPITyped interface{ OpenAPISchemaType() []string }
type swaggerDoc interface{ SwaggerDoc() map[string]string }

// typeSchema returns the schema of a value of type t, adding the named
// struct types it reaches to defs.
func typeSchema(t reflect.Type, refPrefix string, defs map[string]interface{}) map[string]interface{} {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	zero := reflect.New(t).Elem().Interface()
	// apiextensions types have no model names of their own; the one they
	// would show is promoted from embedded ObjectMeta.
	if n, ok := zero.(openAPIModelNamer); ok && t.PkgPath() != apiextensionsPkg {
		return map[string]interface{}{"$ref": refPrefix + n.OpenAPIModelName()}
	}
	if typed, ok := zero.(openAPITyped); ok {
		// JSON, JSONSchemaPropsOrBool and the like: any JSON value.
		if len(typed.OpenAPISchemaType()) == 1 {
			return map[string]interface{}{"type": typed.OpenAPISchemaType()[0]}
		}
		return map[string]interface{}{"x-kubernetes-preserve-unknown-fields": true}
	}
	switch t.Kind() {
	case reflect.String:
		return map[string]interface{}{"type": "string"}
	case reflect.Bool:
		return map[string]interface{}{"type": "boolean"}
	case reflect.Int32:
		return map[string]interface{}{"type": "integer", "format": "int32"}
	case reflect.Int64, reflect.Int:
		return map[string]interface{}{"type": "integer", "format": "int64"}
	case reflect.Float64, reflect.Float32:
		return map[string]interface{}{"type": "number", "format": "double"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]interface{}{"type": "string", "format": "byte"}
		}
		return map[string]interface{}{"type": "array", "items": typeSchema(t.Elem(), refPrefix, defs)}
	case reflect.Map:
		return map[string]interface{}{"type": "object", "additionalProperties": typeSchema(t.Elem(), refPrefix, defs)}
	case reflect.Struct:
		name := apiextensionsModelPrefix + t.Name()
		if _, done := defs[name]; !done {
			defs[name] = map[string]interface{}{} // placeholder: types refer to themselves
			defs[name] = structSchema(t, refPrefix, defs)
		}
		return map[string]interface{}{"$ref": refPrefix + name}
	}
	return map[string]interface{}{"x-kubernetes-preserve-unknown-fields": true}
}

func structSchema(t reflect.Type, refPrefix string, defs map[string]interface{}) map[string]interface{} {
	props := map[string]interface{}{}
	var required []string
	var docs map[string]string
	if d, ok := reflect.New(t).Interface().(swaggerDoc); ok {
		docs = d.SwaggerDoc()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if strings.Contains(opts, "inline") || (f.Anonymous && name == "") {
			if f.Type == reflect.TypeOf(runtime.TypeMeta{}) || f.Type.Name() == "TypeMeta" {
				props["apiVersion"] = map[string]interface{}{"type": "string"}
				props["kind"] = map[string]interface{}{"type": "string"}
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		s := typeSchema(f.Type, refPrefix, defs)
		if doc := docs[name]; doc != "" {
			if _, isRef := s["$ref"]; isRef {
				s = map[string]interface{}{"allOf": []interface{}{s}, "description": doc}
			} else {
				s["description"] = doc
			}
		}
		props[name] = s
		if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
			required = append(required, name)
		}
	}
	out := map[string]interface{}{"type": "object", "properties": props}
	if len(required) > 0 {
		out["required"] = required
	}
	if doc := docs[""]; doc != "" {
		out["description"] = doc
	}
	return out
}

// crdSelf describes the customresourcedefinitions resource the way a CRD
// describes its own, so its paths are written by crdPaths.
var crdSelf = &apiextensionsv1.CustomResourceDefinition{Spec: apiextensionsv1.CustomResourceDefinitionSpec{
	Group: "apiextensions.k8s.io", Scope: apiextensionsv1.ClusterScoped,
	Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "customresourcedefinitions", Kind: "CustomResourceDefinition",
		ListKind: "CustomResourceDefinitionList"},
	Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true,
		Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}}},
}}
