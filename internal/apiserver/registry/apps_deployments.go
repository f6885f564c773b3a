package registry

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func defaultDeployment(obj runtime.Object) {
	d := obj.(*appsv1.Deployment)
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = new(int32(1))
	}
	s := &d.Spec.Strategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = new(intstr.FromString("25%"))
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = new(intstr.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = new(int32(10))
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = new(int32(600))
	}
	DefaultPodSpec(&d.Spec.Template.Spec)
}

func prepareDeploymentCreate(obj runtime.Object) {
	obj.(*appsv1.Deployment).Status = appsv1.DeploymentStatus{}
}

// prepareDeploymentUpdate bumps the generation when only annotations change:
// the deployment controller copies annotations onto its replicasets, so an
// annotation edit is a change it must observe. The server bumps the
// generation itself for spec changes.
func prepareDeploymentUpdate(obj, old runtime.Object) {
	d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	if equality.Semantic.DeepEqual(d.Spec, o.Spec) && !equality.Semantic.DeepEqual(d.Annotations, o.Annotations) {
		d.Generation = o.Generation + 1
	}
}

func validateDeployment(obj runtime.Object) field.ErrorList {
	d := obj.(*appsv1.Deployment)
	allErrs := ValidateMeta(&d.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
}

func validateDeploymentUpdate(obj, old runtime.Object) field.ErrorList {
	d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	allErrs := ValidateMetaUpdate(&d.ObjectMeta, &o.ObjectMeta)
	allErrs = append(allErrs, validateDeploymentSpec(&d.Spec, field.NewPath("spec"))...)
	// apps/v1 froze the selector: changing it would orphan the running pods.
	return append(allErrs, apivalidation.ValidateImmutableField(d.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))...)
}

func validateDeploymentSpec(spec *appsv1.DeploymentSpec, fldPath *field.Path) field.ErrorList {
	allErrs := apivalidation.ValidateNonnegativeField(int64(derefInt32(spec.Replicas)), fldPath.Child("replicas"))
	allErrs = append(allErrs, validateReplicaSetLikeTemplate(spec.Selector, &spec.Template, "deployment", fldPath)...)
	allErrs = append(allErrs, validateDeploymentStrategy(&spec.Strategy, fldPath.Child("strategy"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	if spec.ProgressDeadlineSeconds != nil {
		p := fldPath.Child("progressDeadlineSeconds")
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.ProgressDeadlineSeconds), p)...)
		if *spec.ProgressDeadlineSeconds <= spec.MinReadySeconds {
			allErrs = append(allErrs, field.Invalid(p, spec.ProgressDeadlineSeconds, "must be greater than minReadySeconds"))
		}
	}
	return allErrs
}

// validateReplicaSetLikeTemplate checks the selector and template the way
// upstream does for replicasets and deployments alike; selectorKind is the
// word upstream uses in the empty-selector message.
func validateReplicaSetLikeTemplate(sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec, selectorKind string, fldPath *field.Path) field.ErrorList {
	allErrs := validateRequiredSelector(sel, selectorKind, fldPath.Child("selector"))
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(allErrs, field.Invalid(fldPath.Child("selector"), sel, "invalid label selector"))
	}
	tmplPath := fldPath.Child("template")
	if !selector.Empty() {
		allErrs = append(allErrs, validateSelectorMatchesTemplate(selector, tmpl, tmplPath)...)
	}
	allErrs = append(allErrs, validatePodTemplate(tmpl, tmplPath)...)
	return append(allErrs, validateLongRunningTemplate(tmpl, "ReplicaSet", tmplPath)...)
}

