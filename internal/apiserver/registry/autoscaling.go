package registry

import (
	"fmt"
	"slices"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// autoscaling: HorizontalPodAutoscalers. autoscaling/v2 is the stored and
// preferred version; autoscaling/v1 is a view of the same objects (see
// autoscaling_v1.go), so an autoscaler `kubectl autoscale` creates through
// v1 is the one `kubectl get hpa` reads through v2.

func autoscalingResources() []*Resource {
	return []*Resource{
		{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers", Kind: "HorizontalPodAutoscaler",
			Singular: "horizontalpodautoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"},
			HasStatus: true,
			New:       func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			Default:   func(obj runtime.Object) { defaultHPA(obj.(*autoscalingv2.HorizontalPodAutoscaler)) },
			PrepareForCreate: func(obj runtime.Object) {
				obj.(*autoscalingv2.HorizontalPodAutoscaler).Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
			},
			Validate: func(obj runtime.Object) field.ErrorList {
				return validateHPA(obj.(*autoscalingv2.HorizontalPodAutoscaler))
			},
			ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
				return validateHPAUpdate(obj.(*autoscalingv2.HorizontalPodAutoscaler), old.(*autoscalingv2.HorizontalPodAutoscaler))
			},
			ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
				return validateHPAStatus(&obj.(*autoscalingv2.HorizontalPodAutoscaler).Status)
			},
			Table: hpaTable},
		hpaV1Resource(),
	}
}

// The defaults upstream's autoscaling/v2 defaulting sets. The scale-down
// stabilization window stays unset: the controller's
// --horizontal-pod-autoscaler-downscale-stabilization flag supplies it.
const (
	hpaDefaultCPUUtilization int32 = 80
	hpaScalePeriod           int32 = 15
	hpaScaleUpPods           int32 = 4
	hpaScalePercent          int32 = 100

	// hpaMaxPeriodSeconds and hpaMaxStabilizationSeconds bound the
	// behavior fields, as upstream's validation does.
	hpaMaxPeriodSeconds        int32 = 1800
	hpaMaxStabilizationSeconds int32 = 3600
)

func hpaDefaultScaleUp() *autoscalingv2.HPAScalingRules {
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: new(int32(0)),
		SelectPolicy:               &maxPolicy,
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: hpaScaleUpPods, PeriodSeconds: hpaScalePeriod},
			{Type: autoscalingv2.PercentScalingPolicy, Value: hpaScalePercent, PeriodSeconds: hpaScalePeriod},
		},
	}
}

func hpaDefaultScaleDown() *autoscalingv2.HPAScalingRules {
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	return &autoscalingv2.HPAScalingRules{
		SelectPolicy: &maxPolicy,
		Policies:     []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: hpaScalePercent, PeriodSeconds: hpaScalePeriod}},
	}
}

// defaultHPA sets minReplicas 1 and, with no metrics, the 80% CPU
// utilization target autoscalers had before metrics existed. A behavior
// the user wrote is completed field by field from the defaults; an absent
// one stays absent (the controller then applies the same defaults).
func defaultHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) {
	if hpa.Spec.MinReplicas == nil {
		hpa.Spec.MinReplicas = new(int32(1))
	}
	if len(hpa.Spec.Metrics) == 0 {
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{hpaCPUMetric(hpaDefaultCPUUtilization)}
	}
	if b := hpa.Spec.Behavior; b != nil {
		b.ScaleUp = hpaFillRules(b.ScaleUp, hpaDefaultScaleUp())
		b.ScaleDown = hpaFillRules(b.ScaleDown, hpaDefaultScaleDown())
	}
}

func hpaCPUMetric(utilization int32) autoscalingv2.MetricSpec {
	return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: new(utilization)}}}
}

// hpaFillRules keeps every field the user set and takes the rest from def.
func hpaFillRules(set, def *autoscalingv2.HPAScalingRules) *autoscalingv2.HPAScalingRules {
	if set == nil {
		return def
	}
	if set.SelectPolicy != nil {
		def.SelectPolicy = set.SelectPolicy
	}
	if set.StabilizationWindowSeconds != nil {
		def.StabilizationWindowSeconds = set.StabilizationWindowSeconds
	}
	if set.Policies != nil {
		def.Policies = set.Policies
	}
	if set.Tolerance != nil {
		def.Tolerance = set.Tolerance
	}
	return def
}

