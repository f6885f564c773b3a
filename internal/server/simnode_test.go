package server

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/simnode"
)

// TestSimulatedNodes starts a server with --simulated-nodes: the nodes
// register through the listener and are Ready with their leases.
func TestSimulatedNodes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	srv, err := Start(ctx, Config{DataDir: t.TempDir(), SimulatedNodes: 3})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Stop()
	select {
	case <-srv.SimNodes.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("simulated nodes not ready within 30s")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: simnode.LabelSimulated + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	if len(nodes.Items) != 3 {
		t.Fatalf("%d simulated nodes, want 3", len(nodes.Items))
	}
	for _, n := range nodes.Items {
		t.Run(n.Name, func(t *testing.T) {
			ready := false
			for _, c := range n.Status.Conditions {
				ready = ready || c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue
			}
			if !ready {
				t.Errorf("not Ready: %+v", n.Status.Conditions)
			}
			if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{}); err != nil {
				t.Errorf("lease: %v", err)
			}
		})
	}
}
