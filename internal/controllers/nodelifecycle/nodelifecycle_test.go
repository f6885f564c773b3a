package nodelifecycle_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/nodelifecycle"
)

// TestStoppedNode follows one node through a failure and back: marked
// Unknown, tainted, its pods marked not ready and evicted as their
// tolerations say, then untainted when it returns.
func TestStoppedNode(t *testing.T) {
	c := startCluster(t, 3)
	cs := c.Client
	ctx := context.Background()

	createPod(t, cs, "plain", "sim-0")
	createPod(t, cs, "brief", "sim-0", unreachableToleration(ptr.To[int64](2)))
	createPod(t, cs, "forever", "sim-0", unreachableToleration(nil))
	createPod(t, cs, "elsewhere", "sim-1")
	waitPodsReady(t, cs, "plain", "brief", "forever", "elsewhere")

	controllertest.Run(t, c.Config, nodelifecycle.NewDescriptor(testConfig), nodelifecycle.TaintEvictionDescriptor)

	t.Run("running nodes stay Ready", func(t *testing.T) {
		// The simulated nodes post status only when it changes, so for
		// longer than the grace period only their leases show them alive.
		controllertest.Consistently(t, grace+time.Second, func() (bool, string) {
			for _, name := range []string{"sim-0", "sim-1", "sim-2"} {
				n := getNode(t, cs, name)
				if readyOf(n) != corev1.ConditionTrue || len(n.Spec.Taints) != 0 {
					return false, fmt.Sprintf("%s: Ready=%s taints %v", name, readyOf(n), n.Spec.Taints)
				}
			}
			return true, ""
		})
	})

	stoppedAt := time.Now()
	setStopped(t, cs, "sim-0", true)
	var unknownAt, taintedAt time.Time
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		n := getNode(t, cs, "sim-0")
		if unknownAt.IsZero() && readyOf(n) == corev1.ConditionUnknown {
			unknownAt = time.Now()
		}
		if taintedAt.IsZero() && taintSet(n)[corev1.TaintNodeUnreachable+":NoExecute"] {
			taintedAt = time.Now()
		}
		return !unknownAt.IsZero() && !taintedAt.IsZero(), fmt.Sprintf("Ready=%s taints %v", readyOf(n), n.Spec.Taints)
	})

	t.Run("stopped node goes Unknown after the grace period", func(t *testing.T) {
		// Counted from the lease's last renewal: never before the grace
		// period, and soon after it (the slack is for loaded machines).
		renewed := lastRenewal(t, cs, "sim-0")
		t.Logf("Unknown %v after the stop (%v after the last renewal), NoExecute taint %v after",
			unknownAt.Sub(stoppedAt).Round(time.Millisecond), unknownAt.Sub(renewed).Round(time.Millisecond), taintedAt.Sub(stoppedAt).Round(time.Millisecond))
		if d := unknownAt.Sub(renewed); d < grace-10*time.Millisecond || d > grace+3*time.Second {
			t.Errorf("Unknown %v after the last renewal, want about %v", d, grace)
		}
		n := getNode(t, cs, "sim-0")
		for _, typ := range []corev1.NodeConditionType{corev1.NodeReady, corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure} {
			c := nodeCondition(n, typ)
			if c == nil || c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status." {
				t.Errorf("%s = %+v", typ, c)
			}
		}
	})

	t.Run("unreachable taints, NoExecute and NoSchedule", func(t *testing.T) {
		controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
			ts := taintSet(getNode(t, cs, "sim-0"))
			return ts[corev1.TaintNodeUnreachable+":NoExecute"] && ts[corev1.TaintNodeUnreachable+":NoSchedule"] &&
				!ts[corev1.TaintNodeNotReady+":NoExecute"] && len(ts) == 2, fmt.Sprint(ts)
		})
		for _, ta := range getNode(t, cs, "sim-0").Spec.Taints {
			if ta.Effect == corev1.TaintEffectNoExecute && ta.TimeAdded == nil {
				t.Errorf("%s has no timeAdded", ta.Key)
			}
		}
	})

	t.Run("pods on it marked not ready", func(t *testing.T) {
		controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
			for _, name := range []string{"plain", "brief", "forever"} {
				if c := podCondition(getPod(t, cs, name), corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse {
					return false, fmt.Sprintf("%s Ready = %+v", name, c)
				}
			}
			return true, ""
		})
	})

	t.Run("untolerating pod evicted at once", func(t *testing.T) {
		controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
			p := getPod(t, cs, "plain")
			return p.DeletionTimestamp != nil, "plain not deleted"
		})
		p := getPod(t, cs, "plain")
		if c := podCondition(p, corev1.DisruptionTarget); c == nil || c.Status != corev1.ConditionTrue || c.Reason != "DeletionByTaintManager" {
			t.Errorf("DisruptionTarget = %+v", c)
		}
		controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
			evs, err := cs.CoreV1().Events(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, e := range evs.Items {
				if e.Reason == "TaintManagerEviction" && e.Message == "Marking for deletion Pod default/plain" &&
					e.InvolvedObject.Name == "plain" && e.Source.Component == "taint-eviction-controller" {
					return true, ""
				}
			}
			return false, fmt.Sprintf("no eviction event among %d", len(evs.Items))
		})
	})

	t.Run("tolerationSeconds pod evicted after them", func(t *testing.T) {
		var deletedAt time.Time
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			if getPod(t, cs, "brief").DeletionTimestamp != nil {
				deletedAt = time.Now()
				return true, ""
			}
			return false, "brief not deleted"
		})
		// Never before the 2 s from the taint's timeAdded; soon after the
		// taint was seen (the slack is for loaded machines).
		added := taintAdded(t, getNode(t, cs, "sim-0"), corev1.TaintNodeUnreachable+":NoExecute")
		t.Logf("deleted %v after the taint was seen", deletedAt.Sub(taintedAt).Round(time.Millisecond))
		if d := deletedAt.Sub(added); d < 2*time.Second {
			t.Errorf("deleted %v after the taint's timeAdded, want at least 2s", d)
		}
		if d := deletedAt.Sub(taintedAt); d > 5*time.Second {
			t.Errorf("deleted %v after the taint was seen, want about 2s", d)
		}
	})

	t.Run("pod tolerating forever stays, other nodes' pods untouched", func(t *testing.T) {
		controllertest.Consistently(t, time.Second, func() (bool, string) {
			if p := getPod(t, cs, "forever"); p.DeletionTimestamp != nil {
				return false, "forever was deleted"
			}
			p := getPod(t, cs, "elsewhere")
			if c := podCondition(p, corev1.PodReady); p.DeletionTimestamp != nil || c == nil || c.Status != corev1.ConditionTrue {
				return false, fmt.Sprintf("elsewhere touched: deleting %v Ready %+v", p.DeletionTimestamp, c)
			}
			return true, ""
		})
	})

	t.Run("started again: Ready, taints gone", func(t *testing.T) {
		setStopped(t, cs, "sim-0", false)
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			n := getNode(t, cs, "sim-0")
			ts := taintSet(n)
			for _, k := range lifecycleTaints {
				if ts[k] {
					return false, fmt.Sprintf("Ready=%s taints %v", readyOf(n), ts)
				}
			}
			return readyOf(n) == corev1.ConditionTrue, fmt.Sprintf("Ready=%s", readyOf(n))
		})
	})

	t.Run("unschedulable taint follows spec.unschedulable", func(t *testing.T) {
		setUnschedulable := func(v bool) {
			patch := fmt.Appendf(nil, `{"spec":{"unschedulable":%v}}`, v)
			if _, err := cs.CoreV1().Nodes().Patch(ctx, "sim-2", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		const key = corev1.TaintNodeUnschedulable + ":NoSchedule"
		setUnschedulable(true)
		controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
			ts := taintSet(getNode(t, cs, "sim-2"))
			return ts[key], fmt.Sprint(ts)
		})
		setUnschedulable(false)
		controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
			ts := taintSet(getNode(t, cs, "sim-2"))
			return !ts[key], fmt.Sprint(ts)
		})
	})
}

