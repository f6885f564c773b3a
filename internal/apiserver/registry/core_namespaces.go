package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The namespace strategy. A namespace is born Active with the "kubernetes"
// finalizer, which the namespace controller removes once it has emptied the
// namespace; until then deletion leaves it Terminating. Users cannot edit
// spec.finalizers through an update: that is the finalize subresource's job.

func defaultNamespace(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	// The name label lets selectors pick namespaces by name; it is always
	// overwritten so that it cannot lie. generateName leaves it for later.
	if ns.Name != "" {
		if ns.Labels == nil {
			ns.Labels = map[string]string{}
		}
		ns.Labels[corev1.LabelMetadataName] = ns.Name
	}
	if ns.Status.Phase == "" {
		ns.Status.Phase = corev1.NamespaceActive
	}
}

func prepareCreateNamespace(obj runtime.Object) {
	ns := obj.(*corev1.Namespace)
	// Again here, in case the server generated the name after defaulting.
	defaultNamespace(ns)
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

func prepareUpdateNamespace(obj, old runtime.Object) {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	ns.Spec.Finalizers = oldNS.Spec.Finalizers
}

func validateNamespace(obj runtime.Object) field.ErrorList {
	ns := obj.(*corev1.Namespace)
	allErrs := validateCoreMeta(&ns.ObjectMeta, false, apivalidation.ValidateNamespaceName)
	for i, f := range ns.Spec.Finalizers {
		p := field.NewPath("spec", "finalizers").Index(i)
		allErrs = append(allErrs, validateQualifiedName(string(f), p)...)
		allErrs = append(allErrs, validateKubeFinalizerName(string(f), p)...)
	}
	return allErrs
}

func validateNamespaceUpdate(obj, old runtime.Object) field.ErrorList {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	allErrs := validateCoreMetaUpdate(&ns.ObjectMeta, &oldNS.ObjectMeta)
	return append(allErrs, validateNamespace(obj)...)
}

func validateNamespaceStatusUpdate(obj, old runtime.Object) field.ErrorList {
	ns, oldNS := obj.(*corev1.Namespace), old.(*corev1.Namespace)
	allErrs := validateCoreMetaUpdate(&ns.ObjectMeta, &oldNS.ObjectMeta)
	// Upstream spells this path segment "Phase".
	phasePath := field.NewPath("status", "Phase")
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			allErrs = append(allErrs, field.Invalid(phasePath, ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		allErrs = append(allErrs, field.Invalid(phasePath, ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return allErrs
}

func namespaceFields(obj runtime.Object) fields.Set {
	return fields.Set{"status.phase": string(obj.(*corev1.Namespace).Status.Phase)}
}

var namespaceTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Status", "string", "The status of the namespace", 0),
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		ns := obj.(*corev1.Namespace)
		return []interface{}{ns.Name, string(ns.Status.Phase), Age(ns.CreationTimestamp)}
	},
}
