package registry

import (
	"encoding/json"
	"maps"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// autoscaling/v1 HorizontalPodAutoscalers are a view of the v2 objects.
// v1 knows one metric, a CPU utilization target; everything else a v2
// autoscaler holds (other metrics, their current values, conditions,
// behavior) travels in annotations of the v1 object, as upstream does, so
// a client that reads through v1 and writes the object back keeps it.

// The annotations that carry v2-only fields through v1, named as upstream.
const (
	hpaMetricsAnnotation        = "autoscaling.alpha.kubernetes.io/metrics"
	hpaCurrentMetricsAnnotation = "autoscaling.alpha.kubernetes.io/current-metrics"
	hpaConditionsAnnotation     = "autoscaling.alpha.kubernetes.io/conditions"
	hpaBehaviorAnnotation       = "autoscaling.alpha.kubernetes.io/behavior"
)

func hpaV1Resource() *Resource {
	v1 := func(obj runtime.Object) *autoscalingv1.HorizontalPodAutoscaler {
		return obj.(*autoscalingv1.HorizontalPodAutoscaler)
	}
	return &Resource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers", Kind: "HorizontalPodAutoscaler",
		Singular: "horizontalpodautoscaler", Namespaced: true, ShortNames: []string{"hpa"}, Categories: []string{"all"},
		HasStatus: true,
		New:       func() runtime.Object { return &autoscalingv1.HorizontalPodAutoscaler{} },
		Default:   func(obj runtime.Object) { defaultHPAV1(v1(obj)) },
		PrepareForCreate: func(obj runtime.Object) {
			hpa := v1(obj)
			hpa.Status = autoscalingv1.HorizontalPodAutoscalerStatus{}
			delete(hpa.Annotations, hpaCurrentMetricsAnnotation)
			delete(hpa.Annotations, hpaConditionsAnnotation)
		},
		// The status a v1 write cannot see lives in annotations: keep the
		// stored ones, as the server keeps the v1 status fields.
		PrepareForUpdate: func(obj, old runtime.Object) {
			hpa, o := v1(obj), v1(old)
			for _, k := range []string{hpaCurrentMetricsAnnotation, hpaConditionsAnnotation} {
				if v, ok := o.Annotations[k]; ok {
					if hpa.Annotations == nil {
						hpa.Annotations = map[string]string{}
					}
					hpa.Annotations[k] = v
				} else {
					delete(hpa.Annotations, k)
				}
			}
		},
		// Validation is the v2 validation of the converted object, so the
		// field paths name v2 fields, as upstream reports them.
		Validate: func(obj runtime.Object) field.ErrorList {
			hpa, errs := hpaV1ToV2Checked(v1(obj))
			if errs != nil {
				return errs
			}
			return validateHPA(hpa)
		},
		ValidateUpdate: func(obj, old runtime.Object) field.ErrorList {
			hpa, errs := hpaV1ToV2Checked(v1(obj))
			if errs != nil {
				return errs
			}
			return validateHPAUpdate(hpa, hpaFromV1(v1(old)))
		},
		ValidateStatusUpdate: func(obj, _ runtime.Object) field.ErrorList {
			st := v1(obj).Status
			return validateHPAStatus(&autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: st.CurrentReplicas, DesiredReplicas: st.DesiredReplicas})
		},
		Table: hpaTable,
		Storage: &StorageView{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers", Kind: "HorizontalPodAutoscaler",
			New: func() runtime.Object { return &autoscalingv2.HorizontalPodAutoscaler{} },
			ToStorage: func(obj runtime.Object) runtime.Object {
				hpa := hpaFromV1(v1(obj))
				defaultHPA(hpa)
				return hpa
			},
			FromStorage: func(obj runtime.Object) runtime.Object { return hpaToV1(obj.(*autoscalingv2.HorizontalPodAutoscaler)) },
		},
	}
}

