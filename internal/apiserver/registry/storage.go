package registry

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// storage.k8s.io/v1: how volumes are provisioned (StorageClasses), which
// CSI drivers exist and how they behave (CSIDrivers), which drivers each
// node runs (CSINodes), how much a driver can still provision where
// (CSIStorageCapacities) and which volumes are attached to which node
// (VolumeAttachments). This file holds the resource list, StorageClasses
// and CSIStorageCapacities; storage_csi.go the rest.

func storageResources() []*Resource {
	const g = "storage.k8s.io"
	return []*Resource{
		{Group: g, Version: "v1", Resource: "csidrivers", Kind: "CSIDriver", Singular: "csidriver", HasGeneration: true,
			New:     func() runtime.Object { return &storagev1.CSIDriver{} },
			Default: defaultCSIDriver, PrepareForCreate: prepareCSIDriverCreate, PrepareForUpdate: prepareCSIDriverUpdate,
			Validate: validateCSIDriver, ValidateUpdate: validateCSIDriverUpdate, Table: csiDriverTable},
		{Group: g, Version: "v1", Resource: "csinodes", Kind: "CSINode", Singular: "csinode",
			New:      func() runtime.Object { return &storagev1.CSINode{} },
			Validate: validateCSINode, ValidateUpdate: validateCSINodeUpdate, Table: csiNodeTable},
		{Group: g, Version: "v1", Resource: "csistoragecapacities", Kind: "CSIStorageCapacity", Singular: "csistoragecapacity", Namespaced: true,
			New:      func() runtime.Object { return &storagev1.CSIStorageCapacity{} },
			Validate: validateCSIStorageCapacity, ValidateUpdate: validateCSIStorageCapacityUpdate, Table: csiStorageCapacityTable},
		{Group: g, Version: "v1", Resource: "storageclasses", Kind: "StorageClass", Singular: "storageclass", ShortNames: []string{"sc"},
			New:     func() runtime.Object { return &storagev1.StorageClass{} },
			Default: defaultStorageClass, Validate: validateStorageClass, ValidateUpdate: validateStorageClassUpdate,
			Table: storageClassTable},
		{Group: g, Version: "v1", Resource: "volumeattachments", Kind: "VolumeAttachment", Singular: "volumeattachment", HasStatus: true,
			New:              func() runtime.Object { return &storagev1.VolumeAttachment{} },
			PrepareForCreate: prepareVolumeAttachmentCreate,
			Validate:         validateVolumeAttachment, ValidateUpdate: validateVolumeAttachmentUpdate,
			ValidateStatusUpdate: validateVolumeAttachmentStatusUpdate, Table: volumeAttachmentTable},
		volumeAttributesClassResource(),
	}
}

const (
	storageMaxParameters     = 512
	storageMaxParametersSize = 256 * (1 << 10)
	// The annotations that make a class the one claims without a
	// storageClassName get; kubectl marks it "(default)".
	storageDefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	storageBetaDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

var (
	storageReclaimPolicies = []string{string(corev1.PersistentVolumeReclaimDelete), string(corev1.PersistentVolumeReclaimRetain)}
	storageBindingModes    = []string{string(storagev1.VolumeBindingImmediate), string(storagev1.VolumeBindingWaitForFirstConsumer)}
)

func defaultStorageClass(obj runtime.Object) {
	sc := obj.(*storagev1.StorageClass)
	if sc.ReclaimPolicy == nil {
		sc.ReclaimPolicy = new(corev1.PersistentVolumeReclaimDelete)
	}
	if sc.VolumeBindingMode == nil {
		sc.VolumeBindingMode = new(storagev1.VolumeBindingImmediate)
	}
}

func validateStorageClass(obj runtime.Object) field.ErrorList {
	sc := obj.(*storagev1.StorageClass)
	allErrs := validateCoreMeta(&sc.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	allErrs = append(allErrs, storageValidateProvisioner(sc.Provisioner, field.NewPath("provisioner"))...)
	allErrs = append(allErrs, storageValidateParameters(sc.Parameters, field.NewPath("parameters"))...)
	// An empty reclaim policy passes, as upstream: only a wrong word fails.
	if p := sc.ReclaimPolicy; p != nil && *p != "" && !slices.Contains(storageReclaimPolicies, string(*p)) {
		allErrs = append(allErrs, field.NotSupported(field.NewPath("reclaimPolicy"), *p, storageReclaimPolicies))
	}
	switch m, p := sc.VolumeBindingMode, field.NewPath("volumeBindingMode"); {
	case m == nil:
		allErrs = append(allErrs, field.Required(p, ""))
	case !slices.Contains(storageBindingModes, string(*m)):
		allErrs = append(allErrs, field.NotSupported(p, *m, storageBindingModes))
	}
	return append(allErrs, storageValidateTopologies(sc.AllowedTopologies, field.NewPath("allowedTopologies"))...)
}

// validateStorageClassUpdate keeps everything that shaped the volumes
// already provisioned from the class: who provisions, with which
// parameters, what happens on release and when binding happens. Mount
// options, expansion and topologies may change.
func validateStorageClassUpdate(obj, old runtime.Object) field.ErrorList {
	sc, o := obj.(*storagev1.StorageClass), old.(*storagev1.StorageClass)
	allErrs := validateStorageClass(obj)
	allErrs = append(allErrs, validateCoreMetaUpdate(&sc.ObjectMeta, &o.ObjectMeta)...)
	if !equality.Semantic.DeepEqual(sc.Parameters, o.Parameters) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	if sc.Provisioner != o.Provisioner {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("provisioner"), "updates to provisioner are forbidden."))
	}
	if derefString(sc.ReclaimPolicy) != derefString(o.ReclaimPolicy) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("reclaimPolicy"), "updates to reclaimPolicy are forbidden."))
	}
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(sc.VolumeBindingMode, o.VolumeBindingMode, field.NewPath("volumeBindingMode"))...)
	return dedupFieldErrors(allErrs)
}

