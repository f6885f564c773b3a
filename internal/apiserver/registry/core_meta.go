package registry

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Checks shared by the core/v1 strategies. Upstream's core validation adds a
// rule on top of the generic ObjectMeta checks: a finalizer without a
// domain must be one Kubernetes itself defines, so "my-finalizer" is
// rejected while "example.com/my-finalizer" is fine.

var standardFinalizers = sets.New(
	string(corev1.FinalizerKubernetes),
	metav1.FinalizerOrphanDependents,
	metav1.FinalizerDeleteDependents,
)

const (
	fieldImmutableMsg   = "field is immutable"
	fileModeErrorMsg    = "must be a number between 0 and 0777 (octal), both inclusive"
	isNotPositiveMsg    = "must be greater than zero"
	isNotIntegerMsg     = "must be an integer"
	immutableObjectMsg  = "field is immutable when `immutable` is set"
	maxClientIPAffinity = 86400
)

// validateCoreMeta is ValidateMeta plus core's finalizer-name rule.
func validateCoreMeta(meta *metav1.ObjectMeta, namespaced bool, nameFn apivalidation.ValidateNameFunc) field.ErrorList {
	allErrs := ValidateMeta(meta, namespaced, nameFn)
	return append(allErrs, validateKubeFinalizers(meta.Finalizers, field.NewPath("metadata", "finalizers"))...)
}

// validateCoreMetaUpdate is ValidateMetaUpdate plus core's finalizer-name rule.
func validateCoreMetaUpdate(meta, old *metav1.ObjectMeta) field.ErrorList {
	allErrs := ValidateMetaUpdate(meta, old)
	return append(allErrs, validateKubeFinalizers(meta.Finalizers, field.NewPath("metadata", "finalizers"))...)
}

func validateKubeFinalizers(finalizers []string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for i, f := range finalizers {
		allErrs = append(allErrs, validateKubeFinalizerName(f, fldPath.Index(i))...)
	}
	return allErrs
}

func validateKubeFinalizerName(name string, fldPath *field.Path) field.ErrorList {
	if strings.Contains(name, "/") || standardFinalizers.Has(name) {
		// Qualified names are checked by the generic metadata validation.
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath, name, "name is neither a standard finalizer name nor is it fully qualified")}
}

// nameErrors turns a name function's messages into field errors.
func nameErrors(nameFn apivalidation.ValidateNameFunc, name string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range nameFn(name, false) {
		allErrs = append(allErrs, field.Invalid(fldPath, name, msg))
	}
	return allErrs
}

func validateDNS1123Label(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateDNS1123Subdomain(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validateQualifiedName(value string, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		allErrs = append(allErrs, field.Invalid(fldPath, value, msg))
	}
	return allErrs
}

func validatePortNum(port int32, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, msg := range validation.IsValidPortNum(int(port)) {
		allErrs = append(allErrs, field.Invalid(fldPath, port, msg))
	}
	return allErrs
}

func validateNonnegative(value int64, fldPath *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(value, fldPath)
}

// orNone renders an empty table cell the way kubectl does.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// column is shorthand for a table column definition.
func column(name, typ, description string, priority int32) metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: name, Type: typ, Description: description, Priority: priority}
}