// defaultHPAV1 sets minReplicas 1 and, when neither the CPU target nor
// the annotation with other metrics says what to scale on, the 80% CPU
// target v2 would default to.
func defaultHPAV1(hpa *autoscalingv1.HorizontalPodAutoscaler) {
	if hpa.Spec.MinReplicas == nil {
		hpa.Spec.MinReplicas = new(int32(1))
	}
	if _, ok := hpa.Annotations[hpaMetricsAnnotation]; !ok && hpa.Spec.TargetCPUUtilizationPercentage == nil {
		hpa.Spec.TargetCPUUtilizationPercentage = new(hpaDefaultCPUUtilization)
	}
}

// hpaV1ToV2Checked converts for validation, reporting annotations that do
// not decode as upstream's conversion would refuse them.
func hpaV1ToV2Checked(in *autoscalingv1.HorizontalPodAutoscaler) (*autoscalingv2.HorizontalPodAutoscaler, field.ErrorList) {
	var errs field.ErrorList
	ann := field.NewPath("metadata", "annotations")
	for k, into := range map[string]interface{}{
		hpaMetricsAnnotation:        &[]autoscalingv1.MetricSpec{},
		hpaCurrentMetricsAnnotation: &[]autoscalingv1.MetricStatus{},
		hpaConditionsAnnotation:     &[]autoscalingv1.HorizontalPodAutoscalerCondition{},
		hpaBehaviorAnnotation:       &autoscalingv2.HorizontalPodAutoscalerBehavior{},
	} {
		if v, ok := in.Annotations[k]; ok {
			if err := json.Unmarshal([]byte(v), into); err != nil {
				errs = append(errs, field.Invalid(ann.Key(k), v, err.Error()))
			}
		}
	}
	if errs != nil {
		return nil, errs
	}
	return hpaFromV1(in), nil
}

