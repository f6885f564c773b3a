package registry

import (
	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// node.k8s.io/v1: RuntimeClasses. A pod's runtimeClassName picks the
// container runtime configuration (the CRI handler) that runs it, plus
// the extra resources that configuration costs (overhead) and the nodes
// that offer it (scheduling).

func nodeResources() []*Resource {
	return []*Resource{
		{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses", Kind: "RuntimeClass", Singular: "runtimeclass",
			New:      func() runtime.Object { return &nodev1.RuntimeClass{} },
			Validate: validateRuntimeClass, ValidateUpdate: validateRuntimeClassUpdate, Table: runtimeClassTable},
	}
}

// validateRuntimeClass checks a RuntimeClass. The handler becomes part of
// the runtime's configuration keys, hence a DNS label. Upstream validates
// this kind's metadata with the generic rules, without core's finalizer
// check.
func validateRuntimeClass(obj runtime.Object) field.ErrorList {
	rc := obj.(*nodev1.RuntimeClass)
	allErrs := ValidateMeta(&rc.ObjectMeta, false, apivalidation.NameIsDNSSubdomain)
	for _, msg := range apivalidation.NameIsDNSLabel(rc.Handler, false) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("handler"), rc.Handler, msg))
	}
	if rc.Overhead != nil {
		// Upstream checks the overhead as container limits, under
		// overhead.limits, and so does this.
		allErrs = append(allErrs, validateResourceRequirements(&corev1.ResourceRequirements{Limits: rc.Overhead.PodFixed}, field.NewPath("overhead"))...)
	}
	if s := rc.Scheduling; s != nil {
		p := field.NewPath("scheduling")
		if s.NodeSelector != nil {
			allErrs = append(allErrs, metav1validation.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
		}
		allErrs = append(allErrs, validateTolerations(s.Tolerations, p.Child("tolerations"))...)
	}
	return allErrs
}

// validateRuntimeClassUpdate keeps the handler: pods admitted under the
// class were placed and configured for it.
func validateRuntimeClassUpdate(obj, old runtime.Object) field.ErrorList {
	rc, o := obj.(*nodev1.RuntimeClass), old.(*nodev1.RuntimeClass)
	allErrs := validateRuntimeClass(obj)
	allErrs = append(allErrs, ValidateMetaUpdate(&rc.ObjectMeta, &o.ObjectMeta)...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(rc.Handler, o.Handler, field.NewPath("handler"))...)
	return dedupFieldErrors(allErrs)
}

var runtimeClassTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		// Upstream describes the column with ObjectMeta's (absent) "handler"
		// doc, i.e. an empty string.
		{Name: "Handler", Type: "string", Description: metav1.ObjectMeta{}.SwaggerDoc()["handler"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		rc := obj.(*nodev1.RuntimeClass)
		return []interface{}{rc.Name, rc.Handler, Age(rc.CreationTimestamp)}
	},
}