// derefString reads an optional string-typed field, "" when unset.
func derefString[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// storageValidateProvisioner: provisioner names are qualified names,
// compared case-insensitively ("kubernetes.io/AWS-EBS" is accepted).
func storageValidateProvisioner(provisioner string, fldPath *field.Path) field.ErrorList {
	if provisioner == "" {
		return field.ErrorList{field.Required(fldPath, "")}
	}
	var allErrs field.ErrorList
	lower := strings.ToLower(provisioner)
	for _, msg := range utilvalidation.IsQualifiedName(lower) {
		allErrs = append(allErrs, field.Invalid(fldPath, lower, msg))
	}
	return allErrs
}

// storageValidateParameters bounds what a provisioner is handed, so one
// class cannot make every provisioning call carry megabytes.
func storageValidateParameters(params map[string]string, fldPath *field.Path) field.ErrorList {
	if len(params) > storageMaxParameters {
		return field.ErrorList{field.TooLong(fldPath, "", storageMaxParameters)}
	}
	var allErrs field.ErrorList
	size := 0
	for k, v := range params {
		if k == "" {
			allErrs = append(allErrs, field.Invalid(fldPath, k, "field can not be empty."))
		}
		size += len(k) + len(v)
	}
	if size > storageMaxParametersSize {
		allErrs = append(allErrs, field.TooLong(fldPath, "", storageMaxParametersSize))
	}
	return allErrs
}

// storageValidateTopologies checks allowedTopologies: each term a set of
// label keys with non-empty value sets, no term given twice.
func storageValidateTopologies(terms []corev1.TopologySelectorTerm, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	var seen []map[string]sets.Set[string]
	for i, term := range terms {
		termPath := fldPath.Index(i)
		exprPath := termPath.Child("matchLabelExpressions")
		exprs := map[string]sets.Set[string]{}
		for j, req := range term.MatchLabelExpressions {
			reqPath := exprPath.Index(j)
			valuesPath := reqPath.Child("values")
			if len(req.Values) == 0 {
				allErrs = append(allErrs, field.Required(valuesPath, ""))
			}
			values := sets.New[string]()
			for k, v := range req.Values {
				if values.Has(v) {
					allErrs = append(allErrs, field.Duplicate(valuesPath.Index(k), v))
				}
				values.Insert(v)
			}
			allErrs = append(allErrs, metav1validation.ValidateLabelName(req.Key, reqPath.Child("key"))...)
			if _, dup := exprs[req.Key]; dup {
				allErrs = append(allErrs, field.Duplicate(reqPath.Child("key"), req.Key))
			}
			exprs[req.Key] = values
		}
		for _, prev := range seen {
			if equality.Semantic.DeepEqual(prev, exprs) {
				allErrs = append(allErrs, field.Duplicate(exprPath, ""))
				break
			}
		}
		seen = append(seen, exprs)
	}
	return allErrs
}

// storageClassTable prints the defaults for an unset reclaim policy and
// binding mode, as kubectl does for objects stored before defaulting.
var storageClassTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Provisioner", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["provisioner"]},
		{Name: "ReclaimPolicy", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["reclaimPolicy"]},
		{Name: "VolumeBindingMode", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["volumeBindingMode"]},
		{Name: "AllowVolumeExpansion", Type: "string", Description: storagev1.StorageClass{}.SwaggerDoc()["allowVolumeExpansion"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		sc := obj.(*storagev1.StorageClass)
		name := sc.Name
		if sc.Annotations[storageDefaultClassAnnotation] == "true" || sc.Annotations[storageBetaDefaultClassAnnotation] == "true" {
			name += " (default)"
		}
		reclaim := string(corev1.PersistentVolumeReclaimDelete)
		if sc.ReclaimPolicy != nil {
			reclaim = string(*sc.ReclaimPolicy)
		}
		binding := string(storagev1.VolumeBindingImmediate)
		if sc.VolumeBindingMode != nil {
			binding = string(*sc.VolumeBindingMode)
		}
		expansion := sc.AllowVolumeExpansion != nil && *sc.AllowVolumeExpansion
		return []interface{}{name, sc.Provisioner, reclaim, binding, expansion, Age(sc.CreationTimestamp)}
	},
}

// CSIStorageCapacities

func validateCSIStorageCapacity(obj runtime.Object) field.ErrorList {
	return storageValidateCapacity(obj.(*storagev1.CSIStorageCapacity), false)
}

func storageValidateCapacity(c *storagev1.CSIStorageCapacity, allowInvalidLabelValue bool) field.ErrorList {
	allErrs := validateCoreMeta(&c.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidLabelValue}
	allErrs = append(allErrs, metav1validation.ValidateLabelSelector(c.NodeTopology, opts, field.NewPath("nodeTopology"))...)
	for _, msg := range apivalidation.NameIsDNSSubdomain(c.StorageClassName, false) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, msg))
	}
	if c.Capacity != nil && c.Capacity.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(field.NewPath("capacity"), c.Capacity.String(), apivalidation.IsNegativeErrorMsg))
	}
	return allErrs
}

