package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func hpaResource(t *testing.T, version string) *Resource {
	t.Helper()
	for _, r := range All() {
		if r.Group == "autoscaling" && r.Version == version && r.Resource == "horizontalpodautoscalers" {
			return r
		}
	}
	t.Fatalf("no autoscaling/%s horizontalpodautoscalers", version)
	return nil
}

func hpaV2(name string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: objMeta(name), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
		MaxReplicas:    5,
	}}
}

func TestHPAPreferredVersionIsV2(t *testing.T) {
	var versions []string
	for _, r := range All() {
		if r.Group == "autoscaling" {
			versions = append(versions, r.Version)
		}
	}
	if strings.Join(versions, ",") != "v2,v1" {
		t.Errorf("autoscaling versions in discovery order = %v, want v2 (preferred) then v1", versions)
	}
	if v := hpaResource(t, "v1").Storage; v == nil || v.Version != "v2" {
		t.Errorf("v1 is not a view of the v2 objects: %+v", v)
	}
}

func TestHPADefaults(t *testing.T) {
	r := hpaResource(t, "v2")
	t.Run("no metrics", func(t *testing.T) {
		hpa := hpaV2("web")
		r.Default(hpa)
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 1 {
			t.Errorf("minReplicas = %v, want 1", hpa.Spec.MinReplicas)
		}
		want := []autoscalingv2.MetricSpec{hpaCPUMetric(80)}
		if !apiequality.Semantic.DeepEqual(hpa.Spec.Metrics, want) {
			t.Errorf("metrics = %+v, want 80%% CPU", hpa.Spec.Metrics)
		}
		if hpa.Spec.Behavior != nil {
			t.Errorf("behavior defaulted without being asked for: %+v", hpa.Spec.Behavior)
		}
	})
	t.Run("metrics kept", func(t *testing.T) {
		hpa := hpaV2("web")
		hpa.Spec.Metrics = []autoscalingv2.MetricSpec{hpaCPUMetric(50)}
		r.Default(hpa)
		if got := *hpa.Spec.Metrics[0].Resource.Target.AverageUtilization; len(hpa.Spec.Metrics) != 1 || got != 50 {
			t.Errorf("metrics = %+v", hpa.Spec.Metrics)
		}
	})
	t.Run("partial behavior", func(t *testing.T) {
		hpa := hpaV2("web")
		hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: new(int32(60))}}
		r.Default(hpa)
		b, _ := json.Marshal(hpa.Spec.Behavior)
		want := `{"scaleUp":{"stabilizationWindowSeconds":0,"selectPolicy":"Max","policies":[{"type":"Pods","value":4,"periodSeconds":15},{"type":"Percent","value":100,"periodSeconds":15}]},` +
			`"scaleDown":{"stabilizationWindowSeconds":60,"selectPolicy":"Max","policies":[{"type":"Percent","value":100,"periodSeconds":15}]}}`
		if string(b) != want {
			t.Errorf("behavior =\n %s\nwant\n %s", b, want)
		}
	})
}

func TestHPAValidate(t *testing.T) {
	r := hpaResource(t, "v2")
	q := resource.MustParse
	for _, tc := range []struct {
		name   string
		mutate func(*autoscalingv2.HorizontalPodAutoscaler)
		want   []string
		detail string
	}{
		{name: "defaults"},
		{name: "no target", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{}
		},
			want: []string{"spec.scaleTargetRef.kind: Required value", "spec.scaleTargetRef.name: Required value"}},
		{name: "target name with slash", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Name = "a/b" },
			want: []string{"spec.scaleTargetRef.name: Invalid value"}},
		{name: "min above max", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = new(int32(6)) },
			want: []string{"spec.maxReplicas: Invalid value"}, detail: "must be greater than or equal to `minReplicas`"},
		{name: "min zero", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MinReplicas = new(int32(0)) },
			want: []string{"spec.minReplicas: Invalid value"}, detail: "must be greater than or equal to 1"},
		{name: "max zero", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas, h.Spec.MinReplicas = 0, nil },
			want: []string{"spec.maxReplicas: Invalid value", "spec.maxReplicas: Invalid value"}},
		{name: "bad name", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Name = "Web" }, want: []string{"metadata.name: Invalid value"}},
		{name: "utilization zero", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{hpaCPUMetric(0)}
		},
			want: []string{"spec.metrics[0].resource.target.averageUtilization: Invalid value"}},
		{name: "memory average value", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: new(q("500Mi"))}}}}
		}},
		{name: "resource without target", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceCPU,
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType}}}}
		}, want: []string{"spec.metrics[0].resource.target.averageUtilization: Required value"}},
		{name: "type without source", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Pods"}}
		}, want: []string{"spec.metrics[0].pods: Required value"}},
		{name: "two sources", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			m := hpaCPUMetric(50)
			m.Pods = &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: new(q("10"))}}
			h.Spec.Metrics = []autoscalingv2.MetricSpec{m}
		}, want: []string{"spec.metrics[0].pods: Forbidden"}},
		{name: "unknown type", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Magic"}}
		}, want: []string{"spec.metrics[0].type: Unsupported value"}},
		{name: "external with both targets", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "External", External: &autoscalingv2.ExternalMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
				Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: new(q("5")), AverageValue: new(q("1"))}}}}
		}, want: []string{"spec.metrics[0].external.target.value: Forbidden"}},
		{name: "object metric", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "Object", Object: &autoscalingv2.ObjectMetricSource{
				DescribedObject: autoscalingv2.CrossVersionObjectReference{Kind: "Ingress", Name: "main"},
				Metric:          autoscalingv2.MetricIdentifier{Name: "requests-per-second"},
				Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: new(q("2k"))}}}}
		}},
		{name: "container resource without container", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: "ContainerResource", ContainerResource: &autoscalingv2.ContainerResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: new(int32(60))}}}}
		}, want: []string{"spec.metrics[0].containerResource.container: Required value"}},
		{name: "behavior without policies", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}}}
		}, want: []string{"spec.behavior.scaleUp.policies: Required value"}},
		{name: "behavior out of range", mutate: func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: new(int32(3601)), SelectPolicy: new(autoscalingv2.ScalingPolicySelect("Median")),
				Policies: []autoscalingv2.HPAScalingPolicy{{Type: "Nodes", Value: 0, PeriodSeconds: 1801}}}}
		}, want: []string{"spec.behavior.scaleDown.stabilizationWindowSeconds: Invalid value", "spec.behavior.scaleDown.selectPolicy: Unsupported value",
			"spec.behavior.scaleDown.policies[0].type: Unsupported value", "spec.behavior.scaleDown.policies[0].value: Invalid value",
			"spec.behavior.scaleDown.policies[0].periodSeconds: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hpa := hpaV2("web")
			if tc.mutate != nil {
				tc.mutate(hpa)
			}
			errs := runCreate(r, hpa)
			expectErrs(t, errs, tc.want...)
			if tc.detail != "" {
				expectErrWith(t, errs, tc.want[0], tc.detail)
			}
		})
	}
}