func validateHPA(hpa *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	allErrs := ValidateMeta(&hpa.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	return append(allErrs, validateHPASpec(&hpa.Spec, field.NewPath("spec"))...)
}

func validateHPAUpdate(hpa, old *autoscalingv2.HorizontalPodAutoscaler) field.ErrorList {
	allErrs := ValidateMetaUpdate(&hpa.ObjectMeta, &old.ObjectMeta)
	return append(allErrs, validateHPASpec(&hpa.Spec, field.NewPath("spec"))...)
}

func validateHPAStatus(st *autoscalingv2.HorizontalPodAutoscalerStatus) field.ErrorList {
	p := field.NewPath("status")
	allErrs := apivalidation.ValidateNonnegativeField(int64(st.CurrentReplicas), p.Child("currentReplicas"))
	return append(allErrs, apivalidation.ValidateNonnegativeField(int64(st.DesiredReplicas), p.Child("desiredReplicas"))...)
}

// validateHPASpec follows upstream's rules. minReplicas 0 (scale to zero)
// is behind an alpha feature gate upstream, off by default, so 1 is the
// lower bound here.
func validateHPASpec(spec *autoscalingv2.HorizontalPodAutoscalerSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.MinReplicas != nil && *spec.MinReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("minReplicas"), *spec.MinReplicas, "must be greater than or equal to 1"))
	}
	if spec.MaxReplicas < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than 0"))
	}
	if spec.MinReplicas != nil && spec.MaxReplicas < *spec.MinReplicas {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxReplicas"), spec.MaxReplicas, "must be greater than or equal to `minReplicas`"))
	}
	allErrs = append(allErrs, validateHPAObjectRef(spec.ScaleTargetRef, fldPath.Child("scaleTargetRef"))...)
	for i := range spec.Metrics {
		allErrs = append(allErrs, validateHPAMetric(&spec.Metrics[i], fldPath.Child("metrics").Index(i))...)
	}
	if b := spec.Behavior; b != nil {
		allErrs = append(allErrs, validateHPARules(b.ScaleUp, fldPath.Child("behavior", "scaleUp"))...)
		allErrs = append(allErrs, validateHPARules(b.ScaleDown, fldPath.Child("behavior", "scaleDown"))...)
	}
	return allErrs
}

// validateHPAObjectRef checks the target the autoscaler scales, or the
// object a metric describes: a kind and a name, each usable in a path.
func validateHPAObjectRef(ref autoscalingv2.CrossVersionObjectReference, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range []struct{ name, value string }{{"kind", ref.Kind}, {"name", ref.Name}} {
		if f.value == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child(f.name), ""))
			continue
		}
		for _, msg := range path.IsValidPathSegmentName(f.value) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child(f.name), f.value, msg))
		}
	}
	return allErrs
}

var hpaMetricSourceTypes = []string{
	string(autoscalingv2.ContainerResourceMetricSourceType), string(autoscalingv2.ExternalMetricSourceType),
	string(autoscalingv2.ObjectMetricSourceType), string(autoscalingv2.PodsMetricSourceType), string(autoscalingv2.ResourceMetricSourceType),
}

