package registry

import (
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func defaultDaemonSet(obj runtime.Object) {
	ds := obj.(*appsv1.DaemonSet)
	s := &ds.Spec.UpdateStrategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if s.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = new(intstr.FromInt32(1))
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = new(intstr.FromInt32(0))
		}
	}
	if ds.Spec.RevisionHistoryLimit == nil {
		ds.Spec.RevisionHistoryLimit = new(int32(10))
	}
	DefaultPodSpec(&ds.Spec.Template.Spec)
}

// The template generation counts template changes. apps/v1 has no field
// for it, so upstream keeps it in this annotation, and pods created from
// the template carry it in their pod-template-generation label; clients
// (upstream's daemonset controller, kubectl rollout) still read it.
func templateGeneration(ds *appsv1.DaemonSet) int64 {
	g, _ := strconv.ParseInt(ds.Annotations[appsv1.DeprecatedTemplateGeneration], 10, 64)
	return g
}

func setTemplateGeneration(ds *appsv1.DaemonSet, g int64) {
	if ds.Annotations == nil {
		ds.Annotations = map[string]string{}
	}
	ds.Annotations[appsv1.DeprecatedTemplateGeneration] = strconv.FormatInt(g, 10)
}

func prepareDaemonSetCreate(obj runtime.Object) {
	ds := obj.(*appsv1.DaemonSet)
	ds.Status = appsv1.DaemonSetStatus{}
	setTemplateGeneration(ds, max(templateGeneration(ds), 1))
}

// prepareDaemonSetUpdate owns the template generation: clients may not set
// it, and it moves exactly when the template does.
func prepareDaemonSetUpdate(obj, old runtime.Object) {
	ds, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	g := templateGeneration(o)
	if _, ok := o.Annotations[appsv1.DeprecatedTemplateGeneration]; !ok && g == 0 {
		g = 1
	}
	if !equality.Semantic.DeepEqual(ds.Spec.Template, o.Spec.Template) {
		g++
	}
	setTemplateGeneration(ds, g)
}

func validateDaemonSet(obj runtime.Object) field.ErrorList {
	ds := obj.(*appsv1.DaemonSet)
	allErrs := ValidateMeta(&ds.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
}

func validateDaemonSetUpdate(obj, old runtime.Object) field.ErrorList {
	ds, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	allErrs := ValidateMetaUpdate(&ds.ObjectMeta, &o.ObjectMeta)
	allErrs = append(allErrs, validateDaemonSetSpec(&ds.Spec, field.NewPath("spec"))...)
	return append(allErrs, apivalidation.ValidateImmutableField(ds.Spec.Selector, o.Spec.Selector, field.NewPath("spec", "selector"))...)
}

// validateDaemonSetSpec follows upstream in not reporting a missing selector
// as such: a nil selector selects nothing, and the mismatch with the
// template labels is what the user is told.
func validateDaemonSetSpec(spec *appsv1.DaemonSetSpec, fldPath *field.Path) field.ErrorList {
	allErrs := metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))
	tmplPath := fldPath.Child("template")
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil {
		allErrs = append(allErrs, validateSelectorMatchesTemplate(selector, &spec.Template, tmplPath)...)
	}
	if spec.Selector != nil && len(spec.Selector.MatchLabels)+len(spec.Selector.MatchExpressions) == 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("selector"), spec.Selector, "empty selector is invalid for daemonset"))
	}
	allErrs = append(allErrs, validatePodTemplate(&spec.Template, tmplPath)...)
	allErrs = append(allErrs, validateLongRunningTemplate(&spec.Template, "DaemonSet", tmplPath)...)
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(spec.MinReadySeconds), fldPath.Child("minReadySeconds"))...)
	allErrs = append(allErrs, validateDaemonSetUpdateStrategy(&spec.UpdateStrategy, fldPath.Child("updateStrategy"))...)
	if spec.RevisionHistoryLimit != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.RevisionHistoryLimit), fldPath.Child("revisionHistoryLimit"))...)
	}
	return allErrs
}

func validateDaemonSetUpdateStrategy(s *appsv1.DaemonSetUpdateStrategy, fldPath *field.Path) field.ErrorList {
	switch s.Type {
	case appsv1.OnDeleteDaemonSetStrategyType:
		return nil
	case appsv1.RollingUpdateDaemonSetStrategyType:
		if s.RollingUpdate == nil {
			return field.ErrorList{field.Required(fldPath.Child("rollingUpdate"), "")}
		}
		ru, p := s.RollingUpdate, fldPath.Child("rollingUpdate")
		allErrs := validateOptionalIntOrPercent(ru.MaxUnavailable, p.Child("maxUnavailable"))
		allErrs = append(allErrs, validateOptionalIntOrPercent(ru.MaxSurge, p.Child("maxSurge"))...)
		// A node runs one daemon pod: an update either replaces pods in
		// place (unavailable) or starts the new one first (surge), not both.
		hasUnavailable, hasSurge := intOrPercentValue(ru.MaxUnavailable) != 0, intOrPercentValue(ru.MaxSurge) != 0
		switch {
		case hasUnavailable && hasSurge:
			allErrs = append(allErrs, field.Invalid(p.Child("maxSurge"), ru.MaxSurge, "may not be set when maxUnavailable is non-zero"))
		case !hasUnavailable && !hasSurge:
			allErrs = append(allErrs, field.Required(p.Child("maxUnavailable"), "cannot be 0 when maxSurge is 0"))
		}
		return allErrs
	}
	return field.ErrorList{field.NotSupported(fldPath, *s, []string{string(appsv1.RollingUpdateDaemonSetStrategyType), string(appsv1.OnDeleteDaemonSetStrategyType)})}
}