// validateCSIStorageCapacityUpdate keeps the inputs of the driver's
// GetCapacity call (topology and class); only the answers may change.
func validateCSIStorageCapacityUpdate(obj, old runtime.Object) field.ErrorList {
	c, o := obj.(*storagev1.CSIStorageCapacity), old.(*storagev1.CSIStorageCapacity)
	allowInvalid := o.NodeTopology != nil && metav1validation.LabelSelectorHasInvalidLabelValue(o.NodeTopology)
	allErrs := storageValidateCapacity(c, allowInvalid)
	allErrs = append(allErrs, validateCoreMetaUpdate(&c.ObjectMeta, &o.ObjectMeta)...)
	if !equality.Semantic.DeepEqual(c.NodeTopology, o.NodeTopology) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("nodeTopology"), c.NodeTopology, "field is immutable"))
	}
	if c.StorageClassName != o.StorageClassName {
		allErrs = append(allErrs, field.Invalid(field.NewPath("storageClassName"), c.StorageClassName, "field is immutable"))
	}
	return dedupFieldErrors(allErrs)
}

var csiStorageCapacityTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "StorageClassName", Type: "string", Description: storagev1.CSIStorageCapacity{}.SwaggerDoc()["storageClassName"]},
		{Name: "Capacity", Type: "string", Description: storagev1.CSIStorageCapacity{}.SwaggerDoc()["capacity"]},
	},
	Row: func(obj runtime.Object) []interface{} {
		c := obj.(*storagev1.CSIStorageCapacity)
		capacity := "<unset>"
		if c.Capacity != nil {
			capacity = c.Capacity.String()
		}
		return []interface{}{c.Name, c.StorageClassName, capacity}
	},
}

// dedupFieldErrors drops repeated errors. Update validation re-runs the
// create checks next to the update checks, and both look at metadata, so
// without this a bad label would be reported twice; a client should see
// each problem once.
func dedupFieldErrors(errs field.ErrorList) field.ErrorList {
	seen := make(map[string]bool, len(errs))
	out := errs[:0:0]
	for _, e := range errs {
		key := fmt.Sprintf("%s\x00%s\x00%s", e.Type, e.Field, e.ErrorBody())
		if !seen[key] {
			seen[key] = true
			out = append(out, e)
		}
	}
	return out
}
