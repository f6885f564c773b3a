package resourcequota_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/resourcequota"
	"github.com/rudder-dev/rudder/internal/simnode"
)

// TestQuotaUsage runs the controller against a real API server and
// simulated nodes. No quota admission runs, so every number in
// status.used is the controller's own count.
func TestQuotaUsage(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	cs := c.Client
	controllertest.Run(t, c.Config, resourcequota.Descriptor)
	ctx := context.Background()

	t.Run("used follows creates and deletes", func(t *testing.T) {
		ns := createNS(t, cs, "team-a")
		createQuota(t, cs, ns, "compute", "pods=10,requests.cpu=2,configmaps=5,count/deployments.apps=3")
		waitUsed(t, cs, ns, "compute", "configmaps=0 count/deployments.apps=0 pods=0 requests.cpu=0")

		createPod(t, cs, ns, "web-0", "cpu=100m", nil)
		createPod(t, cs, ns, "web-1", "cpu=250m", nil)
		for _, name := range []string{"settings", "flags"} {
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		createDeployment(t, cs, ns, "web")
		waitUsed(t, cs, ns, "compute", "configmaps=2 count/deployments.apps=1 pods=2 requests.cpu=350m")
		if got := describeRows(controllertest.KubectlOutput(t, c.Server.Kubeconfig, "describe", "quota", "compute", "-n", ns)); got != "configmaps 2 5|count/deployments.apps 1 3|pods 2 10|requests.cpu 350m 2" {
			t.Errorf("kubectl describe quota rows: %q", got)
		}

		if err := cs.CoreV1().Pods(ns).Delete(ctx, "web-1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "flags", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cs.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUsed(t, cs, ns, "compute", "configmaps=1 count/deployments.apps=0 pods=1 requests.cpu=100m")

		// A new limit shows in status.hard at once.
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			q, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "compute", metav1.GetOptions{})
			if err != nil {
				return err
			}
			q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("20")
			q.Spec.Hard[corev1.ResourceServices] = resource.MustParse("4")
			_, err = cs.CoreV1().ResourceQuotas(ns).Update(ctx, q, metav1.UpdateOptions{})
			return err
		}); err != nil {
			t.Fatal(err)
		}
		q := waitUsed(t, cs, ns, "compute", "configmaps=1 count/deployments.apps=0 pods=1 requests.cpu=100m services=0")
		if hard := q.Status.Hard[corev1.ResourcePods]; hard.String() != "20" {
			t.Errorf("status.hard pods = %s, want 20", hard.String())
		}
	})

	t.Run("finished pods stop counting but stay objects", func(t *testing.T) {
		ns := createNS(t, cs, "team-b")
		createQuota(t, cs, ns, "pods", "pods=5,count/pods=5,requests.memory=1Gi")
		createPod(t, cs, ns, "server", "memory=64Mi", nil)
		createPod(t, cs, ns, "job", "memory=128Mi", func(p *corev1.Pod) {
			p.Spec.RestartPolicy = corev1.RestartPolicyNever
			p.Annotations = map[string]string{simnode.AnnotationRunDuration: "300ms"}
		})
		// The job pod is counted first, then released when it succeeds.
		waitUsed(t, cs, ns, "pods", "count/pods=2 pods=1 requests.memory=64Mi")
	})

	t.Run("a BestEffort quota counts only best-effort pods", func(t *testing.T) {
		ns := createNS(t, cs, "team-c")
		createQuota(t, cs, ns, "best-effort", "pods=5", corev1.ResourceQuotaScopeBestEffort)
		createQuota(t, cs, ns, "guaranteed-ish", "pods=5,requests.cpu=4", corev1.ResourceQuotaScopeNotBestEffort)
		createPod(t, cs, ns, "free-0", "", nil)
		createPod(t, cs, ns, "free-1", "", nil)
		createPod(t, cs, ns, "paid", "cpu=500m", nil)
		waitUsed(t, cs, ns, "best-effort", "pods=2")
		waitUsed(t, cs, ns, "guaranteed-ish", "pods=1 requests.cpu=500m")
		if err := cs.CoreV1().Pods(ns).Delete(ctx, "free-0", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitUsed(t, cs, ns, "best-effort", "pods=1")
	})

	t.Run("a priority class selector", func(t *testing.T) {
		ns := createNS(t, cs, "team-d")
		q := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "high"},
			Spec: corev1.ResourceQuotaSpec{
				Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("5")},
				ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
					ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"system-cluster-critical"},
				}}},
			},
		}
		if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		createPod(t, cs, ns, "plain", "", nil)
		createPod(t, cs, ns, "critical", "", func(p *corev1.Pod) { p.Spec.PriorityClassName = "system-cluster-critical" })
		waitUsed(t, cs, ns, "high", "pods=1")
	})
}

// waitUsed waits until the quota's status.used reads want ("name=value"
// sorted by name, values as the API prints them) and returns the quota.
func waitUsed(t *testing.T, cs kubernetes.Interface, ns, name, want string) *corev1.ResourceQuota {
	t.Helper()
	var got *corev1.ResourceQuota
	controllertest.Eventually(t, 15*time.Second, func() (bool, string) {
		q, err := cs.CoreV1().ResourceQuotas(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if s := show(q.Status.Used); s != want {
			return false, fmt.Sprintf("%s/%s used %q, want %q", ns, name, s, want)
		}
		got = q
		return true, ""
	})
	return got
}

func show(l corev1.ResourceList) string {
	var parts []string
	for n, q := range l {
		parts = append(parts, fmt.Sprintf("%s=%s", n, q.String()))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

var nsCounter int

func createNS(t *testing.T, cs kubernetes.Interface, name string) string {
	t.Helper()
	nsCounter++
	return controllertest.CreateNamespace(t, cs, fmt.Sprintf("%s-%d", name, nsCounter))
}

func createQuota(t *testing.T, cs kubernetes.Interface, ns, name, hard string, scopes ...corev1.ResourceQuotaScope) {
	t.Helper()
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ResourceQuotaSpec{Hard: list(hard), Scopes: scopes}}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(context.Background(), q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func list(s string) corev1.ResourceList {
	out := corev1.ResourceList{}
	if s == "" {
		return out
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(kv, "=")
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

var podCounter int

// createPod creates a pod with the given requests (and equal limits),
// bound to a simulated node, which runs it.
func createPod(t *testing.T, cs kubernetes.Interface, ns, name, requests string, tweak func(*corev1.Pod)) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:   fmt.Sprintf("sim-%d", podCounter%3),
			Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}},
		},
	}
	podCounter++
	if requests != "" {
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: list(requests), Limits: list(requests)}
	}
	if tweak != nil {
		tweak(pod)
	}
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func createDeployment(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	labels := map[string]string{"app": name}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.example/app:1"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// describeRows returns the resource rows of `kubectl describe quota`
// ("name used hard", joined by "|").
func describeRows(out string) string {
	var rows []string
	in := false
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 3 && f[0] == "--------":
			in = true
		case in && len(f) == 3:
			rows = append(rows, strings.Join(f, " "))
		}
	}
	return strings.Join(rows, "|")
}