// TestFullDisruption stops every node: the controller must take itself
// for the one cut off and evict nothing, until a node comes back.
func TestFullDisruption(t *testing.T) {
	c := startCluster(t, 3)
	cs := c.Client
	ctx := context.Background()
	nodes := []string{"sim-0", "sim-1", "sim-2"}
	for i, n := range nodes {
		createPod(t, cs, fmt.Sprintf("p%d", i), n)
	}
	waitPodsReady(t, cs, "p0", "p1", "p2")
	for _, n := range nodes {
		setStopped(t, cs, n, true)
	}
	// The controller starts once no lease moves any more, so that it
	// loses sight of all three nodes in the same pass.
	controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
		for _, n := range nodes {
			l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if leaseAge(l) < 3*renewInterval {
				return false, n + " still renewing"
			}
		}
		return true, ""
	})
	controllertest.Run(t, c.Config, nodelifecycle.NewDescriptor(testConfig), nodelifecycle.TaintEvictionDescriptor)

	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		for _, n := range nodes {
			if r := readyOf(getNode(t, cs, n)); r != corev1.ConditionUnknown {
				return false, n + " is " + string(r)
			}
		}
		return true, ""
	})

	t.Run("nothing evicted, no NoExecute taint", func(t *testing.T) {
		controllertest.Consistently(t, 1500*time.Millisecond, func() (bool, string) {
			for i, n := range nodes {
				for k := range taintSet(getNode(t, cs, n)) {
					if strings.HasSuffix(k, ":NoExecute") {
						return false, n + " tainted " + k
					}
				}
				if p := getPod(t, cs, fmt.Sprintf("p%d", i)); p.DeletionTimestamp != nil {
					return false, p.Name + " deleted"
				}
			}
			return true, ""
		})
	})

	t.Run("still unschedulable and not ready", func(t *testing.T) {
		for i, n := range nodes {
			if !taintSet(getNode(t, cs, n))[corev1.TaintNodeUnreachable+":NoSchedule"] {
				t.Errorf("%s lacks the unreachable NoSchedule taint", n)
			}
			if c := podCondition(getPod(t, cs, fmt.Sprintf("p%d", i)), corev1.PodReady); c == nil || c.Status != corev1.ConditionFalse {
				t.Errorf("p%d Ready = %+v", i, c)
			}
		}
	})

	t.Run("one node back: the others' zones are evicted", func(t *testing.T) {
		// With zone-0 healthy again the controller is evidently not cut
		// off, so zone-1 and zone-2, each without a Ready node, are
		// really down.
		setStopped(t, cs, "sim-0", false)
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			for _, name := range []string{"p1", "p2"} {
				if getPod(t, cs, name).DeletionTimestamp == nil {
					return false, name + " not deleted"
				}
			}
			return true, ""
		})
		if p := getPod(t, cs, "p0"); p.DeletionTimestamp != nil {
			t.Error("p0, on the node that came back, was deleted")
		}
	})
}

