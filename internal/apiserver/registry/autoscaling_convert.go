package registry

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Metric conversions between autoscaling/v2 and the older metric shapes
// autoscaling/v1 keeps in its annotations (a flat target per source
// instead of v2's MetricTarget). The target type v2 needs is inferred
// from which v1 fields are set, as upstream's conversion does.

func hpaMetricToV1(in autoscalingv2.MetricSpec) autoscalingv1.MetricSpec {
	out := autoscalingv1.MetricSpec{Type: autoscalingv1.MetricSourceType(in.Type)}
	switch {
	case in.Object != nil:
		out.Object = &autoscalingv1.ObjectMetricSource{
			Target:       autoscalingv1.CrossVersionObjectReference(in.Object.DescribedObject),
			MetricName:   in.Object.Metric.Name,
			Selector:     in.Object.Metric.Selector,
			TargetValue:  quantityOrZero(in.Object.Target.Value),
			AverageValue: in.Object.Target.AverageValue,
		}
	case in.Pods != nil:
		out.Pods = &autoscalingv1.PodsMetricSource{MetricName: in.Pods.Metric.Name, Selector: in.Pods.Metric.Selector,
			TargetAverageValue: quantityOrZero(in.Pods.Target.AverageValue)}
	case in.Resource != nil:
		out.Resource = &autoscalingv1.ResourceMetricSource{Name: in.Resource.Name,
			TargetAverageUtilization: in.Resource.Target.AverageUtilization, TargetAverageValue: in.Resource.Target.AverageValue}
	case in.ContainerResource != nil:
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricSource{Name: in.ContainerResource.Name, Container: in.ContainerResource.Container,
			TargetAverageUtilization: in.ContainerResource.Target.AverageUtilization, TargetAverageValue: in.ContainerResource.Target.AverageValue}
	case in.External != nil:
		out.External = &autoscalingv1.ExternalMetricSource{MetricName: in.External.Metric.Name, MetricSelector: in.External.Metric.Selector,
			TargetValue: in.External.Target.Value, TargetAverageValue: in.External.Target.AverageValue}
	}
	return out
}

func hpaMetricFromV1(in autoscalingv1.MetricSpec) autoscalingv2.MetricSpec {
	out := autoscalingv2.MetricSpec{Type: autoscalingv2.MetricSourceType(in.Type)}
	switch {
	case in.Object != nil:
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: new(in.Object.TargetValue), AverageValue: in.Object.AverageValue}
		if in.Object.AverageValue != nil {
			t.Type = autoscalingv2.AverageValueMetricType
		}
		out.Object = &autoscalingv2.ObjectMetricSource{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(in.Object.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: in.Object.MetricName, Selector: in.Object.Selector},
			Target:          t,
		}
	case in.Pods != nil:
		out.Pods = &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: in.Pods.MetricName, Selector: in.Pods.Selector},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: new(in.Pods.TargetAverageValue)},
		}
	case in.Resource != nil:
		out.Resource = &autoscalingv2.ResourceMetricSource{Name: in.Resource.Name,
			Target: hpaResourceTargetFromV1(in.Resource.TargetAverageUtilization, in.Resource.TargetAverageValue)}
	case in.ContainerResource != nil:
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricSource{Name: in.ContainerResource.Name, Container: in.ContainerResource.Container,
			Target: hpaResourceTargetFromV1(in.ContainerResource.TargetAverageUtilization, in.ContainerResource.TargetAverageValue)}
	case in.External != nil:
		t := autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, Value: in.External.TargetValue, AverageValue: in.External.TargetAverageValue}
		if in.External.TargetValue != nil {
			t.Type = autoscalingv2.ValueMetricType
		}
		out.External = &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: in.External.MetricName, Selector: in.External.MetricSelector},
			Target: t,
		}
	}
	return out
}

func hpaResourceTargetFromV1(utilization *int32, average *resource.Quantity) autoscalingv2.MetricTarget {
	t := autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageUtilization: utilization, AverageValue: average}
	if utilization != nil {
		t.Type = autoscalingv2.UtilizationMetricType
	}
	return t
}