// validateHPAMetric checks that a metric names one known source type and
// fills exactly that source, then checks the source.
func validateHPAMetric(m *autoscalingv2.MetricSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if m.Type == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), "must specify a metric source type"))
	}
	if !slices.Contains(hpaMetricSourceTypes, string(m.Type)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("type"), m.Type, hpaMetricSourceTypes))
	}
	// The sources a metric fills, in upstream's order; only the first is
	// validated, the others are reported as extra.
	sources := []struct {
		field   string
		set     bool
		checked func() field.ErrorList
	}{
		{"object", m.Object != nil, func() field.ErrorList { return validateHPAObjectSource(m.Object, fldPath.Child("object")) }},
		{"external", m.External != nil, func() field.ErrorList { return validateHPAExternalSource(m.External, fldPath.Child("external")) }},
		{"pods", m.Pods != nil, func() field.ErrorList { return validateHPAPodsSource(m.Pods, fldPath.Child("pods")) }},
		{"resource", m.Resource != nil, func() field.ErrorList {
			return validateHPAResourceSource(string(m.Resource.Name), "", false, m.Resource.Target, fldPath.Child("resource"))
		}},
		{"containerResource", m.ContainerResource != nil, func() field.ErrorList {
			c := m.ContainerResource
			return validateHPAResourceSource(string(c.Name), c.Container, true, c.Target, fldPath.Child("containerResource"))
		}},
	}
	var present []string
	for _, s := range sources {
		if !s.set {
			continue
		}
		present = append(present, s.field)
		if len(present) == 1 {
			allErrs = append(allErrs, s.checked()...)
		}
	}
	// The type names the one source that must be filled; any other
	// filled source is an error of its own.
	expected := ""
	for _, s := range sources {
		if strings.EqualFold(s.field, string(m.Type)) {
			expected = s.field
			if !s.set {
				allErrs = append(allErrs, field.Required(fldPath.Child(s.field), "must populate information for the given metric source"))
			}
		}
	}
	if len(present) > 1 {
		for _, f := range present {
			if f != expected {
				allErrs = append(allErrs, field.Forbidden(fldPath.Child(f), "must populate the given metric source only"))
			}
		}
	}
	return allErrs
}

func validateHPAObjectSource(src *autoscalingv2.ObjectMetricSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateHPAObjectRef(src.DescribedObject, fldPath.Child("describedObject"))
	allErrs = append(allErrs, validateHPAMetricID(src.Metric, fldPath.Child("metric"))...)
	allErrs = append(allErrs, validateHPATarget(src.Target, fldPath.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("target").Child("averageValue"), "must set either a target value or averageValue"))
	}
	return allErrs
}

func validateHPAExternalSource(src *autoscalingv2.ExternalMetricSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateHPAMetricID(src.Metric, fldPath.Child("metric"))
	allErrs = append(allErrs, validateHPATarget(src.Target, fldPath.Child("target"))...)
	if src.Target.Value == nil && src.Target.AverageValue == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("target").Child("averageValue"), "must set either a target value for metric or a per-pod target"))
	}
	if src.Target.Value != nil && src.Target.AverageValue != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("target").Child("value"), "may not set both a target value for metric and a per-pod target"))
	}
	return allErrs
}

func validateHPAPodsSource(src *autoscalingv2.PodsMetricSource, fldPath *field.Path) field.ErrorList {
	allErrs := validateHPAMetricID(src.Metric, fldPath.Child("metric"))
	allErrs = append(allErrs, validateHPATarget(src.Target, fldPath.Child("target"))...)
	if src.Target.AverageValue == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("target").Child("averageValue"), "must specify a positive target averageValue"))
	}
	return allErrs
}

// validateHPAResourceSource checks a resource or container resource
// metric: a resource name, the container (for the latter), and a target
// given either as utilization or as a raw average value.
func validateHPAResourceSource(name, container string, perContainer bool, target autoscalingv2.MetricTarget, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if name == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("name"), "must specify a resource name"))
	}
	if perContainer {
		if container == "" {
			allErrs = append(allErrs, field.Required(fldPath.Child("container"), "must specify a container"))
		} else {
			for _, msg := range validation.IsDNS1123Label(container) {
				allErrs = append(allErrs, field.Invalid(fldPath.Child("container"), container, msg))
			}
		}
	}
	allErrs = append(allErrs, validateHPATarget(target, fldPath.Child("target"))...)
	if target.AverageUtilization == nil && target.AverageValue == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("target").Child("averageUtilization"), "must set either a target raw value or a target utilization"))
	}
	if target.AverageUtilization != nil && target.AverageValue != nil {
		allErrs = append(allErrs, field.Forbidden(fldPath.Child("target").Child("averageValue"), "may not set both a target raw value and a target utilization"))
	}
	return allErrs
}

