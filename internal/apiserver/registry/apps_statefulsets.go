package registry

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func defaultStatefulSet(obj runtime.Object) {
	s := obj.(*appsv1.StatefulSet)
	spec := &s.Spec
	if spec.PodManagementPolicy == "" {
		spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if spec.UpdateStrategy.Type == "" {
		spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if spec.UpdateStrategy.RollingUpdate == nil {
			spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	// Only a rollingUpdate block that exists gets a partition: a client that
	// sets type RollingUpdate without the block reads it back without one.
	if ru := spec.UpdateStrategy.RollingUpdate; spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType && ru != nil && ru.Partition == nil {
		ru.Partition = new(int32(0))
	}
	if spec.PersistentVolumeClaimRetentionPolicy == nil {
		spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenDeleted == "" {
		p.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if p := spec.PersistentVolumeClaimRetentionPolicy; p.WhenScaled == "" {
		p.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if spec.Replicas == nil {
		spec.Replicas = new(int32(1))
	}
	if spec.RevisionHistoryLimit == nil {
		spec.RevisionHistoryLimit = new(int32(10))
	}
	for i := range spec.VolumeClaimTemplates {
		defaultClaimTemplate(&spec.VolumeClaimTemplates[i])
	}
	DefaultPodSpec(&spec.Template.Spec)
}

// defaultClaimTemplate applies the PersistentVolumeClaim defaults, status
// phase included: upstream defaults claim templates as whole claims, so
// they read back with "status: {phase: Pending}".
func defaultClaimTemplate(pvc *corev1.PersistentVolumeClaim) {
	if pvc.Status.Phase == "" {
		pvc.Status.Phase = corev1.ClaimPending
	}
	if pvc.Spec.VolumeMode == nil {
		pvc.Spec.VolumeMode = new(corev1.PersistentVolumeFilesystem)
	}
}

func prepareStatefulSetCreate(obj runtime.Object) {
	s := obj.(*appsv1.StatefulSet)
	s.Status = appsv1.StatefulSetStatus{}
	dropStatefulSetMaxUnavailable(s, nil)
}

func prepareStatefulSetUpdate(obj, old runtime.Object) {
	dropStatefulSetMaxUnavailable(obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet))
}

// dropStatefulSetMaxUnavailable clears rollingUpdate.maxUnavailable as
// Kubernetes 1.36 does: its MaxUnavailableStatefulSet gate is off by default
// there (it was turned back off after a regression), so the field is kept
// only on objects that already carry it.
func dropStatefulSetMaxUnavailable(s, old *appsv1.StatefulSet) {
	if old != nil && old.Spec.UpdateStrategy.RollingUpdate != nil && old.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable != nil {
		return
	}
	if ru := s.Spec.UpdateStrategy.RollingUpdate; ru != nil {
		ru.MaxUnavailable = nil
	}
}

func validateStatefulSet(obj runtime.Object) field.ErrorList {
	s := obj.(*appsv1.StatefulSet)
	// Pod names are <statefulset>-<ordinal> and double as hostnames, hence
	// a DNS label rather than the subdomain other workloads allow.
	allErrs := ValidateMeta(&s.ObjectMeta, true, apivalidation.NameIsDNSLabel)
	return append(allErrs, validateStatefulSetSpec(&s.Spec, field.NewPath("spec"))...)
}

// validateStatefulSetUpdate does not re-validate the name: names accepted
// by older releases (DNS subdomains) must stay updatable, if only to remove
// a finalizer.
func validateStatefulSetUpdate(obj, old runtime.Object) field.ErrorList {
	s, o := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
	allErrs := ValidateMetaUpdate(&s.ObjectMeta, &o.ObjectMeta)
	allErrs = append(allErrs, validateStatefulSetSpec(&s.Spec, field.NewPath("spec"))...)

	mutable := s.Spec.DeepCopy()
	mutable.Replicas = o.Spec.Replicas
	mutable.Template = o.Spec.Template
	mutable.UpdateStrategy = o.Spec.UpdateStrategy
	mutable.MinReadySeconds = o.Spec.MinReadySeconds
	mutable.Ordinals = o.Spec.Ordinals
	mutable.PersistentVolumeClaimRetentionPolicy = o.Spec.PersistentVolumeClaimRetentionPolicy
	if !equality.Semantic.DeepEqual(*mutable, o.Spec) {
		allErrs = append(allErrs, field.Forbidden(field.NewPath("spec"), "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"))
	}
	return allErrs
}

func validateStatefulSetSpec(spec *appsv1.StatefulSetSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	switch spec.PodManagementPolicy {
	case "":
		allErrs = append(allErrs, field.Required(fldPath.Child("podManagementPolicy"), ""))
	case appsv1.OrderedReadyPodManagement, appsv1.ParallelPodManagement:
	default:
		allErrs = append(allErrs, field.Invalid(fldPath.Child("podManagementPolicy"), spec.PodManagementPolicy, mustBe(string(appsv1.OrderedReadyPodManagement), string(appsv1.ParallelPodManagement))))
	}
	allErrs = append(allErrs, validateStatefulSetUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
	if p := spec.PersistentVolumeClaimRetentionPolicy; p != nil {
		pp := fldPath.Child("persistentVolumeClaimRetentionPolicy")
		allErrs = append(allErrs, validateClaimRetention(p.WhenDeleted, pp.Child("whenDeleted"))...)
		allErrs = append(allErrs, validateClaimRetention(p.WhenScaled, pp.Child("whenScaled"))...)
	}
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(derefInt32(spec.Replicas)), fldPath.Child("replicas"))...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	if spec.Ordinals != nil {
		// One path element with a dot in it, as upstream reports it.
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.Ordinals.Start), fldPath.Child("ordinals.start"))...)
	}
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}

	allErrs = append(allErrs, validateRequiredSelector(spec.Selector, "statefulset", fldPath.Child("selector"))...)
	tmplPath := fldPath.Child("template")
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), spec.Selector, ""))
	} else if !selector.Empty() {
		allErrs = append(allErrs, validateSelectorMatchesTemplate(selector, &spec.Template, tmplPath)...)
	}
	allErrs = append(allErrs, validateTemplateMeta(&spec.Template, tmplPath)...)
	allErrs = append(allErrs, ValidatePodSpec(podSpecWithClaims(&spec.Template.Spec, spec.VolumeClaimTemplates), tmplPath.Child("spec"))...)
	if len(spec.Template.Spec.EphemeralContainers) > 0 {
		allErrs = append(allErrs, field.Forbidden(tmplPath.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return append(allErrs, validateLongRunningTemplate(&spec.Template, "StatefulSet", tmplPath)...)
}

// podSpecWithClaims returns the pod spec as the statefulset controller will
// run it: every claim template becomes a volume the containers may mount.
// Upstream skips pod spec validation for statefulsets altogether because
// mounts of claim templates would otherwise look dangling; validating the
// spec the pods will really have catches the same mistakes a Deployment's
// validation does without rejecting those mounts.
func podSpecWithClaims(spec *corev1.PodSpec, claims []corev1.PersistentVolumeClaim) *corev1.PodSpec {
	if len(claims) == 0 {
		return spec
	}
	have := make(map[string]bool, len(spec.Volumes))
	for _, v := range spec.Volumes {
		have[v.Name] = true
	}
	out := spec.DeepCopy()
	for _, c := range claims {
		if have[c.Name] {
			continue // the controller replaces a same-named volume with the claim
		}
		have[c.Name] = true
		out.Volumes = append(out.Volumes, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name},
		}})
	}
	return out
}

