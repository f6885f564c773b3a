package simnode

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

func testNodeConfig(t *testing.T) Config {
	t.Helper()
	cfg, err := Config{Client: fake.NewClientset(), Count: 4, Zones: 3,
		Capacity: corev1.ResourceList{"example.com/gpu": resource.MustParse("2")}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestNewNodeObject(t *testing.T) {
	cfg := testNodeConfig(t)
	for _, tc := range []struct {
		i                    int
		name, zone, cidr, ip string
	}{
		{0, "sim-0", "zone-0", "10.128.0.0/24", "198.18.0.1"},
		{2, "sim-2", "zone-2", "10.128.2.0/24", "198.18.0.3"},
		{3, "sim-3", "zone-0", "10.128.3.0/24", "198.18.0.4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := newNodeObject(&cfg, newSimNode(&cfg, tc.i), t0)
			for k, v := range map[string]string{
				corev1.LabelHostname: tc.name, corev1.LabelTopologyZone: tc.zone, corev1.LabelTopologyRegion: "sim-region",
				corev1.LabelInstanceTypeStable: "sim.large", corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				LabelSimulated: "true",
			} {
				if node.Labels[k] != v {
					t.Errorf("label %s=%q, want %q", k, node.Labels[k], v)
				}
			}
			if node.Name != tc.name || node.Spec.PodCIDR != tc.cidr || node.Spec.PodCIDRs[0] != tc.cidr {
				t.Errorf("name %s podCIDR %s", node.Name, node.Spec.PodCIDR)
			}
			if a := node.Status.Addresses; len(a) != 2 || a[0] != (corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: tc.ip}) ||
				a[1] != (corev1.NodeAddress{Type: corev1.NodeHostName, Address: tc.name}) {
				t.Errorf("addresses %v", a)
			}
			for name, want := range map[corev1.ResourceName]string{"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "100Gi", "example.com/gpu": "2"} {
				if q := node.Status.Capacity[name]; q.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("capacity %s=%s, want %s", name, q.String(), want)
				}
				if q := node.Status.Allocatable[name]; q.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("allocatable %s=%s, want %s", name, q.String(), want)
				}
			}
			if info := node.Status.NodeInfo; info.KubeletVersion != KubeletVersion || info.MachineID == "" || info.SystemUUID == "" || info.BootID == "" {
				t.Errorf("nodeInfo %+v", info)
			}
		})
	}
	if a, b := newSimNode(&cfg, 0), newSimNode(&cfg, 1); a.machine == b.machine {
		t.Error("two nodes share a machine ID")
	}
}

func TestNodeStatus(t *testing.T) {
	cfg := testNodeConfig(t)
	n := newSimNode(&cfg, 0)
	first := nodeStatus(&cfg, n, corev1.NodeStatus{}, t0)
	ready := func(st corev1.NodeStatus) corev1.NodeCondition {
		for _, c := range st.Conditions {
			if c.Type == corev1.NodeReady {
				return c
			}
		}
		t.Fatal("no Ready condition")
		return corev1.NodeCondition{}
	}
	t.Run("conditions", func(t *testing.T) {
		want := []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure, corev1.NodeReady}
		for i, c := range first.Conditions {
			if c.Type != want[i] || !c.LastHeartbeatTime.Time.Equal(t0) || !c.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("condition %d: %+v", i, c)
			}
		}
		if c := ready(first); c.Status != corev1.ConditionTrue || c.Reason != "KubeletReady" {
			t.Errorf("Ready %+v", c)
		}
	})
	t.Run("a heartbeat is no change", func(t *testing.T) {
		later := nodeStatus(&cfg, n, first, t0.Add(time.Minute))
		if statusChanged(&first, &later) {
			t.Fatal("a status differing only in heartbeats counts as changed")
		}
		if c := ready(later); !c.LastHeartbeatTime.Time.Equal(t0.Add(time.Minute)) || !c.LastTransitionTime.Time.Equal(t0) {
			t.Fatalf("Ready after a heartbeat %+v", c)
		}
	})
	t.Run("another writer's Unknown is a change, and a transition", func(t *testing.T) {
		lost := *first.DeepCopy()
		for i := range lost.Conditions {
			if lost.Conditions[i].Type == corev1.NodeReady {
				lost.Conditions[i].Status, lost.Conditions[i].Reason = corev1.ConditionUnknown, "NodeStatusUnknown"
			}
		}
		lost.Conditions = append(lost.Conditions, corev1.NodeCondition{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse})
		back := nodeStatus(&cfg, n, lost, t0.Add(time.Minute))
		if !statusChanged(&lost, &back) {
			t.Fatal("Unknown → True not seen as a change")
		}
		if c := ready(back); c.Status != corev1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t0.Add(time.Minute)) {
			t.Fatalf("Ready %+v", c)
		}
		if len(back.Conditions) != 5 {
			t.Fatalf("another writer's condition was dropped: %+v", back.Conditions)
		}
	})
	t.Run("adoption keeps a podCIDR and foreign labels", func(t *testing.T) {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.name, Labels: map[string]string{"team": "a"}},
			Spec: corev1.NodeSpec{PodCIDR: "10.0.5.0/24", PodCIDRs: []string{"10.0.5.0/24"}}}
		if !adoptNode(&cfg, n, node) {
			t.Fatal("labels were missing: want a change")
		}
		if node.Spec.PodCIDR != "10.0.5.0/24" || node.Labels["team"] != "a" || node.Labels[LabelSimulated] != "true" {
			t.Fatalf("adopted %+v", node)
		}
		if adoptNode(&cfg, n, node) {
			t.Fatal("second adoption changed something")
		}
	})
}

func TestConfigErrors(t *testing.T) {
	client := fake.NewClientset()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"no client", Config{Count: 1}},
		{"no nodes", Config{Client: client}},
		{"too many nodes for the cluster CIDR", Config{Client: client, Count: 300, ClusterCIDR: "10.244.0.0/16"}},
		{"bad node IP range", Config{Client: client, Count: 1, NodeIPRange: "nope"}},
		{"sub-second lease", Config{Client: client, Count: 1, LeaseDuration: 500 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(tc.cfg); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}
