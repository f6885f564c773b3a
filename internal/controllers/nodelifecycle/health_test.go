package nodelifecycle

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

// testNode is a node created at t0 with a Ready condition of status
// (none when "") whose heartbeat is at beat seconds.
func testNode(status corev1.ConditionStatus, beat float64) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0)}}
	if status != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(at(beat))}}
	}
	return n
}

func testLease(renew float64) *coordinationv1.Lease {
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: at(renew)}}}
}

func TestObserveHealth(t *testing.T) {
	const grace, startup = 40 * time.Second, 60 * time.Second
	// One node seen pass after pass; each step's probe time and
	// staleness follow from everything before it.
	steps := []struct {
		name      string
		now       float64
		node      *corev1.Node
		lease     *coordinationv1.Lease
		wantProbe float64
		wantStale bool
	}{
		{"never posted: clock runs from creation", 10, testNode("", 0), nil, 0, false},
		{"never posted, past startup grace", 61, testNode("", 0), nil, 0, true},
		{"Ready appears", 70, testNode(corev1.ConditionTrue, 69), nil, 70, false},
		{"same heartbeat: probe kept", 80, testNode(corev1.ConditionTrue, 69), nil, 70, false},
		{"new heartbeat", 90, testNode(corev1.ConditionTrue, 89), nil, 90, false},
		{"first lease counts as renewal", 95, testNode(corev1.ConditionTrue, 89), testLease(94), 95, false},
		{"same lease: probe kept", 120, testNode(corev1.ConditionTrue, 89), testLease(94), 95, false},
		{"renewed lease", 125, testNode(corev1.ConditionTrue, 89), testLease(124), 125, false},
		{"lease going back in time is no renewal", 130, testNode(corev1.ConditionTrue, 89), testLease(100), 125, false},
		{"silent for exactly grace: not yet", 165, testNode(corev1.ConditionTrue, 89), testLease(124), 125, false},
		{"silent past grace", 165.001, testNode(corev1.ConditionTrue, 89), testLease(124), 125, true},
		{"status heartbeat alone revives", 170, testNode(corev1.ConditionTrue, 169), testLease(124), 170, false},
		{"lease gone: status still counts", 175, testNode(corev1.ConditionTrue, 169), nil, 170, false},
	}
	var h *nodeHealth
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got := observeHealth(h, s.node, s.lease, at(s.now))
			h = &got
			if !got.probe.Equal(at(s.wantProbe)) {
				t.Errorf("probe = %v, want %v", got.probe.Sub(t0), at(s.wantProbe).Sub(t0))
			}
			if stale := got.stale(at(s.now), grace, startup); stale != s.wantStale {
				t.Errorf("stale = %v, want %v", stale, s.wantStale)
			}
		})
	}

	t.Run("first sight with Ready: benefit of the doubt", func(t *testing.T) {
		// The heartbeat is an hour old, but the controller may just have
		// started: the grace period runs from now.
		h := observeHealth(nil, testNode(corev1.ConditionTrue, -3600), testLease(-3600), at(0))
		if !h.probe.Equal(at(0)) || h.stale(at(40), grace, startup) || !h.stale(at(41), grace, startup) {
			t.Errorf("probe = %v", h.probe.Sub(t0))
		}
	})
}

func TestMarkUnknown(t *testing.T) {
	now := at(100)
	beat := metav1.NewTime(at(50))
	old := metav1.NewTime(at(10))
	healthy := &corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}}
	healthy.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: beat, LastTransitionTime: old},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: beat, LastTransitionTime: old},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: beat, LastTransitionTime: old},
		{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: beat, LastTransitionTime: old},
		{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, LastHeartbeatTime: beat, LastTransitionTime: old},
	}

	t.Run("kubelet conditions go Unknown, network left alone", func(t *testing.T) {
		conds, changed := markUnknown(healthy, now)
		if !changed {
			t.Fatal("changed = false")
		}
		for _, c := range conds {
			if c.Type == corev1.NodeNetworkUnavailable {
				if c.Status != corev1.ConditionFalse {
					t.Errorf("NetworkUnavailable = %s", c.Status)
				}
				continue
			}
			if c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status." {
				t.Errorf("%s = %s %q %q", c.Type, c.Status, c.Reason, c.Message)
			}
			if !c.LastTransitionTime.Equal(&metav1.Time{Time: now}) || !c.LastHeartbeatTime.Equal(&beat) {
				t.Errorf("%s: transition %v heartbeat %v", c.Type, c.LastTransitionTime, c.LastHeartbeatTime)
			}
		}
		if healthy.Status.Conditions[3].Status != corev1.ConditionTrue {
			t.Error("the node passed in was modified")
		}
	})
	t.Run("already Unknown: no change", func(t *testing.T) {
		n := healthy.DeepCopy()
		n.Status.Conditions, _ = markUnknown(n, now)
		if _, changed := markUnknown(n, at(200)); changed {
			t.Error("changed = true")
		}
	})
	t.Run("never posted: conditions added", func(t *testing.T) {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(t0)}}
		conds, changed := markUnknown(n, now)
		if !changed || len(conds) != 4 {
			t.Fatalf("changed %v, %d conditions", changed, len(conds))
		}
		for _, c := range conds {
			if c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusNeverUpdated" || c.Message != "Kubelet never posted node status." ||
				!c.LastHeartbeatTime.Equal(&n.CreationTimestamp) {
				t.Errorf("%+v", c)
			}
		}
	})
}

func TestZoneKey(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"none", nil, ""},
		{"zone and region", map[string]string{corev1.LabelTopologyZone: "z", corev1.LabelTopologyRegion: "r"}, "r:\x00:z"},
		{"beta labels", map[string]string{corev1.LabelFailureDomainBetaZone: "z"}, ":\x00:z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := zoneKey(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tt.labels}}); got != tt.want {
				t.Errorf("zoneKey = %q, want %q", got, tt.want)
			}
		})
	}
}
