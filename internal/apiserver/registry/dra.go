package registry

import (
	"fmt"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/cel"
)

// resource.k8s.io/v1: Dynamic Resource Allocation (GA in 1.34). Drivers
// publish the devices of a pool in ResourceSlices; administrators describe
// kinds of devices with DeviceClasses; a pod asks for devices through
// ResourceClaims (or ResourceClaimTemplates, from which one claim per pod
// is made), and the scheduler writes the chosen devices into the claim's
// status.allocation. This file holds the resource list, DeviceClasses and
// what the kinds share (selectors, opaque configuration); dra_claims.go
// holds claims and templates, dra_slices.go slices.
//
// Validation covers what upstream's does for the fields every driver and
// client uses; the alpha and beta fields behind feature gates that are
// off by default (binding conditions, consumable capacity, device taints'
// eviction) are accepted as they come.

func resourceResources() []*Resource {
	const g = "resource.k8s.io"
	return []*Resource{
		{Group: g, Version: "v1", Resource: "deviceclasses", Kind: "DeviceClass", Singular: "deviceclass", HasGeneration: true,
			New:      func() runtime.Object { return &resourcev1.DeviceClass{} },
			Validate: validateDeviceClass, ValidateUpdate: validateDeviceClassUpdate, Table: draNameAgeTable},
		{Group: g, Version: "v1", Resource: "resourceclaims", Kind: "ResourceClaim", Singular: "resourceclaim", Namespaced: true, HasStatus: true,
			New:     func() runtime.Object { return &resourcev1.ResourceClaim{} },
			Default: defaultResourceClaim, PrepareForCreate: prepareResourceClaimCreate,
			Validate: validateResourceClaim, ValidateUpdate: validateResourceClaimUpdate,
			ValidateStatusUpdate: validateResourceClaimStatusUpdate, Table: resourceClaimTable},
		{Group: g, Version: "v1", Resource: "resourceclaimtemplates", Kind: "ResourceClaimTemplate", Singular: "resourceclaimtemplate", Namespaced: true,
			New:     func() runtime.Object { return &resourcev1.ResourceClaimTemplate{} },
			Default: defaultResourceClaimTemplate, Validate: validateResourceClaimTemplate, ValidateUpdate: validateResourceClaimTemplateUpdate,
			Table: draNameAgeTable},
		{Group: g, Version: "v1", Resource: "resourceslices", Kind: "ResourceSlice", Singular: "resourceslice",
			New:      func() runtime.Object { return &resourcev1.ResourceSlice{} },
			Validate: validateResourceSlice, ValidateUpdate: validateResourceSliceUpdate,
			Fields: resourceSliceFields, Table: resourceSliceTable},
	}
}

// DeviceClasses

func validateDeviceClass(obj runtime.Object) field.ErrorList {
	c := obj.(*resourcev1.DeviceClass)
	allErrs := validateCoreMeta(&c.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	allErrs = append(allErrs, draValidateSelectors(c.Spec.Selectors, spec.Child("selectors"))...)
	if len(c.Spec.Config) > resourcev1.DeviceConfigMaxSize {
		allErrs = append(allErrs, field.TooMany(spec.Child("config"), len(c.Spec.Config), resourcev1.DeviceConfigMaxSize))
	}
	for i, cfg := range c.Spec.Config {
		allErrs = append(allErrs, draValidateOpaque(cfg.Opaque, spec.Child("config").Index(i))...)
	}
	if n := c.Spec.ExtendedResourceName; n != nil {
		for _, msg := range utilvalidation.IsQualifiedName(*n) {
			allErrs = append(allErrs, field.Invalid(spec.Child("extendedResourceName"), *n, msg))
		}
	}
	return allErrs
}

// validateDeviceClassUpdate: a class may change as a whole (claims copy
// what they need at allocation).
func validateDeviceClassUpdate(obj, old runtime.Object) field.ErrorList {
	c, o := obj.(*resourcev1.DeviceClass), old.(*resourcev1.DeviceClass)
	allErrs := validateDeviceClass(obj)
	return dedupFieldErrors(append(allErrs, validateCoreMetaUpdate(&c.ObjectMeta, &o.ObjectMeta)...))
}

// Selectors and configuration, shared by classes and claims.

// draValidateSelectors: at most 32, each a CEL expression over `device`
// that compiles and yields a bool.
func draValidateSelectors(selectors []resourcev1.DeviceSelector, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(selectors) > resourcev1.DeviceSelectorsMaxSize {
		allErrs = append(allErrs, field.TooMany(fldPath, len(selectors), resourcev1.DeviceSelectorsMaxSize))
	}
	for i, s := range selectors {
		p := fldPath.Index(i)
		if s.CEL == nil {
			allErrs = append(allErrs, field.Required(p.Child("cel"), ""))
			continue
		}
		allErrs = append(allErrs, draValidateCEL(s.CEL.Expression, p.Child("cel", "expression"))...)
	}
	return allErrs
}

// draCELEnv is the environment of device selectors: Kubernetes' CEL
// libraries and the variable `device` (driver, attributes, capacity).
var draCELEnv = sync.OnceValues(func() (*celgo.Env, error) {
	return celgo.NewEnv(append(cel.Libraries(), celgo.Variable("device", celgo.DynType))...)
})

func draValidateCEL(expr string, p *field.Path) field.ErrorList {
	switch {
	case expr == "":
		return field.ErrorList{field.Required(p, "")}
	case len(expr) > resourcev1.CELSelectorExpressionMaxLength:
		return field.ErrorList{field.TooLong(p, "", resourcev1.CELSelectorExpressionMaxLength)}
	}
	env, err := draCELEnv()
	if err != nil {
		return field.ErrorList{field.InternalError(p, fmt.Errorf("CEL environment: %w", err))}
	}
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		return field.ErrorList{field.Invalid(p, expr, "compilation failed: "+iss.String())}
	}
	if t := checked.OutputType(); !t.IsExactType(celgo.BoolType) && !t.IsExactType(celgo.DynType) {
		return field.ErrorList{field.Invalid(p, expr, "must evaluate to bool")}
	}
	return nil
}

