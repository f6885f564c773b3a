package scheduler_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestAntiAffinityBurst sends 1,000 pods with required anti-affinity to
// one another (one per hostname) at 100 simulated nodes, all at once from
// 16 clients. The scheduler assumes each pod before its bind returns, so
// the next cycles must already count it: exactly 100 pods are bound, one
// per node, and the other 900 are Unschedulable, never two on a node.
func TestAntiAffinityBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 pods")
	}
	const nodes, pods, clients = 100, 1000, 16
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: nodes})
	startScheduler(t, c)
	cs := c.Client
	ctx := context.Background()
	const ns = "burst"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	anti := func(p *corev1.Pod) {
		p.Labels = map[string]string{"app": "solo"}
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "solo"}},
				TopologyKey:   corev1.LabelHostname,
			}},
		}}
	}
	var wg sync.WaitGroup
	errs := make(chan error, clients)
	for w := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < pods; i += clients {
				if _, err := cs.CoreV1().Pods(ns).Create(ctx, testPod(fmt.Sprintf("solo-%04d", i), "10m", anti), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var list []corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		list = l.Items
		bound, unsched := 0, 0
		for i := range list {
			if list[i].Spec.NodeName != "" {
				bound++
			} else if c := scheduledCondition(&list[i]); c != nil && c.Status == corev1.ConditionFalse {
				unsched++
			}
		}
		return bound == nodes && unsched == pods-nodes, nil
	})
	seen := map[string]string{}
	for _, p := range list {
		if p.Spec.NodeName == "" {
			continue
		}
		if other, ok := seen[p.Spec.NodeName]; ok {
			t.Errorf("%s and %s share node %s despite anti-affinity", other, p.Name, p.Spec.NodeName)
		}
		seen[p.Spec.NodeName] = p.Name
	}
	if err != nil {
		t.Fatalf("waiting for %d bound and %d unschedulable: %v (bound %d)", nodes, pods-nodes, err, len(seen))
	}
}