func validateDeploymentStrategy(s *appsv1.DeploymentStrategy, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch s.Type {
	case appsv1.RecreateDeploymentStrategyType:
		if s.RollingUpdate != nil {
			allErrs = append(allErrs, field.Forbidden(fldPath.Child("rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'"))
		}
	case appsv1.RollingUpdateDeploymentStrategyType:
		if s.RollingUpdate == nil {
			return append(allErrs, field.Required(fldPath.Child("rollingUpdate"), "this should be defaulted and never be nil"))
		}
		ru, p := s.RollingUpdate, fldPath.Child("rollingUpdate")
		allErrs = append(allErrs, validateOptionalIntOrPercent(ru.MaxUnavailable, p.Child("maxUnavailable"))...)
		if ru.MaxSurge != nil {
			allErrs = append(allErrs, validateIntOrPercent(*ru.MaxSurge, p.Child("maxSurge"))...)
		}
		if intOrPercentValue(ru.MaxUnavailable) == 0 && intOrPercentValue(ru.MaxSurge) == 0 {
			// A rollout that may neither add nor remove a pod can never progress.
			allErrs = append(allErrs, field.Invalid(p.Child("maxUnavailable"), ru.MaxUnavailable, "may not be 0 when `maxSurge` is 0"))
		}
	default:
		allErrs = append(allErrs, field.NotSupported(fldPath, s, []string{string(appsv1.RecreateDeploymentStrategyType), string(appsv1.RollingUpdateDeploymentStrategyType)}))
	}
	return allErrs
}

func validateDeploymentStatusUpdate(obj, old runtime.Object) field.ErrorList {
	d, o := obj.(*appsv1.Deployment), old.(*appsv1.Deployment)
	p := field.NewPath("status")
	s := &d.Status
	allErrs := apivalidation.ValidateNonnegativeField(s.ObservedGeneration, p.Child("observedGeneration"))
	allErrs = append(allErrs, nonNegativeCounts(p, []namedCount{
		{"replicas", s.Replicas}, {"updatedReplicas", s.UpdatedReplicas}, {"readyReplicas", s.ReadyReplicas},
		{"availableReplicas", s.AvailableReplicas}, {"unavailableReplicas", s.UnavailableReplicas},
	})...)
	if s.TerminatingReplicas != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*s.TerminatingReplicas), p.Child("terminatingReplicas"))...)
	}
	allErrs = append(allErrs, replicaCountsConsistent(p, s.Replicas, s.ReadyReplicas, s.AvailableReplicas, namedCount{"updatedReplicas", s.UpdatedReplicas})...)
	return append(allErrs, validateCollisionCount(s.CollisionCount, o.Status.CollisionCount, p.Child("collisionCount"))...)
}

// namedCount is a status counter and its field name.
type namedCount struct {
	name  string
	value int32
}

func nonNegativeCounts(fldPath *field.Path, counts []namedCount) field.ErrorList {
	var allErrs field.ErrorList
	for _, c := range counts {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(c.value), fldPath.Child(c.name))...)
	}
	return allErrs
}

// replicaCountsConsistent checks that no subset count of pods exceeds the
// total, and that available pods are a subset of ready ones.
func replicaCountsConsistent(fldPath *field.Path, replicas, ready, available int32, others ...namedCount) field.ErrorList {
	const msg = "cannot be greater than status.replicas"
	var allErrs field.ErrorList
	for _, c := range others {
		if c.value > replicas {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(c.name), c.value, msg))
		}
	}
	if ready > replicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("readyReplicas"), ready, msg))
	}
	if available > replicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("availableReplicas"), available, msg))
	}
	if available > ready {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("availableReplicas"), available, "cannot be greater than readyReplicas"))
	}
	return allErrs
}

// validateCollisionCount keeps the hash-collision counter monotonic: the
// controllers use it to name new revisions, and going back would reuse names.
func validateCollisionCount(count, old *int32, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if count != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*count), fldPath)...)
	}
	if old != nil && (count == nil || *count < *old) {
		allErrs = append(allErrs, field.Invalid(fldPath, derefInt32(count), "cannot be decremented"))
	}
	return allErrs
}

var deploymentTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		{Name: "Up-to-date", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]},
		{Name: "Available", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]},
		ageColumn,
		containersColumn,
		imagesColumn,
		selectorColumn(appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]),
	},
	Row: func(obj runtime.Object) []interface{} {
		d := obj.(*appsv1.Deployment)
		names, images := containerCells(d.Spec.Template.Spec.Containers)
		// Deployments print the raw selector string, unlike the other
		// workloads, which print "<none>" for an empty one.
		selector := "<invalid>"
		if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
			selector = s.String()
		}
		return []interface{}{
			d.Name,
			fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, derefInt32(d.Spec.Replicas)),
			int64(d.Status.UpdatedReplicas),
			int64(d.Status.AvailableReplicas),
			Age(d.CreationTimestamp),
			names, images, selector,
		}
	},
}

var deploymentScale = &ScaleAccess{
	Get: func(obj runtime.Object) (int32, int32, string) {
		d := obj.(*appsv1.Deployment)
		return derefInt32(d.Spec.Replicas), d.Status.Replicas, scaleSelector(d.Spec.Selector)
	},
	Set: func(obj runtime.Object, replicas int32) {
		obj.(*appsv1.Deployment).Spec.Replicas = new(replicas)
	},
}
