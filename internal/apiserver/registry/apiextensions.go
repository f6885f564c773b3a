package registry

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/util/jsonpath"
)

// apiextensions.k8s.io/v1: CustomResourceDefinitions, the objects that
// teach the server new resources. This file is the definition's own
// strategy: the defaults and validation a CRD gets as an object. Serving
// the resources a CRD defines is the API server's job (crd*.go there);
// the schema rules a CRD's OpenAPI schema must follow to be accepted
// (structural schemas) are in apiextensions_schema.go.
//
// A CRD is cluster-scoped and named "<plural>.<group>", so that two CRDs
// can never claim the same resource. Its status (accepted names,
// conditions, stored versions) is written by the server, never by the
// client's create.

// CRDCleanupFinalizer is the finalizer the server puts on every CRD it
// serves: deleting the CRD first deletes every custom resource of it, then
// the finalizer is removed and the CRD goes.
const CRDCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

func apiextensionsResources() []*Resource {
	return []*Resource{
		{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions", Kind: "CustomResourceDefinition",
			Singular: "customresourcedefinition", ShortNames: []string{"crd", "crds"}, Categories: []string{"api-extensions"},
			HasStatus: true, HasGeneration: true,
			New:              func() runtime.Object { return &apiextensionsv1.CustomResourceDefinition{} },
			Default:          func(obj runtime.Object) { DefaultCRD(obj.(*apiextensionsv1.CustomResourceDefinition)) },
			PrepareForCreate: crdPrepareForCreate,
			PrepareForUpdate: crdPrepareForUpdate,
			Validate: func(obj runtime.Object) field.ErrorList {
				return ValidateCRD(obj.(*apiextensionsv1.CustomResourceDefinition))
			},
			ValidateUpdate:       crdValidateUpdate,
			ValidateStatusUpdate: crdValidateStatusUpdate,
			// Table nil: upstream prints NAME and CREATED AT for CRDs.
			// The generated OpenAPI schemas cover k8s.io/api only, so
			// managedFields of CRDs are tracked on a schema deduced from
			// the objects (lists atomic, maps by key).
			TypeConverter: func() (managedfields.TypeConverter, error) { return managedfields.NewDeducedTypeConverter(), nil },
		},
	}
}

// DefaultCRD sets upstream's defaults: conversion strategy None, the
// singular name and list kind derived from the kind, port 443 for a
// conversion webhook service.
func DefaultCRD(crd *apiextensionsv1.CustomResourceDefinition) {
	spec := &crd.Spec
	if spec.Conversion == nil {
		spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.NoneConverter}
	}
	if w := spec.Conversion.Webhook; w != nil && w.ClientConfig != nil && w.ClientConfig.Service != nil && w.ClientConfig.Service.Port == nil {
		w.ClientConfig.Service.Port = new(int32(443))
	}
	crdDefaultNames(&spec.Names)
	crdDefaultNames(&crd.Status.AcceptedNames)
}

func crdDefaultNames(n *apiextensionsv1.CustomResourceDefinitionNames) {
	if n.Singular == "" {
		n.Singular = strings.ToLower(n.Kind)
	}
	if n.ListKind == "" && n.Kind != "" {
		n.ListKind = n.Kind + "List"
	}
}

// CRDStorageVersion returns the version marked storage, or "".
func CRDStorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// crdPrepareForCreate drops the client's status: names are accepted and
// the CRD established by the server, and the one version stored so far is
// the storage version.
func crdPrepareForCreate(obj runtime.Object) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	crd.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	if v := CRDStorageVersion(crd); v != "" {
		crd.Status.StoredVersions = []string{v}
	}
}

// crdPrepareForUpdate records a new storage version in
// status.storedVersions: objects written in the old one stay in etcd until
// migrated, and the list is how a client learns that.
func crdPrepareForUpdate(obj, old runtime.Object) {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	if v := CRDStorageVersion(crd); v != "" && !sets.New(crd.Status.StoredVersions...).Has(v) {
		crd.Status.StoredVersions = append(crd.Status.StoredVersions, v)
	}
}

