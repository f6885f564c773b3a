package registry

import (
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// VolumeAttributesClasses (storage.k8s.io/v1, GA in 1.34): the mutable
// attributes of a CSI volume (IOPS, throughput) as a driver names them. A
// claim points at one through spec.volumeAttributesClassName and moves to
// another to have its volume modified; the class itself never changes, so
// that what a volume was modified to stays known.

func volumeAttributesClassResource() *Resource {
	return &Resource{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattributesclasses", Kind: "VolumeAttributesClass",
		Singular: "volumeattributesclass", ShortNames: []string{"vac"},
		New:      func() runtime.Object { return &storagev1.VolumeAttributesClass{} },
		Validate: validateVolumeAttributesClass, ValidateUpdate: validateVolumeAttributesClassUpdate,
		Table: volumeAttributesClassTable}
}

// validateVolumeAttributesClass: a driver name as a StorageClass's
// provisioner, and at least one parameter (a class that changes nothing
// is an error, unlike a StorageClass).
func validateVolumeAttributesClass(obj runtime.Object) field.ErrorList {
	c := obj.(*storagev1.VolumeAttributesClass)
	allErrs := validateCoreMeta(&c.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	allErrs = append(allErrs, storageValidateProvisioner(c.DriverName, field.NewPath("driverName"))...)
	allErrs = append(allErrs, storageValidateParameters(c.Parameters, field.NewPath("parameters"))...)
	if len(c.Parameters) == 0 {
		allErrs = append(allErrs, field.Required(field.NewPath("parameters"), "must contain at least one key/value pair"))
	}
	return allErrs
}

// validateVolumeAttributesClassUpdate: driverName and parameters are
// immutable (only metadata may change).
func validateVolumeAttributesClassUpdate(obj, old runtime.Object) field.ErrorList {
	c, o := obj.(*storagev1.VolumeAttributesClass), old.(*storagev1.VolumeAttributesClass)
	allErrs := validateVolumeAttributesClass(obj)
	allErrs = append(allErrs, validateCoreMetaUpdate(&c.ObjectMeta, &o.ObjectMeta)...)
	if c.DriverName != o.DriverName {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("driverName"), "updates to driverName are forbidden."))
	}
	if !equality.Semantic.DeepEqual(c.Parameters, o.Parameters) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("parameters"), "updates to parameters are forbidden."))
	}
	return dedupFieldErrors(allErrs)
}

var volumeAttributesClassTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "DriverName", Type: "string", Description: storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		c := obj.(*storagev1.VolumeAttributesClass)
		return []interface{}{c.Name, c.DriverName, Age(c.CreationTimestamp)}
	},
}