// draValidateOpaque: a driver's own parameters, as JSON of at most 10 KiB.
func draValidateOpaque(o *resourcev1.OpaqueDeviceConfiguration, fldPath *field.Path) field.ErrorList {
	if o == nil {
		return field.ErrorList{field.Required(fldPath.Child("opaque"), "")}
	}
	p := fldPath.Child("opaque")
	allErrs := draValidateDriverName(o.Driver, p.Child("driver"))
	switch raw := o.Parameters.Raw; {
	case len(raw) == 0:
		allErrs = append(allErrs, field.Required(p.Child("parameters"), ""))
	case len(raw) > resourcev1.OpaqueParametersMaxLength:
		allErrs = append(allErrs, field.TooLong(p.Child("parameters"), "", resourcev1.OpaqueParametersMaxLength))
	}
	return allErrs
}

// draValidateDriverName: a DNS subdomain of at most 63 characters.
func draValidateDriverName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var allErrs field.ErrorList
	if len(name) > resourcev1.DriverNameMaxLength {
		allErrs = append(allErrs, field.TooLong(p, "", resourcev1.DriverNameMaxLength))
	}
	for _, msg := range utilvalidation.IsDNS1123Subdomain(name) {
		allErrs = append(allErrs, field.Invalid(p, name, msg))
	}
	return allErrs
}

// draValidatePoolName: one or more DNS subdomains joined by "/", at most
// 253 characters in all.
func draValidatePoolName(name string, p *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(p, "")}
	}
	var allErrs field.ErrorList
	if len(name) > resourcev1.PoolNameMaxLength {
		allErrs = append(allErrs, field.TooLong(p, "", resourcev1.PoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		for _, msg := range utilvalidation.IsDNS1123Subdomain(part) {
			allErrs = append(allErrs, field.Invalid(p, name, msg))
		}
	}
	return allErrs
}

// draValidateNames checks a list of DNS-label names that must be unique
// (requests, subrequests, devices); name(i) returns the i-th.
func draValidateNames(n int, name func(int) string, fldPath func(int) *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	seen := sets.New[string]()
	for i := range n {
		v, p := name(i), fldPath(i)
		if v == "" {
			allErrs = append(allErrs, field.Required(p, ""))
			continue
		}
		for _, msg := range utilvalidation.IsDNS1123Label(v) {
			allErrs = append(allErrs, field.Invalid(p, v, msg))
		}
		if seen.Has(v) {
			allErrs = append(allErrs, field.Duplicate(p, v))
		}
		seen.Insert(v)
	}
	return allErrs
}

// draNameAgeTable is upstream's table for classes and templates.
var draNameAgeTable = &Table{
	Columns: []metav1.TableColumnDefinition{nameColumn, ageColumn},
	Row: func(obj runtime.Object) []interface{} {
		m := objectMetaOf(obj)
		return []interface{}{m.Name, Age(m.CreationTimestamp)}
	},
}

func objectMetaOf(obj runtime.Object) *metav1.ObjectMeta {
	switch o := obj.(type) {
	case *resourcev1.DeviceClass:
		return &o.ObjectMeta
	case *resourcev1.ResourceClaimTemplate:
		return &o.ObjectMeta
	}
	return &metav1.ObjectMeta{}
}

// resourceSliceFields: the kubelet and drivers list the slices of one
// node or one driver.
func resourceSliceFields(obj runtime.Object) fields.Set {
	s := obj.(*resourcev1.ResourceSlice)
	node := ""
	if s.Spec.NodeName != nil {
		node = *s.Spec.NodeName
	}
	return fields.Set{"spec.nodeName": node, "spec.driver": s.Spec.Driver}
}
