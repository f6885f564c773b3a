package podgc_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/podgc"
	"github.com/rudder-dev/rudder/internal/simnode"
)

func TestCollector(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 1})
	ctx := context.Background()
	cs := c.Client
	const ns = metav1.NamespaceDefault
	pods := cs.CoreV1().Pods(ns)

	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("nodes: %v %v", nodes, err)
	}
	sim := nodes.Items[0].Name

	// Two nodes no kubelet serves: one declared dead by an operator
	// (NotReady + out-of-service taint), one merely NotReady.
	for _, n := range []struct {
		name  string
		taint bool
	}{{"dead-node", true}, {"down-node", false}} {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name}}
		if n.taint {
			node.Spec.Taints = []corev1.Taint{{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute}}
		}
		node, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady",
			LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	mk := func(name, node string, mutate ...func(*corev1.Pod)) {
		t.Helper()
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		for _, m := range mutate {
			m(p)
		}
		if _, err := pods.Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Four pods that finish quickly on the simulated node, created in
	// name order (same-second creation times tie-break on the name).
	for i := range 4 {
		mk(fmt.Sprintf("done-%d", i), sim, func(p *corev1.Pod) {
			p.Annotations = map[string]string{simnode.AnnotationRunDuration: "100ms"}
		})
	}
	mk("live", sim, func(p *corev1.Pod) { p.Spec.RestartPolicy = corev1.RestartPolicyAlways })
	mk("orphan", "ghost-node")
	mk("stuck", "dead-node")
	mk("waiting", "down-node")
	for _, name := range []string{"stuck", "waiting"} {
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		for i := range 4 {
			p, err := pods.Get(ctx, fmt.Sprintf("done-%d", i), metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if p.Status.Phase != corev1.PodSucceeded {
				return false, fmt.Sprintf("%s is %s", p.Name, p.Status.Phase)
			}
		}
		return true, ""
	})

	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	const quarantine = time.Second
	started := time.Now()
	controllertest.Run(t, c.Config, podgc.NewDescriptor(podgc.Config{TerminatedPodThreshold: 2, CheckPeriod: 100 * time.Millisecond, Quarantine: quarantine}))

	// Follow the watch until the orphan is gone, remembering what it
	// looked like last and when each pod went.
	deletedAt := map[string]time.Time{}
	var orphanLast *corev1.Pod
	timeout := time.After(10 * time.Second)
	for deletedAt["orphan"].IsZero() || deletedAt["stuck"].IsZero() || deletedAt["done-1"].IsZero() {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if p.Name == "orphan" && ev.Type == watch.Modified {
				orphanLast = p
			}
			if ev.Type == watch.Deleted {
				deletedAt[p.Name] = time.Now()
			}
		case <-timeout:
			t.Fatalf("timed out; deleted so far: %v", deletedAt)
		}
	}

	t.Run("orphaned pod marked and force deleted after quarantine", func(t *testing.T) {
		if d := deletedAt["orphan"].Sub(started); d < quarantine {
			t.Errorf("deleted %v after start, before the %v quarantine", d, quarantine)
		}
		if orphanLast == nil {
			t.Fatal("orphan was deleted without being marked Failed first")
		}
		if orphanLast.Status.Phase != corev1.PodFailed {
			t.Errorf("phase before deletion %q, want Failed", orphanLast.Status.Phase)
		}
		var cond *corev1.PodCondition
		for i := range orphanLast.Status.Conditions {
			if orphanLast.Status.Conditions[i].Type == corev1.DisruptionTarget {
				cond = &orphanLast.Status.Conditions[i]
			}
		}
		if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != "DeletionByPodGC" || cond.Message != "PodGC: node no longer exists" {
			t.Errorf("DisruptionTarget condition = %+v", cond)
		}
	})
	t.Run("oldest terminated beyond the threshold", func(t *testing.T) {
		for _, name := range []string{"done-0", "done-1"} {
			if deletedAt[name].IsZero() {
				t.Errorf("%s not deleted", name)
			}
		}
		for _, name := range []string{"done-2", "done-3", "live"} {
			if _, err := pods.Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("%s: %v, want kept", name, err)
			}
		}
	})
	t.Run("terminating on an out-of-service node force deleted", func(t *testing.T) {
		if _, err := pods.Get(ctx, "stuck", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("stuck: err = %v, want NotFound", err)
		}
		p, err := pods.Get(ctx, "waiting", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("waiting (NotReady node without the taint): %v, want kept", err)
		}
		if p.DeletionTimestamp == nil {
			t.Error("waiting lost its deletion timestamp")
		}
	})
}