func TestHPAStatusCleared(t *testing.T) {
	hpa := hpaV2("web")
	hpa.Status.CurrentReplicas = 3
	if errs := runCreate(hpaResource(t, "v2"), hpa); len(errs) > 0 || hpa.Status.CurrentReplicas != 0 {
		t.Errorf("create kept status %+v (errs %v)", hpa.Status, errs)
	}
	hpa.Status.DesiredReplicas = -1
	expectErrs(t, hpaResource(t, "v2").ValidateStatusUpdate(hpa, hpa), "status.desiredReplicas: Invalid value")
}

// TestHPAV1View: what kubectl autoscale sends through v1 is what v2
// clients read, and a v2 autoscaler read and written back through v1
// loses nothing.
func TestHPAV1View(t *testing.T) {
	v1r, v2r := hpaResource(t, "v1"), hpaResource(t, "v2")
	t.Run("kubectl autoscale", func(t *testing.T) {
		in := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: objMeta("web"), Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    new(int32(2)), MaxReplicas: 5, TargetCPUUtilizationPercentage: new(int32(70))}}
		if errs := runCreate(v1r, in); len(errs) > 0 {
			t.Fatal(errs)
		}
		stored := v1r.Storage.ToStorage(in).(*autoscalingv2.HorizontalPodAutoscaler)
		if want := []autoscalingv2.MetricSpec{hpaCPUMetric(70)}; !apiequality.Semantic.DeepEqual(stored.Spec.Metrics, want) {
			t.Errorf("v2 metrics = %+v", stored.Spec.Metrics)
		}
		if *stored.Spec.MinReplicas != 2 || stored.Spec.MaxReplicas != 5 || stored.Spec.ScaleTargetRef.Name != "web" {
			t.Errorf("v2 spec = %+v", stored.Spec)
		}
		if len(stored.Annotations) != 0 {
			t.Errorf("annotations stored: %v", stored.Annotations)
		}
	})
	t.Run("v1 without target gets 80%", func(t *testing.T) {
		in := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: objMeta("web"), Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, MaxReplicas: 3}}
		v1r.Default(in)
		if p := in.Spec.TargetCPUUtilizationPercentage; p == nil || *p != 80 || *in.Spec.MinReplicas != 1 {
			t.Errorf("spec = %+v", in.Spec)
		}
	})
	t.Run("v1 errors name v2 fields", func(t *testing.T) {
		in := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: objMeta("web"), Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			MaxReplicas: 3, TargetCPUUtilizationPercentage: new(int32(0))}}
		expectErrs(t, runCreate(v1r, in), "spec.scaleTargetRef.kind: Required value", "spec.scaleTargetRef.name: Required value",
			"spec.metrics[0].resource.target.averageUtilization: Invalid value")
	})
	t.Run("round trip", func(t *testing.T) {
		full := hpaV2("web")
		full.Annotations = map[string]string{"team": "payments"}
		markStored(&full.ObjectMeta)
		full.Spec.Metrics = []autoscalingv2.MetricSpec{hpaCPUMetric(60), {Type: "Pods", Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: new(resource.MustParse("100"))}}}}
		full.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: new(int32(30))}}
		v2r.Default(full)
		full.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, DesiredReplicas: 3,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: "Resource", Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU,
				Current: autoscalingv2.MetricValueStatus{AverageUtilization: new(int32(75)), AverageValue: new(resource.MustParse("150m"))}}}},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "ReadyForNewScale"}}}

		v1 := v1r.Storage.FromStorage(full).(*autoscalingv1.HorizontalPodAutoscaler)
		if p := v1.Spec.TargetCPUUtilizationPercentage; p == nil || *p != 60 {
			t.Errorf("targetCPUUtilizationPercentage = %v, want 60", p)
		}
		if p := v1.Status.CurrentCPUUtilizationPercentage; p == nil || *p != 75 {
			t.Errorf("currentCPUUtilizationPercentage = %v, want 75", p)
		}
		for _, k := range []string{hpaMetricsAnnotation, hpaCurrentMetricsAnnotation, hpaConditionsAnnotation, hpaBehaviorAnnotation} {
			if v1.Annotations[k] == "" {
				t.Errorf("annotation %s missing: %v", k, v1.Annotations)
			}
		}
		if errs := runUpdate(v1r, v1.DeepCopy(), v1); len(errs) > 0 {
			t.Fatalf("v1 view does not validate: %v", errs)
		}
		back := v1r.Storage.ToStorage(v1).(*autoscalingv2.HorizontalPodAutoscaler)
		// v1 puts the CPU target last, as upstream.
		want := full.DeepCopy()
		want.SetGroupVersionKind(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"))
		want.Spec.Metrics = []autoscalingv2.MetricSpec{full.Spec.Metrics[1], full.Spec.Metrics[0]}
		if !apiequality.Semantic.DeepEqual(back, want) {
			a, _ := json.Marshal(back)
			b, _ := json.Marshal(want)
			t.Errorf("round trip through v1 changed the object:\n got  %s\n want %s", a, b)
		}
	})
	t.Run("v1 write keeps the status only annotations carry", func(t *testing.T) {
		old := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: objMeta("web")}
		old.Annotations = map[string]string{hpaConditionsAnnotation: `[{"type":"AbleToScale","status":"True"}]`}
		next := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: objMeta("web")}
		next.Annotations = map[string]string{hpaConditionsAnnotation: `[]`}
		v1r.PrepareForUpdate(next, old)
		if next.Annotations[hpaConditionsAnnotation] != old.Annotations[hpaConditionsAnnotation] {
			t.Errorf("conditions annotation = %q", next.Annotations[hpaConditionsAnnotation])
		}
	})
	t.Run("bad annotation", func(t *testing.T) {
		in := &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: objMeta("web"), Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{Kind: "Deployment", Name: "web"}, MaxReplicas: 3}}
		in.Annotations = map[string]string{hpaMetricsAnnotation: "{not json"}
		expectErrs(t, runCreate(v1r, in), "metadata.annotations[autoscaling.alpha.kubernetes.io/metrics]: Invalid value")
	})
}

