package registry

import (
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PodTemplates: a pod template stored on its own, for tools that keep
// templates to stamp pods from. It is validated as every workload's
// template is, minus the rules that come from a controller (restart
// policy, selector); its generation counts changes to the template.

func defaultPodTemplate(obj runtime.Object) {
	DefaultPodSpec(&obj.(*corev1.PodTemplate).Template.Spec)
}

func validatePodTemplateObject(obj runtime.Object) field.ErrorList {
	pt := obj.(*corev1.PodTemplate)
	allErrs := validateCoreMeta(&pt.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return coreUniqueErrs(append(allErrs, validatePodTemplate(&pt.Template, field.NewPath("template"))...))
}

func validatePodTemplateObjectUpdate(obj, old runtime.Object) field.ErrorList {
	pt, o := obj.(*corev1.PodTemplate), old.(*corev1.PodTemplate)
	allErrs := validateCoreMetaUpdate(&pt.ObjectMeta, &o.ObjectMeta)
	return coreUniqueErrs(append(allErrs, validatePodTemplateObject(pt)...))
}

var podTemplateTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Containers", "string", "Names of each container in the template.", 0),
		column("Images", "string", "Images referenced by each container in the template.", 0),
		column("Pod Labels", "string", "The labels for the pod template.", 0),
	},
	Row: func(obj runtime.Object) []interface{} {
		pt := obj.(*corev1.PodTemplate)
		names, images := containerCells(pt.Template.Spec.Containers)
		return []interface{}{pt.Name, names, images, labels.FormatLabels(pt.Template.Labels)}
	},
}
