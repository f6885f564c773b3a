package nodelifecycle_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/nodelifecycle"
	"github.com/rudder-dev/rudder/internal/simnode"
)

// Timings of the tests: a kubelet-like cadence scaled down 50 times, so
// a node is given up on 2 s after it goes silent.
const (
	grace         = 2 * time.Second
	monitorPeriod = 200 * time.Millisecond
	renewInterval = 200 * time.Millisecond
)

// testConfig is the lifecycle controller at the tests' cadence. The
// eviction rate is high enough never to hold a test up; the rate limits
// themselves are unit-tested.
var testConfig = nodelifecycle.Config{
	NodeMonitorPeriod:      monitorPeriod,
	NodeMonitorGracePeriod: grace,
	NodeStartupGracePeriod: grace,
	EvictionLimiterQPS:     50,
}

// startCluster starts a control plane and three simulated nodes, sim-0..2
// spread round-robin over zones zone-0..zone-(zones-1), that renew their
// leases every 200 ms. clustertest's own nodes renew every 10 s, the
// kubelet's default, which a 2 s grace period would take for dead.
func startCluster(t *testing.T, zones int) *clustertest.Cluster {
	t.Helper()
	c := clustertest.Start(t, clustertest.Options{})
	fleet, err := simnode.New(simnode.Config{
		Client:                c.Client,
		Count:                 3,
		Zones:                 zones,
		LeaseDuration:         time.Second,
		LeaseRenewInterval:    renewInterval,
		StatusUpdateFrequency: 500 * time.Millisecond,
		PodStartDelay:         100 * time.Millisecond,
		PodStopDelay:          100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := fleet.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(fleet.Stop)
	select {
	case <-fleet.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("simulated nodes did not register")
	}
	return c
}

// setStopped stops or starts a simulated node.
func setStopped(t *testing.T, cs kubernetes.Interface, node string, stopped bool) {
	t.Helper()
	var v any
	if stopped {
		v = "true"
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]any{simnode.AnnotationStopped: v}}})
	if _, err := cs.CoreV1().Nodes().Patch(context.Background(), node, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func getNode(t *testing.T, cs kubernetes.Interface, name string) *corev1.Node {
	t.Helper()
	n, err := cs.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func getPod(t *testing.T, cs kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	p, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func nodeCondition(n *corev1.Node, typ corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

func podCondition(p *corev1.Pod, typ corev1.PodConditionType) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func readyOf(n *corev1.Node) corev1.ConditionStatus {
	if c := nodeCondition(n, corev1.NodeReady); c != nil {
		return c.Status
	}
	return ""
}

// taintSet renders a node's taints as "key:effect" strings.
func taintSet(n *corev1.Node) map[string]bool {
	out := map[string]bool{}
	for _, t := range n.Spec.Taints {
		out[fmt.Sprintf("%s:%s", t.Key, t.Effect)] = true
	}
	return out
}

// lastRenewal is when node's lease was last renewed.
func lastRenewal(t *testing.T, cs kubernetes.Interface, node string) time.Time {
	t.Helper()
	l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Spec.RenewTime == nil {
		t.Fatalf("lease %s was never renewed", node)
	}
	return l.Spec.RenewTime.Time
}

// taintAdded is the timeAdded of node's taint key:effect (stored to the
// second, so at most the moment it was really added).
func taintAdded(t *testing.T, n *corev1.Node, keyEffect string) time.Time {
	t.Helper()
	for _, ta := range n.Spec.Taints {
		if ta.Key+":"+string(ta.Effect) == keyEffect && ta.TimeAdded != nil {
			return ta.TimeAdded.Time
		}
	}
	t.Fatalf("%s has no %s taint with timeAdded", n.Name, keyEffect)
	return time.Time{}
}

// nodeTaints are the not-ready/unreachable taints, both effects.
var lifecycleTaints = []string{
	corev1.TaintNodeNotReady + ":NoExecute", corev1.TaintNodeNotReady + ":NoSchedule",
	corev1.TaintNodeUnreachable + ":NoExecute", corev1.TaintNodeUnreachable + ":NoSchedule",
}

// createPod binds a pod to node directly, as the scheduler would.
func createPod(t *testing.T, cs kubernetes.Interface, name, node string, tolerations ...corev1.Toleration) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			NodeName:    node,
			Tolerations: tolerations,
			Containers:  []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
	if _, err := cs.CoreV1().Pods(metav1.NamespaceDefault).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// waitPodsReady waits until the nodes have started every pod named.
func waitPodsReady(t *testing.T, cs kubernetes.Interface, names ...string) {
	t.Helper()
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		for _, n := range names {
			p := getPod(t, cs, n)
			if c := podCondition(p, corev1.PodReady); c == nil || c.Status != corev1.ConditionTrue {
				return false, n + " not ready"
			}
		}
		return true, ""
	})
}

func unreachableToleration(seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists,
		Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}