// ValidateCRD checks a CustomResourceDefinition as upstream does on create.
func ValidateCRD(crd *apiextensionsv1.CustomResourceDefinition) field.ErrorList {
	// Generic metadata rules, not core's: the cleanup finalizer's name is
	// not qualified with a slash.
	allErrs := ValidateMeta(&crd.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	if want := crd.Spec.Names.Plural + "." + crd.Spec.Group; crd.Name != want {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), crd.Name, `must be spec.names.plural+"."+spec.group`))
	}
	allErrs = append(allErrs, crdValidateSpec(&crd.Spec, field.NewPath("spec"))...)
	allErrs = append(allErrs, crdValidateStatus(crd, field.NewPath("status"))...)
	return allErrs
}

func crdValidateUpdate(obj, old runtime.Object) field.ErrorList {
	crd, o := obj.(*apiextensionsv1.CustomResourceDefinition), old.(*apiextensionsv1.CustomResourceDefinition)
	allErrs := ValidateMetaUpdate(&crd.ObjectMeta, &o.ObjectMeta)
	allErrs = append(allErrs, ValidateCRD(crd)...)
	spec := field.NewPath("spec")
	// Objects are stored under a key with or without a namespace: changing
	// the scope would orphan all of them.
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(crd.Spec.Scope, o.Spec.Scope, spec.Child("scope"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(crd.Spec.Names.Kind, o.Spec.Names.Kind, spec.Child("names", "kind"))...)
	return allErrs
}

func crdValidateStatusUpdate(obj, old runtime.Object) field.ErrorList {
	crd := obj.(*apiextensionsv1.CustomResourceDefinition)
	return crdValidateStatus(crd, field.NewPath("status"))
}

// crdValidateStatus checks that every stored version is still declared:
// objects stored in a version the CRD no longer lists could not be read.
func crdValidateStatus(crd *apiextensionsv1.CustomResourceDefinition, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	declared := sets.New[string]()
	for _, v := range crd.Spec.Versions {
		declared.Insert(v.Name)
	}
	for i, v := range crd.Status.StoredVersions {
		if !declared.Has(v) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("storedVersions").Index(i), v, "must appear in spec.versions"))
		}
	}
	if len(crd.Status.StoredVersions) > 0 {
		if sv := CRDStorageVersion(crd); sv != "" && !sets.New(crd.Status.StoredVersions...).Has(sv) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("storedVersions"), crd.Status.StoredVersions, "must have the storage version "+sv))
		}
	}
	return allErrs
}

var (
	crdScopes         = []string{string(apiextensionsv1.ClusterScoped), string(apiextensionsv1.NamespaceScoped)}
	crdConversions    = []string{string(apiextensionsv1.NoneConverter), string(apiextensionsv1.WebhookConverter)}
	crdColumnTypes    = []string{"boolean", "date", "integer", "number", "string"}
	crdColumnFormats  = []string{"byte", "date", "date-time", "double", "float", "int32", "int64", "password"}
	crdReviewVersions = sets.New("v1", "v1beta1")
)

func crdValidateSpec(spec *apiextensionsv1.CustomResourceDefinitionSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Group == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("group"), ""))
	} else {
		if errs := utilvalidation.IsDNS1123Subdomain(spec.Group); len(errs) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("group"), spec.Group, strings.Join(errs, ",")))
		}
		if len(strings.Split(spec.Group, ".")) < 2 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("group"), spec.Group, "should be a domain with at least one dot"))
		}
	}
	switch spec.Scope {
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("scope"), ""))
	case apiextensionsv1.ClusterScoped, apiextensionsv1.NamespaceScoped:
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("scope"), spec.Scope, crdScopes))
	}
	allErrs = append(allErrs, crdValidateVersions(spec, fldPath.Child("versions"))...)
	allErrs = append(allErrs, crdValidateNames(&spec.Names, fldPath.Child("names"))...)
	allErrs = append(allErrs, crdValidateConversion(spec.Conversion, fldPath.Child("conversion"))...)
	return allErrs
}

