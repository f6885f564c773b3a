package scheduler_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/scheduler"
)

// startScheduler runs our scheduler against the cluster until the test ends.
func startScheduler(t *testing.T, c *clustertest.Cluster) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := scheduler.New(ctx, scheduler.Config{Client: c.Client, Seed: 1})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && ctx.Err() == nil {
			t.Errorf("scheduler: %v", err)
		}
	})
}

func testPod(name string, cpu string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "test"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func createPods(t *testing.T, c kubernetes.Interface, ns string, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if _, err := c.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", p.Name, err)
		}
	}
}

// waitPods waits until cond holds for the namespace's pods.
func waitPods(t *testing.T, c kubernetes.Interface, ns string, what string, cond func([]corev1.Pod) bool) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := c.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		pods = l.Items
		return cond(pods), nil
	})
	if err != nil {
		for _, p := range pods {
			t.Logf("pod %s node=%q phase=%s conditions=%v", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.Conditions)
		}
		t.Fatalf("waiting for %s: %v", what, err)
	}
	return pods
}

func boundCount(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			n++
		}
	}
	return n
}

func scheduledCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodScheduled {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func TestSchedulerWithSimulatedNodes(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	startScheduler(t, c)
	ctx := context.Background()
	cs := c.Client

	nsCount := 0
	newNS := func(t *testing.T) string {
		nsCount++
		name := fmt.Sprintf("sched-%d", nsCount)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return name
	}

	t.Run("pods are bound, run, and get a Scheduled event", func(t *testing.T) {
		ns := newNS(t)
		for i := 0; i < 30; i++ {
			createPods(t, cs, ns, testPod(fmt.Sprintf("p%d", i), "100m"))
		}
		pods := waitPods(t, cs, ns, "30 running pods", func(ps []corev1.Pod) bool {
			running := 0
			for _, p := range ps {
				if p.Status.Phase == corev1.PodRunning {
					running++
				}
			}
			return running == 30
		})
		perNode := map[string]int{}
		for _, p := range pods {
			perNode[p.Spec.NodeName]++
		}
		// LeastAllocated + balanced spreading: no node takes everything.
		if len(perNode) != 3 {
			t.Errorf("pods landed on %d nodes, want all 3: %v", len(perNode), perNode)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
			return err == nil && len(evs.Items) == 30, err
		})
		if err != nil {
			t.Fatalf("Scheduled events: %v", err)
		}
		evs, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reason=Scheduled"})
		if msg := evs.Items[0].Message; !strings.HasPrefix(msg, "Successfully assigned "+ns+"/p") {
			t.Errorf("Scheduled event message %q", msg)
		}
	})

	t.Run("a pod that fits nowhere gets upstream's FailedScheduling message", func(t *testing.T) {
		ns := newNS(t)
		createPods(t, cs, ns, testPod("big", "1000"))
		pods := waitPods(t, cs, ns, "PodScheduled=False", func(ps []corev1.Pod) bool {
			c := scheduledCondition(&ps[0])
			return c != nil && c.Status == corev1.ConditionFalse
		})
		cond := scheduledCondition(&pods[0])
		want := "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
		if cond.Reason != corev1.PodReasonUnschedulable || cond.Message != want {
			t.Errorf("condition = %s %q\nwant Unschedulable %q", cond.Reason, cond.Message, want)
		}
		if pods[0].Spec.NodeName != "" {
			t.Errorf("bound to %s", pods[0].Spec.NodeName)
		}
	})

	t.Run("nodeSelector, taints and another schedulerName", func(t *testing.T) {
		ns := newNS(t)
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		target := nodes.Items[1].Name
		createPods(t, cs, ns,
			testPod("pinned", "10m", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: target} }),
			testPod("other-scheduler", "10m", func(p *corev1.Pod) { p.Spec.SchedulerName = "someone-else" }),
			testPod("nowhere", "10m", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{"no": "such"} }),
		)
		pods := waitPods(t, cs, ns, "pinned pod bound", func(ps []corev1.Pod) bool {
			for _, p := range ps {
				if p.Name == "pinned" && p.Spec.NodeName != "" {
					return true
				}
			}
			return false
		})
		for _, p := range pods {
			switch p.Name {
			case "pinned":
				if p.Spec.NodeName != target {
					t.Errorf("pinned pod on %s, want %s", p.Spec.NodeName, target)
				}
			case "other-scheduler":
				if p.Spec.NodeName != "" || scheduledCondition(&p) != nil {
					t.Errorf("pod of another scheduler was touched: node %q conditions %v", p.Spec.NodeName, p.Status.Conditions)
				}
			}
		}
		waitPods(t, cs, ns, "nowhere pod unschedulable", func(ps []corev1.Pod) bool {
			for _, p := range ps {
				if c := scheduledCondition(&p); p.Name == "nowhere" && c != nil {
					return c.Message == "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
				}
			}
			return false
		})
	})

	t.Run("anti-affinity holds under a burst", func(t *testing.T) {
		ns := newNS(t)
		anti := func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "solo"}
			p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
					LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "solo"}},
					TopologyKey:   corev1.LabelHostname,
				}},
			}}
		}
		for i := 0; i < 20; i++ {
			createPods(t, cs, ns, testPod(fmt.Sprintf("solo%d", i), "10m", anti))
		}
		pods := waitPods(t, cs, ns, "3 bound and 17 unschedulable", func(ps []corev1.Pod) bool {
			unsched := 0
			for _, p := range ps {
				if c := scheduledCondition(&p); c != nil && c.Status == corev1.ConditionFalse {
					unsched++
				}
			}
			return boundCount(ps) == 3 && unsched == 17
		})
		seen := map[string]string{}
		for _, p := range pods {
			if p.Spec.NodeName == "" {
				continue
			}
			if other, ok := seen[p.Spec.NodeName]; ok {
				t.Errorf("%s and %s share node %s despite anti-affinity", other, p.Name, p.Spec.NodeName)
			}
			seen[p.Spec.NodeName] = p.Name
		}
	})

	t.Run("topology spread across zones", func(t *testing.T) {
		ns := newNS(t)
		spread := func(p *corev1.Pod) {
			p.Labels = map[string]string{"app": "spread"}
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "spread"}},
			}}
		}
		for i := 0; i < 10; i++ {
			createPods(t, cs, ns, testPod(fmt.Sprintf("s%d", i), "10m", spread))
		}
		pods := waitPods(t, cs, ns, "10 bound", func(ps []corev1.Pod) bool { return boundCount(ps) == 10 })
		zoneOf := map[string]string{}
		nodes, _ := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		for _, n := range nodes.Items {
			zoneOf[n.Name] = n.Labels[corev1.LabelTopologyZone]
		}
		perZone := map[string]int{}
		for _, p := range pods {
			perZone[zoneOf[p.Spec.NodeName]]++
		}
		lo, hi := 1<<30, 0
		for _, n := range perZone {
			lo, hi = min(lo, n), max(hi, n)
		}
		if len(perZone) != 3 || hi-lo > 1 {
			t.Errorf("pods per zone %v: skew %d > 1", perZone, hi-lo)
		}
	})

	t.Run("a high-priority pod preempts a lower one and lands", func(t *testing.T) {
		ns := newNS(t)
		for _, pc := range []*schedulingv1.PriorityClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 10},
			{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
		} {
			if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		// Fill every node (32 cpu each) with low-priority pods.
		prio := func(name string, v int32) func(*corev1.Pod) {
			return func(p *corev1.Pod) { p.Spec.PriorityClassName = name; p.Spec.Priority = &v }
		}
		for i := 0; i < 3; i++ {
			createPods(t, cs, ns, testPod(fmt.Sprintf("low%d", i), "31", prio("low", 10)))
		}
		waitPods(t, cs, ns, "low pods bound", func(ps []corev1.Pod) bool { return boundCount(ps) == 3 })
		createPods(t, cs, ns, testPod("high", "20", prio("high", 1000)))
		pods := waitPods(t, cs, ns, "high pod bound", func(ps []corev1.Pod) bool {
			for _, p := range ps {
				if p.Name == "high" && p.Spec.NodeName != "" {
					return true
				}
			}
			return false
		})
		lows := 0
		for _, p := range pods {
			if strings.HasPrefix(p.Name, "low") && p.DeletionTimestamp == nil {
				lows++
			}
		}
		if lows != 2 {
			t.Errorf("%d low-priority pods left, want exactly one preempted (2 left)", lows)
		}
	})
}