func validateHPATarget(t autoscalingv2.MetricTarget, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if t.Type == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("type"), "must specify a metric target type"))
	}
	if t.Type != autoscalingv2.UtilizationMetricType && t.Type != autoscalingv2.ValueMetricType && t.Type != autoscalingv2.AverageValueMetricType {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("type"), t.Type, "must be either Utilization, Value, or AverageValue"))
	}
	if t.Value != nil && t.Value.Sign() != 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("value"), t.Value, "must be positive"))
	}
	if t.AverageValue != nil && t.AverageValue.Sign() != 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("averageValue"), t.AverageValue, "must be positive"))
	}
	if t.AverageUtilization != nil && *t.AverageUtilization < 1 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("averageUtilization"), *t.AverageUtilization, "must be greater than 0"))
	}
	return allErrs
}

func validateHPAMetricID(id autoscalingv2.MetricIdentifier, fldPath *field.Path) field.ErrorList {
	if id.Name == "" {
		return field.ErrorList{field.Required(fldPath.Child("name"), "must specify a metric name")}
	}
	var allErrs field.ErrorList
	for _, msg := range path.IsValidPathSegmentName(id.Name) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("name"), id.Name, msg))
	}
	return allErrs
}

var (
	hpaSelectPolicies = []string{string(autoscalingv2.DisabledPolicySelect), string(autoscalingv2.MaxChangePolicySelect), string(autoscalingv2.MinChangePolicySelect)}
	hpaPolicyTypes    = []string{string(autoscalingv2.PercentScalingPolicy), string(autoscalingv2.PodsScalingPolicy)}
)

func validateHPARules(rules *autoscalingv2.HPAScalingRules, fldPath *field.Path) field.ErrorList {
	if rules == nil {
		return nil
	}
	var allErrs field.ErrorList
	if w := rules.StabilizationWindowSeconds; w != nil {
		if *w < 0 {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), *w, "must be greater than or equal to zero"))
		}
		if *w > hpaMaxStabilizationSeconds {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("stabilizationWindowSeconds"), *w, fmt.Sprintf("must be less than or equal to %d", hpaMaxStabilizationSeconds)))
		}
	}
	if p := rules.SelectPolicy; p != nil && !slices.Contains(hpaSelectPolicies, string(*p)) {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("selectPolicy"), *p, hpaSelectPolicies))
	}
	policies := fldPath.Child("policies")
	if len(rules.Policies) == 0 {
		allErrs = append(allErrs, field.Required(policies, "must specify at least one Policy"))
	}
	for i, p := range rules.Policies {
		idx := policies.Index(i)
		if !slices.Contains(hpaPolicyTypes, string(p.Type)) {
			allErrs = append(allErrs, field.NotSupported(idx.Child("type"), p.Type, hpaPolicyTypes))
		}
		if p.Value <= 0 {
			allErrs = append(allErrs, field.Invalid(idx.Child("value"), p.Value, "must be greater than zero"))
		}
		if p.PeriodSeconds <= 0 {
			allErrs = append(allErrs, field.Invalid(idx.Child("periodSeconds"), p.PeriodSeconds, "must be greater than zero"))
		}
		if p.PeriodSeconds > hpaMaxPeriodSeconds {
			allErrs = append(allErrs, field.Invalid(idx.Child("periodSeconds"), p.PeriodSeconds, fmt.Sprintf("must be less than or equal to %d", hpaMaxPeriodSeconds)))
		}
	}
	if t := rules.Tolerance; t != nil && t.Sign() < 0 {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("tolerance"), t.String(), "must be greater than or equal to zero"))
	}
	return allErrs
}