func crdValidateVersions(spec *apiextensionsv1.CustomResourceDefinitionSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(spec.Versions) == 0 {
		return field.ErrorList{field.Required(fldPath, "must have exactly one version marked as storage version")}
	}
	storage, served := 0, 0
	seen := sets.New[string]()
	unique := true
	for i := range spec.Versions {
		v := &spec.Versions[i]
		p := fldPath.Index(i)
		if v.Storage {
			storage++
		}
		if v.Served {
			served++
		}
		if seen.Has(v.Name) {
			unique = false
		}
		seen.Insert(v.Name)
		if v.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		} else if errs := utilvalidation.IsDNS1035Label(v.Name); len(errs) > 0 {
			allErrs = append(allErrs, field.Invalid(p.Child("name"), v.Name, strings.Join(errs, ",")))
		}
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			allErrs = append(allErrs, field.Required(p.Child("schema", "openAPIV3Schema"), "schemas are required"))
		} else {
			allErrs = append(allErrs, ValidateCRDSchema(v.Schema.OpenAPIV3Schema, p.Child("schema", "openAPIV3Schema"))...)
		}
		if v.Subresources != nil {
			allErrs = append(allErrs, crdValidateSubresources(v.Subresources, p.Child("subresources"))...)
		}
		allErrs = append(allErrs, crdValidatePrinterColumns(v.AdditionalPrinterColumns, p.Child("additionalPrinterColumns"))...)
		if !v.Deprecated && v.DeprecationWarning != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("deprecationWarning"), *v.DeprecationWarning, "can only be set for deprecated versions"))
		}
	}
	if !unique {
		allErrs = append(allErrs, field.Invalid(fldPath, spec.Versions, "must contain unique version names"))
	}
	if storage != 1 {
		allErrs = append(allErrs, field.Invalid(fldPath, spec.Versions, "must have exactly one version marked as storage version"))
	}
	if served == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath, spec.Versions, "must have at least one served version"))
	}
	return allErrs
}

func crdValidateNames(n *apiextensionsv1.CustomResourceDefinitionNames, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	check := func(name, value string, required bool, mixedCase bool) {
		p := fldPath.Child(name)
		if value == "" {
			if required {
				allErrs = append(allErrs, field.Required(p, ""))
			}
			return
		}
		if mixedCase {
			if errs := utilvalidation.IsDNS1035Label(strings.ToLower(value)); len(errs) > 0 {
				allErrs = append(allErrs, field.Invalid(p, value, "may have mixed case, but should otherwise match: "+strings.Join(errs, ",")))
			}
			return
		}
		if errs := utilvalidation.IsDNS1035Label(value); len(errs) > 0 {
			allErrs = append(allErrs, field.Invalid(p, value, strings.Join(errs, ",")))
		}
	}
	check("plural", n.Plural, true, false)
	check("singular", n.Singular, true, false)
	check("kind", n.Kind, true, true)
	check("listKind", n.ListKind, true, true)
	if n.Kind != "" && n.Kind == n.ListKind {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("listKind"), n.ListKind, "kind and listKind may not be the same"))
	}
	for i, s := range n.ShortNames {
		if errs := utilvalidation.IsDNS1035Label(s); len(errs) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("shortNames").Index(i), s, strings.Join(errs, ",")))
		}
	}
	for i, c := range n.Categories {
		if errs := utilvalidation.IsDNS1035Label(c); len(errs) > 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("categories").Index(i), c, strings.Join(errs, ",")))
		}
	}
	return allErrs
}