// TestRestartConverges: a controller started over picks up where the
// last one left, from the API alone.
func TestRestartConverges(t *testing.T) {
	c := startCluster(t, 3)
	cs := c.Client
	createPod(t, cs, "waits", "sim-1", unreachableToleration(ptr.To[int64](3)))
	waitPodsReady(t, cs, "waits")
	stop := controllertest.Run(t, c.Config, nodelifecycle.NewDescriptor(testConfig), nodelifecycle.TaintEvictionDescriptor)

	setStopped(t, cs, "sim-1", true)
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		ts := taintSet(getNode(t, cs, "sim-1"))
		return ts[corev1.TaintNodeUnreachable+":NoExecute"], fmt.Sprint(ts)
	})
	stop()

	t.Run("pending eviction survives a restart", func(t *testing.T) {
		time.Sleep(2 * time.Second)
		restartAt := time.Now()
		controllertest.Run(t, c.Config, nodelifecycle.NewDescriptor(testConfig), nodelifecycle.TaintEvictionDescriptor)
		var deletedAt time.Time
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			deletedAt = time.Now()
			return getPod(t, cs, "waits").DeletionTimestamp != nil, "not deleted"
		})
		// Counted from the taint's timeAdded (stored to the second), so
		// at most 1 s after the restart; counted from the restart it
		// would be 3 s after it.
		n := getNode(t, cs, "sim-1")
		added := taintAdded(t, n, corev1.TaintNodeUnreachable+":NoExecute")
		t.Logf("deleted %v after the taint's timeAdded", deletedAt.Sub(added).Round(time.Millisecond))
		if d := deletedAt.Sub(added); d < 3*time.Second {
			t.Errorf("deleted %v after the taint's timeAdded, want at least 3s", d)
		}
		if d := deletedAt.Sub(restartAt); d >= 3*time.Second {
			t.Errorf("deleted %v after the restart: the wait started over", d)
		}
		if readyOf(n) != corev1.ConditionUnknown || !taintSet(n)[corev1.TaintNodeUnreachable+":NoExecute"] {
			t.Errorf("restart lost the node's state: Ready=%s taints %v", readyOf(n), n.Spec.Taints)
		}
	})
}

// TestEvictionRateLimit: in one zone, nodes are tainted for eviction no
// faster than the zone's rate.
func TestEvictionRateLimit(t *testing.T) {
	c := startCluster(t, 1)
	cs := c.Client
	cfg := testConfig
	cfg.EvictionLimiterQPS = 0.5 // one node per 2 s
	controllertest.Run(t, c.Config, nodelifecycle.NewDescriptor(cfg))

	// Two of three down is not yet a partial disruption (that takes 3),
	// so the zone stays Normal and taints at the normal rate.
	setStopped(t, cs, "sim-0", true)
	setStopped(t, cs, "sim-1", true)
	tainted := map[string]time.Time{}
	controllertest.Eventually(t, 12*time.Second, func() (bool, string) {
		for _, n := range []string{"sim-0", "sim-1"} {
			if _, ok := tainted[n]; !ok && taintSet(getNode(t, cs, n))[corev1.TaintNodeUnreachable+":NoExecute"] {
				tainted[n] = time.Now()
			}
		}
		return len(tainted) == 2, fmt.Sprint(tainted)
	})
	gap := tainted["sim-0"].Sub(tainted["sim-1"]).Abs()
	t.Logf("second node tainted %v after the first", gap.Round(time.Millisecond))
	if gap < 1500*time.Millisecond || gap > 6*time.Second {
		t.Errorf("nodes tainted %v apart, want about 2s", gap)
	}
	if r := readyOf(getNode(t, cs, "sim-2")); r != corev1.ConditionTrue {
		t.Errorf("sim-2 Ready = %s", r)
	}
}

func leaseAge(l *coordinationv1.Lease) time.Duration {
	if l.Spec.RenewTime == nil {
		return time.Hour
	}
	return time.Since(l.Spec.RenewTime.Time)
}
