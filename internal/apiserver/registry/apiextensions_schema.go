package registry

import (
	"slices"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/apiserver/customresource"
)

// Structural schemas. A v1 CRD's schema must be structural: every field
// has a type, so the server can prune unknown fields, apply defaults and
// run CEL rules over a known shape. The logical junctors (allOf, anyOf,
// oneOf, not) may only add value validations; they may not declare types,
// defaults or descriptions of their own, because a shape that depends on
// which branch matched cannot be pruned. The rules and their messages
// follow upstream's, so a CRD that Kubernetes refuses is refused here
// with the same explanation.

type crdSchemaLevel int

const (
	crdRootLevel crdSchemaLevel = iota
	crdItemLevel
	crdFieldLevel
)

var crdSchemaTypes = []string{"array", "boolean", "integer", "number", "object", "string"}

// ValidateCRDSchema checks a version's openAPIV3Schema: unsupported
// features first, then the structural rules.
func ValidateCRDSchema(s *apiextensionsv1.JSONSchemaProps, fldPath *field.Path) field.ErrorList {
	allErrs := crdSchemaFeatures(s, fldPath)
	if len(allErrs) > 0 {
		// As upstream, the structural pass runs only on a schema the
		// converter could read: one batch of errors at a time.
		return allErrs
	}
	if allErrs = crdStructural(s, crdRootLevel, fldPath); len(allErrs) > 0 {
		return allErrs
	}
	// Defaults, enums and patterns must parse and CEL rules compile: the
	// same preparation the server does before serving the version.
	return customresource.CompileErrors(s, fldPath)
}