func validateDaemonSetStatusUpdate(obj, old runtime.Object) field.ErrorList {
	ds, o := obj.(*appsv1.DaemonSet), old.(*appsv1.DaemonSet)
	p := field.NewPath("status")
	s := &ds.Status
	allErrs := nonNegativeCounts(p, []namedCount{
		{"currentNumberScheduled", s.CurrentNumberScheduled}, {"numberMisscheduled", s.NumberMisscheduled},
		{"desiredNumberScheduled", s.DesiredNumberScheduled}, {"numberReady", s.NumberReady},
	})
	allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(s.ObservedGeneration, p.Child("observedGeneration"))...)
	allErrs = append(allErrs, nonNegativeCounts(p, []namedCount{
		{"updatedNumberScheduled", s.UpdatedNumberScheduled}, {"numberAvailable", s.NumberAvailable},
		{"numberUnavailable", s.NumberUnavailable},
	})...)
	return append(allErrs, validateCollisionCount(s.CollisionCount, o.Status.CollisionCount, p.Child("collisionCount"))...)
}

var daemonSetTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Desired", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["desiredNumberScheduled"]},
		{Name: "Current", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["currentNumberScheduled"]},
		{Name: "Ready", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberReady"]},
		{Name: "Up-to-date", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["updatedNumberScheduled"]},
		{Name: "Available", Type: "integer", Description: appsv1.DaemonSetStatus{}.SwaggerDoc()["numberAvailable"]},
		{Name: "Node Selector", Type: "string", Description: corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]},
		ageColumn,
		containersColumn,
		imagesColumn,
		selectorColumn(appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]),
	},
	Row: func(obj runtime.Object) []interface{} {
		ds := obj.(*appsv1.DaemonSet)
		s := &ds.Status
		names, images := containerCells(ds.Spec.Template.Spec.Containers)
		return []interface{}{
			ds.Name,
			int64(s.DesiredNumberScheduled),
			int64(s.CurrentNumberScheduled),
			int64(s.NumberReady),
			int64(s.UpdatedNumberScheduled),
			int64(s.NumberAvailable),
			labels.FormatLabels(ds.Spec.Template.Spec.NodeSelector),
			Age(ds.CreationTimestamp),
			names, images, metav1.FormatLabelSelector(ds.Spec.Selector),
		}
	},
}

func validateControllerRevision(obj runtime.Object) field.ErrorList {
	r := obj.(*appsv1.ControllerRevision)
	allErrs := ValidateMeta(&r.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	if r.Data.Raw == nil && r.Data.Object == nil {
		allErrs = append(allErrs, field.Required(field.NewPath("data"), "data is mandatory"))
	}
	return append(allErrs, apivalidation.ValidateNonnegativeField(r.Revision, field.NewPath("revision"))...)
}

// validateControllerRevisionUpdate keeps a revision's data frozen: it is the
// snapshot a rollback returns to.
func validateControllerRevisionUpdate(obj, old runtime.Object) field.ErrorList {
	r, o := obj.(*appsv1.ControllerRevision), old.(*appsv1.ControllerRevision)
	allErrs := ValidateMetaUpdate(&r.ObjectMeta, &o.ObjectMeta)
	allErrs = append(allErrs, validateControllerRevision(obj)...)
	return append(allErrs, apivalidation.ValidateImmutableField(r.Data, o.Data, field.NewPath("data"))...)
}

var controllerRevisionTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Controller", Type: "string", Description: "Controller of the object"},
		{Name: "Revision", Type: "string", Description: appsv1.ControllerRevision{}.SwaggerDoc()["revision"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		r := obj.(*appsv1.ControllerRevision)
		controller := "<none>"
		if ref := metav1.GetControllerOf(r); ref != nil {
			// kubectl's kind/name form, lower case and group qualified:
			// daemonset.apps/fluentd.
			if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
				gk := gv.WithKind(ref.Kind).GroupKind()
				controller = ref.Name
				if !gk.Empty() {
					controller = strings.ToLower(gk.String()) + "/" + ref.Name
				}
			}
		}
		return []interface{}{r.Name, controller, r.Revision, Age(r.CreationTimestamp)}
	},
}
