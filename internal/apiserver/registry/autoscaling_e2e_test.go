package registry_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// TestHPAEndToEnd: `kubectl autoscale` (which writes autoscaling/v1) and
// `kubectl get hpa` (which reads the preferred v2) against a real server,
// the v1 and v2 views of one object agreeing, and v2-only fields written
// through v2 surviving a v1 read-modify-write.
func TestHPAEndToEnd(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, kc := c.Client, c.Server.Kubeconfig
	labels := map[string]string{"app": "web"}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	out := controllertest.KubectlOutput(t, kc, "autoscale", "deploy/web", "--min", "2", "--max", "5", "--cpu-percent", "80")
	if !strings.Contains(out, "horizontalpodautoscaler.autoscaling/web autoscaled") {
		t.Errorf("kubectl autoscale printed %q", out)
	}
	lines := strings.Split(strings.TrimSpace(controllertest.KubectlOutput(t, kc, "get", "hpa")), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE" {
		t.Fatalf("kubectl get hpa:\n%s", strings.Join(lines, "\n"))
	}
	if got := strings.Fields(lines[1]); len(got) < 6 || strings.Join(got[:7], " ") != "web Deployment/web cpu: <unknown>/80% 2 5 0" {
		t.Errorf("kubectl get hpa row = %q", lines[1])
	}

	v2, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m := v2.Spec.Metrics; len(m) != 1 || m[0].Resource == nil || m[0].Resource.Name != corev1.ResourceCPU || *m[0].Resource.Target.AverageUtilization != 80 {
		t.Errorf("v2 metrics = %+v", m)
	}
	v1, err := cs.AutoscalingV1().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v1.ResourceVersion != v2.ResourceVersion || v1.UID != v2.UID || *v1.Spec.MinReplicas != 2 || *v1.Spec.TargetCPUUtilizationPercentage != 80 {
		t.Errorf("v1 view %+v disagrees with v2 %+v", v1.ObjectMeta, v2.ObjectMeta)
	}

	t.Run("v2-only fields survive a v1 update", func(t *testing.T) {
		v2.Spec.Metrics = append(v2.Spec.Metrics, autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: new(resource.MustParse("10"))}}})
		updated, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Update(ctx, v2, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if updated.Spec.Behavior != nil {
			t.Errorf("behavior defaulted without being set: %+v", updated.Spec.Behavior)
		}
		v1, err := cs.AutoscalingV1().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(v1.Annotations["autoscaling.alpha.kubernetes.io/metrics"], `"qps"`) {
			t.Errorf("v1 annotations = %v", v1.Annotations)
		}
		v1.Spec.MaxReplicas = 7
		if _, err := cs.AutoscalingV1().HorizontalPodAutoscalers("default").Update(ctx, v1, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		back, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if back.Spec.MaxReplicas != 7 || len(back.Spec.Metrics) != 2 || len(back.Annotations) != 0 {
			t.Errorf("after the v1 update: maxReplicas %d, metrics %+v, annotations %v", back.Spec.MaxReplicas, back.Spec.Metrics, back.Annotations)
		}
	})

	t.Run("validation", func(t *testing.T) {
		bad := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "bad"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: new(int32(4)), MaxReplicas: 3}}
		_, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Create(ctx, bad, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.maxReplicas: Invalid value: 3: must be greater than or equal to `minReplicas`") ||
			!strings.Contains(err.Error(), "spec.scaleTargetRef.kind: Required value") {
			t.Errorf("create of an invalid autoscaler: %v", err)
		}
		res := controllertest.Kubectl(t, kc, "autoscale", "deploy/web", "--name", "neg", "--max", "3", "--cpu-percent", "0")
		if res.Code == 0 || !strings.Contains(res.Stderr, "averageUtilization") {
			t.Errorf("kubectl autoscale --cpu-percent 0: exit %d, %s", res.Code, res.Stderr)
		}
	})

	t.Run("kubectl apply", func(t *testing.T) {
		manifest := `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: applied
  namespace: default
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  maxReplicas: 4
  behavior:
    scaleDown:
      stabilizationWindowSeconds: 60
`
		path := filepath.Join(t.TempDir(), "hpa.yaml")
		if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
			t.Fatal(err)
		}
		out := controllertest.KubectlOutput(t, kc, "apply", "-f", path)
		if !strings.Contains(out, "horizontalpodautoscaler.autoscaling/applied created") {
			t.Errorf("kubectl apply printed %q", out)
		}
		// v1 readers see the behavior, with its defaults, in the annotation.
		behavior := controllertest.KubectlOutput(t, kc, "get", "horizontalpodautoscalers.v1.autoscaling", "applied",
			"-o", `jsonpath={.metadata.annotations.autoscaling\.alpha\.kubernetes\.io/behavior}`)
		if !strings.Contains(behavior, `"scaleDown":{"stabilizationWindowSeconds":60,"selectPolicy":"Max"`) || !strings.Contains(behavior, `"scaleUp":{"stabilizationWindowSeconds":0`) {
			t.Errorf("v1 behavior annotation = %s", behavior)
		}
	})

	t.Run("status", func(t *testing.T) {
		cur, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Status.CurrentReplicas, cur.Status.DesiredReplicas = 3, 3
		// The v1 update above moved the CPU target last, as upstream's
		// conversion does; statuses follow the spec's order.
		cur.Status.CurrentMetrics = []autoscalingv2.MetricStatus{
			{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
				Current: autoscalingv2.MetricValueStatus{AverageValue: new(resource.MustParse("5"))}}},
			{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: new(int32(42)), AverageValue: new(resource.MustParse("210m"))}}}}
		if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers("default").UpdateStatus(ctx, cur, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		v1, err := cs.AutoscalingV1().HorizontalPodAutoscalers("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if v1.Status.CurrentReplicas != 3 || v1.Status.CurrentCPUUtilizationPercentage == nil || *v1.Status.CurrentCPUUtilizationPercentage != 42 {
			t.Errorf("v1 status = %+v", v1.Status)
		}
		row := strings.Join(strings.Fields(strings.Split(strings.TrimSpace(controllertest.KubectlOutput(t, kc, "get", "hpa", "web", "--no-headers")), "\n")[0]), " ")
		if !strings.HasPrefix(row, "web Deployment/web 5/10, cpu: 42%/80% 2 7 3") {
			t.Errorf("kubectl get hpa web = %q", row)
		}
		desc := controllertest.KubectlOutput(t, kc, "describe", "hpa", "web")
		for _, want := range []string{"Reference:", "Deployment/web", `resource cpu on pods  (as a percentage of request):  42% (210m) / 80%`, "Min replicas:", "Max replicas:", "7"} {
			if !strings.Contains(desc, want) {
				t.Errorf("kubectl describe hpa lacks %q:\n%s", want, desc)
			}
		}
	})
}
