package registry

import (
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ReplicationControllers: the ReplicaSet's predecessor, still served
// because old manifests and `kubectl scale rc` use it. Two differences
// from a ReplicaSet matter to users: the selector is a plain label map
// that may be left out (it then comes from the template's labels, and so
// do the controller's own labels when it has none), and the template is a
// pointer, so "no template" is an error of its own.

func defaultReplicationController(obj runtime.Object) {
	rc := obj.(*corev1.ReplicationController)
	if tmpl := rc.Spec.Template; tmpl != nil && tmpl.Labels != nil {
		if len(rc.Spec.Selector) == 0 {
			rc.Spec.Selector = maps.Clone(tmpl.Labels)
		}
		if len(rc.Labels) == 0 {
			rc.Labels = maps.Clone(tmpl.Labels)
		}
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = new(int32(1))
	}
	if rc.Spec.Template != nil {
		DefaultPodSpec(&rc.Spec.Template.Spec)
	}
}

func prepareReplicationControllerCreate(obj runtime.Object) {
	obj.(*corev1.ReplicationController).Status = corev1.ReplicationControllerStatus{}
}

func validateReplicationController(obj runtime.Object) field.ErrorList {
	rc := obj.(*corev1.ReplicationController)
	allErrs := validateCoreMeta(&rc.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return coreUniqueErrs(append(allErrs, rcValidateSpec(&rc.Spec, field.NewPath("spec"))...))
}

// validateReplicationControllerUpdate checks the spec once. Upstream runs
// the same spec validation twice on an update, which only repeats causes;
// the selector may change, unlike a ReplicaSet's.
func validateReplicationControllerUpdate(obj, old runtime.Object) field.ErrorList {
	rc, o := obj.(*corev1.ReplicationController), old.(*corev1.ReplicationController)
	allErrs := validateCoreMetaUpdate(&rc.ObjectMeta, &o.ObjectMeta)
	return coreUniqueErrs(append(allErrs, validateReplicationController(rc)...))
}

func rcValidateSpec(spec *corev1.ReplicationControllerSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateNonnegative(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))
	if labels.Set(spec.Selector).AsSelector().Empty() {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), ""))
	}
	allErrs = append(allErrs, validateNonnegative(int64(derefInt32(spec.Replicas)), fldPath.Child("replicas"))...)

	tmplPath := fldPath.Child("template")
	tmpl := spec.Template
	if tmpl == nil {
		return append(allErrs, field.Required(tmplPath, ""))
	}
	if sel := labels.Set(spec.Selector).AsSelector(); !sel.Empty() {
		allErrs = append(allErrs, validateSelectorMatchesTemplate(sel, tmpl, tmplPath)...)
	}
	allErrs = append(allErrs, validatePodTemplate(tmpl, tmplPath)...)
	return append(allErrs, validateLongRunningTemplate(tmpl, "ReplicationController", tmplPath)...)
}

func validateReplicationControllerStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	p := field.NewPath("status")
	s := &obj.(*corev1.ReplicationController).Status
	allErrs := nonNegativeCounts(p, []namedCount{
		{"replicas", s.Replicas}, {"fullyLabeledReplicas", s.FullyLabeledReplicas},
		{"readyReplicas", s.ReadyReplicas}, {"availableReplicas", s.AvailableReplicas},
	})
	allErrs = append(allErrs, validateNonnegative(s.ObservedGeneration, p.Child("observedGeneration"))...)
	return append(allErrs, replicaCountsConsistent(p, s.Replicas, s.ReadyReplicas, s.AvailableReplicas,
		namedCount{"fullyLabeledReplicas", s.FullyLabeledReplicas})...)
}

// replicationControllerFields is what upstream lets clients select
// replication controllers by besides name and namespace.
func replicationControllerFields(obj runtime.Object) fields.Set {
	return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*corev1.ReplicationController).Status.Replicas))}
}

var replicationControllerTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Desired", Type: "integer", Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Ready", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]},
		ageColumn,
		containersColumn,
		imagesColumn,
		selectorColumn(corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"]),
	},
	Row: func(obj runtime.Object) []interface{} {
		rc := obj.(*corev1.ReplicationController)
		var containers []corev1.Container
		if rc.Spec.Template != nil {
			containers = rc.Spec.Template.Spec.Containers
		}
		names, images := containerCells(containers)
		return []interface{}{
			rc.Name,
			int64(derefInt32(rc.Spec.Replicas)),
			int64(rc.Status.Replicas),
			int64(rc.Status.ReadyReplicas),
			Age(rc.CreationTimestamp),
			names, images, labels.FormatLabels(rc.Spec.Selector),
		}
	},
}

// replicationControllerScale reports the selector as a label query string,
// which is what an autoscaler reading /scale expects.
var replicationControllerScale = &ScaleAccess{
	Get: func(obj runtime.Object) (int32, int32, string) {
		rc := obj.(*corev1.ReplicationController)
		return derefInt32(rc.Spec.Replicas), rc.Status.Replicas, labels.SelectorFromSet(rc.Spec.Selector).String()
	},
	Set: func(obj runtime.Object, replicas int32) {
		obj.(*corev1.ReplicationController).Spec.Replicas = new(replicas)
	},
}

// coreUniqueErrs drops errors that repeat one already in the list (same
// type, field, value and detail): an update validates the new object's
// metadata both as new and as changed, and a repeated cause tells the
// client nothing.
func coreUniqueErrs(errs field.ErrorList) field.ErrorList {
	if len(errs) < 2 {
		return errs
	}
	seen := make(map[string]bool, len(errs))
	out := errs[:0:0]
	for _, e := range errs {
		key := e.Error()
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, e)
	}
	return out
}