func validateStatefulSetUpdateStrategy(s *appsv1.StatefulSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case "":
		return field.ErrorList{field.Required(fldPath, "")}
	case appsv1.OnDeleteStatefulSetStrategyType:
		if s.RollingUpdate != nil {
			return field.ErrorList{field.Invalid(fldPath.Child("rollingUpdate"), s.RollingUpdate, fmt.Sprintf("only allowed for updateStrategy '%s'", appsv1.RollingUpdateStatefulSetStrategyType))}
		}
	case appsv1.RollingUpdateStatefulSetStrategyType:
		if s.RollingUpdate == nil {
			return nil
		}
		ru, p := s.RollingUpdate, fldPath.Child("rollingUpdate")
		allErrs := apivalidation.ValidateNonnegativeField(int64(derefInt32(ru.Partition)), p.Child("partition"))
		if ru.MaxUnavailable != nil {
			mp := p.Child("maxUnavailable")
			allErrs = append(allErrs, validateIntOrPercent(*ru.MaxUnavailable, mp)...)
			if intOrPercentValue(ru.MaxUnavailable) == 0 {
				allErrs = append(allErrs, field.Invalid(mp, *ru.MaxUnavailable, "cannot be 0"))
			}
			allErrs = append(allErrs, validateAtMost100Percent(*ru.MaxUnavailable, mp)...)
		}
		return allErrs
	default:
		return field.ErrorList{field.Invalid(fldPath, *s, mustBe(string(appsv1.RollingUpdateStatefulSetStrategyType), string(appsv1.OnDeleteStatefulSetStrategyType)))}
	}
	return nil
}

