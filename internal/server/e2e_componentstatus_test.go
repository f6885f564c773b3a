package server

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// TestComponentStatuses: `kubectl get cs` lists the scheduler, the
// controller manager and etcd as Healthy when they run (here in-process),
// with upstream's deprecation warning; the resource is read-only.
func TestComponentStatuses(t *testing.T) {
	srv, rc := startTestServer(t, Config{Controllers: []string{"-*", "namespace"}})
	cs := kubernetes.NewForConfigOrDie(rc)
	k := kubectlFor(t, srv.Kubeconfig)

	r := k.run(t, "", "get", "cs")
	if r.code != 0 {
		t.Fatalf("kubectl get cs: %d %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "Warning: v1 ComponentStatus is deprecated in v1.19+") {
		t.Errorf("no deprecation warning: %q", r.stderr)
	}
	for _, want := range []string{"NAME STATUS MESSAGE ERROR", "controller-manager Healthy ok", "etcd-0 Healthy ok", "scheduler Healthy ok"} {
		found := false
		for _, line := range strings.Split(r.stdout, "\n") {
			if strings.Join(strings.Fields(line), " ") == want {
				found = true
			}
		}
		if !found {
			t.Errorf("kubectl get cs: no line %q in:\n%s", want, r.stdout)
		}
	}

	ctx := context.Background()
	etcd, err := cs.CoreV1().ComponentStatuses().Get(ctx, "etcd-0", metav1.GetOptions{})
	if err != nil || len(etcd.Conditions) != 1 || etcd.Conditions[0].Type != corev1.ComponentHealthy || etcd.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("etcd-0: %+v %v", etcd, err)
	}
	if _, err := cs.CoreV1().ComponentStatuses().Get(ctx, "kubelet", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get cs/kubelet: %v, want NotFound", err)
	}
	_, err = cs.CoreV1().ComponentStatuses().Create(ctx, &corev1.ComponentStatus{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{})
	if !apierrors.IsMethodNotSupported(err) {
		t.Errorf("create: %v, want 405", err)
	}
	if out := k.ok(t, "api-resources"); !strings.Contains(strings.Join(strings.Fields(out), " "), "componentstatuses cs v1 false ComponentStatus") {
		t.Errorf("api-resources lacks componentstatuses:\n%s", out)
	}
}