// hpaToV1 renders a stored autoscaler in v1's shape. The first CPU
// utilization metric becomes targetCPUUtilizationPercentage; the other
// metrics, the current metrics, the conditions and the behavior go into
// annotations.
func hpaToV1(in *autoscalingv2.HorizontalPodAutoscaler) *autoscalingv1.HorizontalPodAutoscaler {
	out := &autoscalingv1.HorizontalPodAutoscaler{
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    copyInt32(in.Spec.MinReplicas),
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv1.HorizontalPodAutoscalerStatus{
			ObservedGeneration: copyInt64(in.Status.ObservedGeneration),
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	if t := in.Status.LastScaleTime; t != nil {
		lt := *t
		out.Status.LastScaleTime = &lt
	}
	var others []autoscalingv1.MetricSpec
	for _, m := range in.Spec.Metrics {
		if out.Spec.TargetCPUUtilizationPercentage == nil && m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil &&
			m.Resource.Name == corev1.ResourceCPU && m.Resource.Target.AverageUtilization != nil {
			out.Spec.TargetCPUUtilizationPercentage = new(*m.Resource.Target.AverageUtilization)
			continue
		}
		others = append(others, hpaMetricToV1(m))
	}
	for _, m := range in.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
			m.Resource.Current.AverageUtilization != nil && out.Status.CurrentCPUUtilizationPercentage == nil {
			out.Status.CurrentCPUUtilizationPercentage = new(*m.Resource.Current.AverageUtilization)
		}
	}
	ann := maps.Clone(out.Annotations)
	set := func(key string, v interface{}) {
		data, err := json.Marshal(v)
		if err != nil {
			return // API types always encode
		}
		if ann == nil {
			ann = map[string]string{}
		}
		ann[key] = string(data)
	}
	if len(others) > 0 {
		set(hpaMetricsAnnotation, others)
	}
	if len(in.Status.CurrentMetrics) > 0 {
		statuses := make([]autoscalingv1.MetricStatus, len(in.Status.CurrentMetrics))
		for i, m := range in.Status.CurrentMetrics {
			statuses[i] = hpaMetricStatusToV1(m)
		}
		set(hpaCurrentMetricsAnnotation, statuses)
	}
	if len(in.Status.Conditions) > 0 {
		conds := make([]autoscalingv1.HorizontalPodAutoscalerCondition, len(in.Status.Conditions))
		for i, c := range in.Status.Conditions {
			conds[i] = autoscalingv1.HorizontalPodAutoscalerCondition{Type: autoscalingv1.HorizontalPodAutoscalerConditionType(c.Type),
				Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message}
		}
		set(hpaConditionsAnnotation, conds)
	}
	if in.Spec.Behavior != nil {
		set(hpaBehaviorAnnotation, in.Spec.Behavior)
	}
	out.Annotations = ann
	out.SetGroupVersionKind(autoscalingv1.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"))
	return out
}

// hpaFromV1 is the inverse of hpaToV1: the annotations are read back
// into fields and dropped. An annotation that does not decode is ignored
// here; validation reports it before anything is stored.
func hpaFromV1(in *autoscalingv1.HorizontalPodAutoscaler) *autoscalingv2.HorizontalPodAutoscaler {
	out := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference(in.Spec.ScaleTargetRef),
			MinReplicas:    copyInt32(in.Spec.MinReplicas),
			MaxReplicas:    in.Spec.MaxReplicas,
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{
			ObservedGeneration: copyInt64(in.Status.ObservedGeneration),
			CurrentReplicas:    in.Status.CurrentReplicas,
			DesiredReplicas:    in.Status.DesiredReplicas,
		},
	}
	if t := in.Status.LastScaleTime; t != nil {
		lt := *t
		out.Status.LastScaleTime = &lt
	}
	ann := in.Annotations
	var others []autoscalingv1.MetricSpec
	if v, ok := ann[hpaMetricsAnnotation]; ok && json.Unmarshal([]byte(v), &others) == nil {
		for _, m := range others {
			out.Spec.Metrics = append(out.Spec.Metrics, hpaMetricFromV1(m))
		}
	}
	if p := in.Spec.TargetCPUUtilizationPercentage; p != nil {
		out.Spec.Metrics = append(out.Spec.Metrics, hpaCPUMetric(*p))
	}
	if p := in.Status.CurrentCPUUtilizationPercentage; p != nil {
		out.Status.CurrentMetrics = []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType,
			Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: new(*p)}}}}
	}
	var statuses []autoscalingv1.MetricStatus
	if v, ok := ann[hpaCurrentMetricsAnnotation]; ok && json.Unmarshal([]byte(v), &statuses) == nil {
		out.Status.CurrentMetrics = make([]autoscalingv2.MetricStatus, len(statuses))
		for i, m := range statuses {
			out.Status.CurrentMetrics[i] = hpaMetricStatusFromV1(m)
		}
	}
	var conds []autoscalingv1.HorizontalPodAutoscalerCondition
	if v, ok := ann[hpaConditionsAnnotation]; ok && json.Unmarshal([]byte(v), &conds) == nil {
		for _, c := range conds {
			out.Status.Conditions = append(out.Status.Conditions, autoscalingv2.HorizontalPodAutoscalerCondition{
				Type: autoscalingv2.HorizontalPodAutoscalerConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message})
		}
	}
	var behavior autoscalingv2.HorizontalPodAutoscalerBehavior
	if v, ok := ann[hpaBehaviorAnnotation]; ok && json.Unmarshal([]byte(v), &behavior) == nil {
		out.Spec.Behavior = &behavior
	}
	if len(ann) > 0 {
		kept := maps.Clone(ann)
		for _, k := range []string{hpaMetricsAnnotation, hpaCurrentMetricsAnnotation, hpaConditionsAnnotation, hpaBehaviorAnnotation} {
			delete(kept, k)
		}
		if len(kept) == 0 {
			kept = nil
		}
		out.Annotations = kept
	}
	out.SetGroupVersionKind(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"))
	return out
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	return new(*p)
}

func copyInt64(p *int64) *int64 {
	if p == nil {
		return nil
	}
	return new(*p)
}