func hpaMetricStatusToV1(in autoscalingv2.MetricStatus) autoscalingv1.MetricStatus {
	out := autoscalingv1.MetricStatus{Type: autoscalingv1.MetricSourceType(in.Type)}
	switch {
	case in.Object != nil:
		out.Object = &autoscalingv1.ObjectMetricStatus{
			Target:       autoscalingv1.CrossVersionObjectReference(in.Object.DescribedObject),
			MetricName:   in.Object.Metric.Name,
			Selector:     in.Object.Metric.Selector,
			CurrentValue: quantityOrZero(in.Object.Current.Value),
			AverageValue: in.Object.Current.AverageValue,
		}
	case in.Pods != nil:
		out.Pods = &autoscalingv1.PodsMetricStatus{MetricName: in.Pods.Metric.Name, Selector: in.Pods.Metric.Selector,
			CurrentAverageValue: quantityOrZero(in.Pods.Current.AverageValue)}
	case in.Resource != nil:
		out.Resource = &autoscalingv1.ResourceMetricStatus{Name: in.Resource.Name,
			CurrentAverageUtilization: in.Resource.Current.AverageUtilization, CurrentAverageValue: quantityOrZero(in.Resource.Current.AverageValue)}
	case in.ContainerResource != nil:
		out.ContainerResource = &autoscalingv1.ContainerResourceMetricStatus{Name: in.ContainerResource.Name, Container: in.ContainerResource.Container,
			CurrentAverageUtilization: in.ContainerResource.Current.AverageUtilization, CurrentAverageValue: quantityOrZero(in.ContainerResource.Current.AverageValue)}
	case in.External != nil:
		out.External = &autoscalingv1.ExternalMetricStatus{MetricName: in.External.Metric.Name, MetricSelector: in.External.Metric.Selector,
			CurrentValue: quantityOrZero(in.External.Current.Value), CurrentAverageValue: in.External.Current.AverageValue}
	}
	return out
}

func hpaMetricStatusFromV1(in autoscalingv1.MetricStatus) autoscalingv2.MetricStatus {
	out := autoscalingv2.MetricStatus{Type: autoscalingv2.MetricSourceType(in.Type)}
	switch {
	case in.Object != nil:
		out.Object = &autoscalingv2.ObjectMetricStatus{
			DescribedObject: autoscalingv2.CrossVersionObjectReference(in.Object.Target),
			Metric:          autoscalingv2.MetricIdentifier{Name: in.Object.MetricName, Selector: in.Object.Selector},
			Current:         autoscalingv2.MetricValueStatus{Value: new(in.Object.CurrentValue), AverageValue: in.Object.AverageValue},
		}
	case in.Pods != nil:
		out.Pods = &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: in.Pods.MetricName, Selector: in.Pods.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: new(in.Pods.CurrentAverageValue)},
		}
	case in.Resource != nil:
		out.Resource = &autoscalingv2.ResourceMetricStatus{Name: in.Resource.Name, Current: autoscalingv2.MetricValueStatus{
			AverageUtilization: in.Resource.CurrentAverageUtilization, AverageValue: new(in.Resource.CurrentAverageValue)}}
	case in.ContainerResource != nil:
		out.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: in.ContainerResource.Name, Container: in.ContainerResource.Container,
			Current: autoscalingv2.MetricValueStatus{AverageUtilization: in.ContainerResource.CurrentAverageUtilization,
				AverageValue: new(in.ContainerResource.CurrentAverageValue)}}
	case in.External != nil:
		out.External = &autoscalingv2.ExternalMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: in.External.MetricName, Selector: in.External.MetricSelector},
			Current: autoscalingv2.MetricValueStatus{Value: new(in.External.CurrentValue), AverageValue: in.External.CurrentAverageValue},
		}
	}
	return out
}

func quantityOrZero(q *resource.Quantity) resource.Quantity {
	if q == nil {
		return resource.Quantity{}
	}
	return q.DeepCopy()
}
