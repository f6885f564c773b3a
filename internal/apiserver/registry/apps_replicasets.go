package registry

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func defaultReplicaSet(obj runtime.Object) {
	rs := obj.(*appsv1.ReplicaSet)
	if rs.Spec.Replicas == nil {
		rs.Spec.Replicas = new(int32(1))
	}
	DefaultPodSpec(&rs.Spec.Template.Spec)
}

func prepareReplicaSetCreate(obj runtime.Object) {
	obj.(*appsv1.ReplicaSet).Status = appsv1.ReplicaSetStatus{}
}

func validateReplicaSet(obj runtime.Object) field.ErrorList {
	rs := obj.(*appsv1.ReplicaSet)
	allErrs := ValidateMeta(&rs.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
}

func validateReplicaSetUpdate(obj, old runtime.Object) field.ErrorList {
	rs, o := obj.(*appsv1.ReplicaSet), old.(*appsv1.ReplicaSet)
	allErrs := ValidateMetaUpdate(&rs.ObjectMeta, &o.ObjectMeta)
	allErrs = append(allErrs, validateReplicaSetSpec(&rs.Spec, field.NewPath("spec"))...)
	return append(allErrs, apivalidation.ValidateImmutableField(rs.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))...)
}

func validateReplicaSetSpec(spec *appsv1.ReplicaSetSpec, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateNonnegativeField(int64(derefInt32(spec.Replicas)), fldPath.Child("replicas"))
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	// "deployment" is not a slip: upstream words the replicaset message so.
	return append(allErrs, validateReplicaSetLikeTemplate(spec.Selector, &spec.Template, "deployment", fldPath)...)
}

func validateReplicaSetStatusUpdate(obj, _ runtime.Object) field.ErrorList {
	p := field.NewPath("status")
	s := &obj.(*appsv1.ReplicaSet).Status
	allErrs := nonNegativeCounts(p, []namedCount{
		{"replicas", s.Replicas}, {"fullyLabeledReplicas", s.FullyLabeledReplicas},
		{"readyReplicas", s.ReadyReplicas}, {"availableReplicas", s.AvailableReplicas},
	})
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, p.Child("observedGeneration"))...)
	if s.TerminatingReplicas != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*s.TerminatingReplicas), p.Child("terminatingReplicas"))...)
	}
	return append(allErrs, replicaCountsConsistent(p, s.Replicas, s.ReadyReplicas, s.AvailableReplicas, namedCount{"fullyLabeledReplicas", s.FullyLabeledReplicas})...)
}

// replicaSetFields lets clients (the deployment controller among them) list
// replicasets by how many pods they run.
func replicaSetFields(obj runtime.Object) fields.Set {
	return fields.Set{"status.replicas": strconv.Itoa(int(obj.(*appsv1.ReplicaSet).Status.Replicas))}
}

var replicaSetTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Desired", Type: "integer", Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Ready", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]},
		ageColumn,
		containersColumn,
		imagesColumn,
		selectorColumn(appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]),
	},
	Row: func(obj runtime.Object) []interface{} {
		rs := obj.(*appsv1.ReplicaSet)
		names, images := containerCells(rs.Spec.Template.Spec.Containers)
		return []interface{}{
			rs.Name,
			int64(derefInt32(rs.Spec.Replicas)),
			int64(rs.Status.Replicas),
			int64(rs.Status.ReadyReplicas),
			Age(rs.CreationTimestamp),
			names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
		}
	},
}

var replicaSetScale = &ScaleAccess{
	Get: func(obj runtime.Object) (int32, int32, string) {
		rs := obj.(*appsv1.ReplicaSet)
		return derefInt32(rs.Spec.Replicas), rs.Status.Replicas, scaleSelector(rs.Spec.Selector)
	},
	Set: func(obj runtime.Object, replicas int32) {
		obj.(*appsv1.ReplicaSet).Spec.Replicas = new(replicas)
	},
}