func crdValidateConversion(c *apiextensionsv1.CustomResourceConversion, fldPath *field.Path) field.ErrorList {
	if c == nil {
		return nil // defaulted to None before validation
	}
	var allErrs field.ErrorList
	switch c.Strategy {
	case apiextensionsv1.NoneConverter:
		if c.Webhook != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("webhook"), "should not be set when strategy is not set to Webhook"))
		}
	case apiextensionsv1.WebhookConverter:
		if c.Webhook == nil || c.Webhook.ClientConfig == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("webhook", "clientConfig"), "required when strategy is set to Webhook"))
		}
		if c.Webhook != nil {
			if len(c.Webhook.ConversionReviewVersions) == 0 {
				allErrs = append(allErrs, field.Required(fldPath.Child("webhook", "conversionReviewVersions"), "must specify at least one version"))
			}
			ok := false
			for _, v := range c.Webhook.ConversionReviewVersions {
				ok = ok || crdReviewVersions.Has(v)
			}
			if len(c.Webhook.ConversionReviewVersions) > 0 && !ok {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("webhook", "conversionReviewVersions"), c.Webhook.ConversionReviewVersions,
					"must include at least one of v1, v1beta1"))
			}
		}
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("strategy"), ""))
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("strategy"), c.Strategy, crdConversions))
	}
	return allErrs
}

func crdValidateSubresources(s *apiextensionsv1.CustomResourceSubresources, fldPath *field.Path) field.ErrorList {
	sc := s.Scale
	if sc == nil {
		return nil
	}
	var allErrs field.ErrorList
	p := fldPath.Child("scale")
	under := func(name, path string, prefixes ...string) {
		if path == "" {
			allErrs = append(allErrs, field.Required(p.Child(name), ""))
			return
		}
		if !crdSimpleJSONPath(path) {
			allErrs = append(allErrs, field.Invalid(p.Child(name), path, "must be a simple json path starting with ."))
			return
		}
		for _, pre := range prefixes {
			if strings.HasPrefix(path, pre+".") {
				return
			}
		}
		where := "under " + prefixes[0]
		if len(prefixes) > 1 {
			where = "under either " + strings.Join(prefixes, " or ")
		}
		allErrs = append(allErrs, field.Invalid(p.Child(name), path, "should be a json path "+where))
	}
	under("specReplicasPath", sc.SpecReplicasPath, ".spec")
	under("statusReplicasPath", sc.StatusReplicasPath, ".status")
	if sc.LabelSelectorPath != nil {
		under("labelSelectorPath", *sc.LabelSelectorPath, ".spec", ".status")
	}
	return allErrs
}

// crdSimpleJSONPath accepts the dotted paths scale and printer columns use:
// ".spec.replicas", without brackets or filters.
func crdSimpleJSONPath(p string) bool {
	if !strings.HasPrefix(p, ".") || strings.ContainsAny(p, "[]*?@$(){}") {
		return false
	}
	for _, part := range strings.Split(p[1:], ".") {
		if part == "" {
			return false
		}
	}
	return true
}

func crdValidatePrinterColumns(cols []apiextensionsv1.CustomResourceColumnDefinition, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i, c := range cols {
		p := fldPath.Index(i)
		if c.Name == "" {
			allErrs = append(allErrs, field.Required(p.Child("name"), ""))
		} else if seen.Has(c.Name) {
			allErrs = append(allErrs, field.Duplicate(p.Child("name"), c.Name))
		}
		seen.Insert(c.Name)
		if c.Type == "" {
			allErrs = append(allErrs, field.Required(p.Child("type"), fmt.Sprintf("must be one of %s", strings.Join(crdColumnTypes, ", "))))
		} else if !sets.New(crdColumnTypes...).Has(c.Type) {
			allErrs = append(allErrs, field.NotSupported(p.Child("type"), c.Type, crdColumnTypes))
		}
		if c.Format != "" && !sets.New(crdColumnFormats...).Has(c.Format) {
			allErrs = append(allErrs, field.NotSupported(p.Child("format"), c.Format, crdColumnFormats))
		}
		if c.JSONPath == "" {
			allErrs = append(allErrs, field.Required(p.Child("jsonPath"), ""))
		} else if err := jsonpath.New(c.Name).Parse("{" + c.JSONPath + "}"); err != nil || !strings.HasPrefix(c.JSONPath, ".") {
			allErrs = append(allErrs, field.Invalid(p.Child("jsonPath"), c.JSONPath, "must be a simple json path starting with ."))
		}
	}
	return allErrs
}