func validateClaimRetention(p appsv1.PersistentVolumeClaimRetentionPolicyType, fldPath *field.Path) field.ErrorList {
	switch p {
	case appsv1.RetainPersistentVolumeClaimRetentionPolicyType, appsv1.DeletePersistentVolumeClaimRetentionPolicyType:
		return nil
	}
	return field.ErrorList{field.NotSupported(fldPath, p, []string{string(appsv1.RetainPersistentVolumeClaimRetentionPolicyType), string(appsv1.DeletePersistentVolumeClaimRetentionPolicyType)})}
}

func validateStatefulSetStatusUpdate(obj, old runtime.Object) field.ErrorList {
	s, o := obj.(*appsv1.StatefulSet), old.(*appsv1.StatefulSet)
	p := field.NewPath("status")
	st := &s.Status
	allErrs := nonNegativeCounts(p, []namedCount{
		{"replicas", st.Replicas}, {"readyReplicas", st.ReadyReplicas}, {"currentReplicas", st.CurrentReplicas},
		{"updatedReplicas", st.UpdatedReplicas}, {"availableReplicas", st.AvailableReplicas},
	})
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(st.ObservedGeneration, p.Child("observedGeneration"))...)
	allErrs = append(allErrs, replicaCountsConsistent(p, st.Replicas, st.ReadyReplicas, st.AvailableReplicas,
		namedCount{"currentReplicas", st.CurrentReplicas}, namedCount{"updatedReplicas", st.UpdatedReplicas})...)
	return append(allErrs, validateCollisionCount(st.CollisionCount, o.Status.CollisionCount, p.Child("collisionCount"))...)
}

var statefulSetTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		ageColumn,
		containersColumn,
		imagesColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		s := obj.(*appsv1.StatefulSet)
		names, images := containerCells(s.Spec.Template.Spec.Containers)
		return []interface{}{
			s.Name,
			fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, derefInt32(s.Spec.Replicas)),
			Age(s.CreationTimestamp),
			names, images,
		}
	},
}

var statefulSetScale = &ScaleAccess{
	Get: func(obj runtime.Object) (int32, int32, string) {
		s := obj.(*appsv1.StatefulSet)
		return derefInt32(s.Spec.Replicas), s.Status.Replicas, scaleSelector(s.Spec.Selector)
	},
	Set: func(obj runtime.Object, replicas int32) {
		obj.(*appsv1.StatefulSet).Spec.Replicas = new(replicas)
	},
}