// hpaTable is `kubectl get hpa`; the v1 view renders its objects through
// it too, so both versions print alike.
var hpaTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Reference", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]},
		{Name: "Targets", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]},
		{Name: "MinPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]},
		{Name: "MaxPods", Type: "integer", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]},
		{Name: "Replicas", Type: "integer", Description: autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]},
		ageColumn,
	},
	Row: func(obj runtime.Object) []interface{} {
		hpa, ok := obj.(*autoscalingv2.HorizontalPodAutoscaler)
		if !ok {
			hpa = hpaFromV1(obj.(*autoscalingv1.HorizontalPodAutoscaler))
		}
		minPods := "<unset>"
		if hpa.Spec.MinReplicas != nil {
			minPods = fmt.Sprint(*hpa.Spec.MinReplicas)
		}
		ref := hpa.Spec.ScaleTargetRef.Kind + "/" + hpa.Spec.ScaleTargetRef.Name
		return []interface{}{hpa.Name, ref, hpaTargets(hpa.Spec.Metrics, hpa.Status.CurrentMetrics), minPods,
			int64(hpa.Spec.MaxReplicas), int64(hpa.Status.CurrentReplicas), Age(hpa.CreationTimestamp)}
	},
}

// hpaTargets renders the TARGETS column: "current/target" per metric,
// the first two only, as kubectl shows them.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	const shown = 2
	var list []string
	for i, spec := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		list = append(list, hpaTarget(spec, st))
	}
	if len(list) > shown {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:shown], ", "), len(list)-shown)
	}
	return strings.Join(list, ", ")
}

func hpaTarget(spec autoscalingv2.MetricSpec, st *autoscalingv2.MetricStatus) string {
	current := "<unknown>"
	switch {
	case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
		if spec.External.Target.AverageValue != nil {
			if st != nil && st.External != nil && st.External.Current.AverageValue != nil {
				current = st.External.Current.AverageValue.String()
			}
			return fmt.Sprintf("%s/%s (avg)", current, spec.External.Target.AverageValue.String())
		}
		if st != nil && st.External != nil && st.External.Current.Value != nil {
			current = st.External.Current.Value.String()
		}
		return fmt.Sprintf("%s/%s", current, spec.External.Target.Value.String())
	case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
		if st != nil && st.Pods != nil && st.Pods.Current.AverageValue != nil {
			current = st.Pods.Current.AverageValue.String()
		}
		return fmt.Sprintf("%s/%s", current, spec.Pods.Target.AverageValue.String())
	case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
		if spec.Object.Target.AverageValue != nil {
			if st != nil && st.Object != nil && st.Object.Current.AverageValue != nil {
				current = st.Object.Current.AverageValue.String()
			}
			return fmt.Sprintf("%s/%s (avg)", current, spec.Object.Target.AverageValue.String())
		}
		if st != nil && st.Object != nil && st.Object.Current.Value != nil {
			current = st.Object.Current.Value.String()
		}
		return fmt.Sprintf("%s/%s", current, spec.Object.Target.Value.String())
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.Resource != nil {
			cur = &st.Resource.Current
		}
		return hpaResourceTarget(string(spec.Resource.Name), spec.Resource.Target, cur)
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		var cur *autoscalingv2.MetricValueStatus
		if st != nil && st.ContainerResource != nil {
			cur = &st.ContainerResource.Current
		}
		return hpaResourceTarget(string(spec.ContainerResource.Name), spec.ContainerResource.Target, cur)
	}
	return "<unknown type>"
}

func hpaResourceTarget(name string, target autoscalingv2.MetricTarget, cur *autoscalingv2.MetricValueStatus) string {
	current := "<unknown>"
	if target.AverageValue != nil {
		if cur != nil && cur.AverageValue != nil {
			current = cur.AverageValue.String()
		}
		return fmt.Sprintf("%s: %s/%s", name, current, target.AverageValue.String())
	}
	if cur != nil && cur.AverageUtilization != nil {
		current = fmt.Sprintf("%d%%", *cur.AverageUtilization)
	}
	want := "<auto>"
	if target.AverageUtilization != nil {
		want = fmt.Sprintf("%d%%", *target.AverageUtilization)
	}
	return fmt.Sprintf("%s: %s/%s", name, current, want)
}