// crdSchemaFeatures rejects JSON-schema features Kubernetes never
// supports in CRDs, anywhere in the tree.
func crdSchemaFeatures(s *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if s == nil {
		return nil
	}
	if s.Ref != nil {
		allErrs = append(allErrs, field.Forbidden(p.Child("$ref"), "$ref is not supported"))
	}
	if s.ID != "" {
		allErrs = append(allErrs, field.Forbidden(p.Child("id"), "id is not supported"))
	}
	if s.Schema != "" {
		allErrs = append(allErrs, field.Forbidden(p.Child("$schema"), "$schema is not supported"))
	}
	if len(s.Definitions) > 0 {
		allErrs = append(allErrs, field.Forbidden(p.Child("definitions"), "definitions are not supported"))
	}
	if len(s.PatternProperties) > 0 {
		allErrs = append(allErrs, field.Forbidden(p.Child("patternProperties"), "patternProperties is not supported"))
	}
	if len(s.Dependencies) > 0 {
		allErrs = append(allErrs, field.Forbidden(p.Child("dependencies"), "dependencies is not supported"))
	}
	if s.AdditionalItems != nil {
		allErrs = append(allErrs, field.Forbidden(p.Child("additionalItems"), "additionalItems is not supported"))
	}
	if s.UniqueItems {
		allErrs = append(allErrs, field.Forbidden(p.Child("uniqueItems"), "uniqueItems cannot be set to true since the runtime complexity becomes quadratic"))
	}
	if len(s.Properties) > 0 && s.AdditionalProperties != nil {
		allErrs = append(allErrs, field.Forbidden(p.Child("additionalProperties"), "additionalProperties and properties are mutual exclusive"))
	}
	if s.XPreserveUnknownFields != nil && !*s.XPreserveUnknownFields {
		allErrs = append(allErrs, field.Invalid(p.Child("x-kubernetes-preserve-unknown-fields"), *s.XPreserveUnknownFields, "must be true or undefined"))
	}
	if s.Items != nil && len(s.Items.JSONSchemas) > 0 {
		allErrs = append(allErrs, field.Forbidden(p.Child("items"), "items must be a schema object and not an array"))
	}
	if s.Type == "array" && (s.Items == nil || (s.Items.Schema == nil && len(s.Items.JSONSchemas) == 0)) {
		allErrs = append(allErrs, field.Required(p.Child("items"), "must be specified"))
	}
	if s.Type != "" && !slices.Contains(crdSchemaTypes, s.Type) {
		allErrs = append(allErrs, field.NotSupported(p.Child("type"), s.Type, crdSchemaTypes))
	}
	switch s.XListType {
	case nil:
		if len(s.XListMapKeys) > 0 {
			allErrs = append(allErrs, field.Forbidden(p.Child("x-kubernetes-list-map-keys"), "must not be set if x-kubernetes-list-type is not map"))
		}
	default:
		switch lt := *s.XListType; lt {
		case "atomic", "set":
			if len(s.XListMapKeys) > 0 {
				allErrs = append(allErrs, field.Forbidden(p.Child("x-kubernetes-list-map-keys"), "must not be set if x-kubernetes-list-type is not map"))
			}
		case "map":
			if len(s.XListMapKeys) == 0 {
				allErrs = append(allErrs, field.Required(p.Child("x-kubernetes-list-map-keys"), "must not be empty if x-kubernetes-list-type is map"))
			}
		default:
			allErrs = append(allErrs, field.NotSupported(p.Child("x-kubernetes-list-type"), lt, []string{"atomic", "set", "map"}))
		}
		if s.Type != "array" {
			allErrs = append(allErrs, field.Invalid(p.Child("type"), s.Type, "must be array if x-kubernetes-list-type is specified"))
		}
	}
	for _, name := range crdSortedKeys(s.Properties) {
		prop := s.Properties[name]
		allErrs = append(allErrs, crdSchemaFeatures(&prop, p.Child("properties").Key(name))...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		allErrs = append(allErrs, crdSchemaFeatures(s.AdditionalProperties.Schema, p.Child("additionalProperties"))...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		allErrs = append(allErrs, crdSchemaFeatures(s.Items.Schema, p.Child("items"))...)
	}
	for name, list := range map[string][]apiextensionsv1.JSONSchemaProps{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf} {
		for i := range list {
			allErrs = append(allErrs, crdSchemaFeatures(&list[i], p.Child(name).Index(i))...)
		}
	}
	if s.Not != nil {
		allErrs = append(allErrs, crdSchemaFeatures(s.Not, p.Child("not"))...)
	}
	return allErrs
}

// crdStructural applies the structural rules to one node and its
// children.
func crdStructural(s *apiextensionsv1.JSONSchemaProps, lvl crdSchemaLevel, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	intOrString := s.XIntOrString
	preserve := s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
	switch {
	case s.XEmbeddedResource && s.Type != "object":
		if s.Type == "" {
			allErrs = append(allErrs, field.Required(p.Child("type"), "must be object if x-kubernetes-embedded-resource is true"))
		} else {
			allErrs = append(allErrs, field.Invalid(p.Child("type"), s.Type, "must be object if x-kubernetes-embedded-resource is true"))
		}
	case s.Type == "" && !intOrString && !preserve:
		switch lvl {
		case crdRootLevel:
			allErrs = append(allErrs, field.Required(p.Child("type"), "must not be empty at the root"))
		case crdItemLevel:
			allErrs = append(allErrs, field.Required(p.Child("type"), "must not be empty for specified array items"))
		default:
			allErrs = append(allErrs, field.Required(p.Child("type"), "must not be empty for specified object fields"))
		}
	}
	if intOrString && s.Type != "" {
		allErrs = append(allErrs, field.Invalid(p.Child("type"), s.Type, "must be empty if x-kubernetes-int-or-string is true"))
	}
	if lvl == crdRootLevel && s.Type != "" && s.Type != "object" {
		allErrs = append(allErrs, field.Invalid(p.Child("type"), s.Type, "must be object at the root"))
	}
	if s.XEmbeddedResource && s.AdditionalProperties != nil {
		allErrs = append(allErrs, field.Forbidden(p.Child("additionalProperties"), "must not be used if x-kubernetes-embedded-resource is set"))
	}
	if lvl == crdRootLevel || s.XEmbeddedResource {
		allErrs = append(allErrs, crdMetadataSchema(s, p)...)
	}
	// The junctors may only validate values.
	for name, list := range map[string][]apiextensionsv1.JSONSchemaProps{"allOf": s.AllOf, "anyOf": s.AnyOf, "oneOf": s.OneOf} {
		for i := range list {
			allErrs = append(allErrs, crdValueValidationOnly(&list[i], p.Child(name).Index(i))...)
		}
	}
	if s.Not != nil {
		allErrs = append(allErrs, crdValueValidationOnly(s.Not, p.Child("not"))...)
	}
	for _, name := range crdSortedKeys(s.Properties) {
		prop := s.Properties[name]
		allErrs = append(allErrs, crdStructural(&prop, crdFieldLevel, p.Child("properties").Key(name))...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		allErrs = append(allErrs, crdStructural(s.AdditionalProperties.Schema, crdFieldLevel, p.Child("additionalProperties"))...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		allErrs = append(allErrs, crdStructural(s.Items.Schema, crdItemLevel, p.Child("items"))...)
	}
	return allErrs
}

// crdMetadataSchema restricts what a root (or embedded resource) schema
// may say about kind, apiVersion and metadata: the server owns their
// shape, so a schema may only constrain metadata.name and generateName.
func crdMetadataSchema(s *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range []string{"kind", "apiVersion"} {
		if prop, ok := s.Properties[f]; ok && prop.Type != "string" {
			allErrs = append(allErrs, field.Invalid(p.Child("properties").Key(f).Child("type"), prop.Type, "must be string"))
		}
	}
	if m, ok := s.Properties["metadata"]; ok {
		mp := p.Child("properties").Key("metadata")
		if m.Type != "object" {
			allErrs = append(allErrs, field.Invalid(mp.Child("type"), m.Type, "must be object"))
		}
		for name := range m.Properties {
			if name != "name" && name != "generateName" {
				allErrs = append(allErrs, field.Forbidden(mp, "must not specify anything other than name and generateName, but metadata is implicitly specified"))
				break
			}
		}
	}
	return allErrs
}

// crdValueValidationOnly checks a junctor branch: no type, default,
// description, title, nullable or extensions, recursively.
func crdValueValidationOnly(s *apiextensionsv1.JSONSchemaProps, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	forbid := func(set bool, name string) {
		if set {
			allErrs = append(allErrs, field.Forbidden(p.Child(name), "must be empty to be structural"))
		}
	}
	forbid(s.Type != "", "type")
	forbid(s.Default != nil, "default")
	forbid(s.Description != "", "description")
	forbid(s.Title != "", "title")
	forbid(s.Nullable, "nullable")
	forbid(s.AdditionalProperties != nil, "additionalProperties")
	forbid(s.XPreserveUnknownFields != nil, "x-kubernetes-preserve-unknown-fields")
	forbid(s.XEmbeddedResource, "x-kubernetes-embedded-resource")
	forbid(s.XIntOrString, "x-kubernetes-int-or-string")
	forbid(s.XListType != nil, "x-kubernetes-list-type")
	forbid(len(s.XValidations) > 0, "x-kubernetes-validations")
	for _, name := range crdSortedKeys(s.Properties) {
		prop := s.Properties[name]
		allErrs = append(allErrs, crdValueValidationOnly(&prop, p.Child("properties").Key(name))...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		allErrs = append(allErrs, crdValueValidationOnly(s.Items.Schema, p.Child("items"))...)
	}
	return allErrs
}

func crdSortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