// TestHPATable: testdata/autoscaling_tables.golden is `kubectl get hpa`;
// rewrite it with -run TestHPATable -update and review the diff.
func TestHPATable(t *testing.T) {
	now := time.Now()
	om := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "default", CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}
	}
	q := resource.MustParse
	withCPU := hpaV2("web")
	withCPU.ObjectMeta = om("web")
	defaultHPA(withCPU)
	withCPU.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 2, CurrentMetrics: []autoscalingv2.MetricStatus{{Type: "Resource",
		Resource: &autoscalingv2.ResourceMetricStatus{Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: new(int32(35))}}}}}
	unknown := hpaV2("api")
	unknown.ObjectMeta = om("api")
	defaultHPA(unknown)
	many := hpaV2("many")
	many.ObjectMeta = om("many")
	many.Spec.ScaleTargetRef = autoscalingv2.CrossVersionObjectReference{Kind: "StatefulSet", Name: "db"}
	many.Spec.Metrics = []autoscalingv2.MetricSpec{
		{Type: "Resource", Resource: &autoscalingv2.ResourceMetricSource{Name: corev1.ResourceMemory,
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: new(q("512Mi"))}}},
		{Type: "External", External: &autoscalingv2.ExternalMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "queue"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: new(q("30"))}}},
		{Type: "Pods", Pods: &autoscalingv2.PodsMetricSource{Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: new(q("1k"))}}},
	}
	v1 := hpaToV1(withCPU)
	objects := []runtime.Object{withCPU, unknown, many}

	var got strings.Builder
	fmt.Fprintf(&got, "$ kubectl get hpa\n%s\n", renderTable(t, hpaTable, objects, false))
	v1Row, v2Row := hpaTable.Row(v1), hpaTable.Row(withCPU)
	if fmt.Sprint(v1Row) != fmt.Sprint(v2Row) {
		t.Errorf("v1 row %v differs from v2 row %v", v1Row, v2Row)
	}
	path := filepath.Join("testdata", "autoscaling_tables.golden")
	if updateGolden() {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got.String() != string(want) {
		t.Errorf("tables differ from %s (run with -update and review the diff):\n%s", path, lineDiff(string(want), got.String()))
	}
}
