package servicelb_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

func TestServiceLBSetsStatus(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 2, Controllers: []string{"service-lb"}})
	ctx := context.Background()
	svc, err := c.Client.CoreV1().Services("default").Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "lb"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		s, err := c.Client.CoreV1().Services("default").Get(ctx, svc.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Status.LoadBalancer.Ingress) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("ingress %v, want the 2 nodes' addresses", s.Status.LoadBalancer.Ingress)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
