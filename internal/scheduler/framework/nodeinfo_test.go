package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func nodeInfoTestPod(name string, milliCPU int64, hostPort int32, claim string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milliCPU, resource.DecimalSI)},
		}}}},
	}
	if hostPort > 0 {
		p.Spec.Containers[0].Ports = []corev1.ContainerPort{{HostPort: hostPort, ContainerPort: 80}}
	}
	if claim != "" {
		p.Spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	}
	return p
}

// The node's name, taints, cordon and topology labels are copied into
// the NodeInfo for the per-node loops; they must follow SetNode,
// RemoveNode and Clone, and a clone's aggregates must be its own.
func TestNodeInfoCopiesAndClones(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{
			corev1.LabelHostname: "host-1", corev1.LabelTopologyZone: "z1", "disk": "ssd"}},
		Spec: corev1.NodeSpec{Unschedulable: true, Taints: []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("10")}},
	}
	check := func(t *testing.T, ni *NodeInfo) {
		t.Helper()
		if ni.Name() != "n1" || !ni.Unschedulable() || len(ni.Taints()) != 1 || ni.Taints()[0].Key != "k" {
			t.Errorf("name %q, unschedulable %v, taints %v", ni.Name(), ni.Unschedulable(), ni.Taints())
		}
		for key, want := range map[string]string{corev1.LabelHostname: "host-1", corev1.LabelTopologyZone: "z1", "disk": "ssd"} {
			if got, ok := ni.Label(key); !ok || got != want {
				t.Errorf("Label(%q) = %q, %v; want %q", key, got, ok, want)
			}
		}
		if _, ok := ni.Label(corev1.LabelTopologyRegion); ok {
			t.Errorf("Label(region) found on a node without it")
		}
		if ni.Allocatable.MilliCPU != 4000 || ni.Allocatable.AllowedPodNumber != 10 {
			t.Errorf("allocatable %+v", *ni.Allocatable)
		}
	}

	ni := NewNodeInfo()
	ni.SetNode(node)
	ni.AddPod(NewPodInfo(nodeInfoTestPod("a", 500, 8080, "data")))
	t.Run("SetNode", func(t *testing.T) { check(t, ni) })

	c := ni.Clone()
	t.Run("Clone", func(t *testing.T) {
		check(t, c)
		if c.Requested == ni.Requested || c.NonZeroRequested == ni.NonZeroRequested || c.Allocatable == ni.Allocatable {
			t.Fatal("clone shares its resource aggregates with the original")
		}
		if c.Requested.MilliCPU != 500 || !c.UsedPorts.Conflicts("", "TCP", 8080) || c.PVCRefCounts["ns/data"] != 1 {
			t.Errorf("clone lost aggregates: requested %d, ports %v, claims %v", c.Requested.MilliCPU, c.UsedPorts, c.PVCRefCounts)
		}
	})
	t.Run("changing the clone leaves the original", func(t *testing.T) {
		c.AddPod(NewPodInfo(nodeInfoTestPod("b", 250, 9090, "logs")))
		if ni.Requested.MilliCPU != 500 || ni.UsedPorts.Conflicts("", "TCP", 9090) || ni.PVCRefCounts["ns/logs"] != 0 || len(ni.Pods) != 1 {
			t.Errorf("original changed: requested %d, ports %v, claims %v, %d pods", ni.Requested.MilliCPU, ni.UsedPorts, ni.PVCRefCounts, len(ni.Pods))
		}
		if c.Requested.MilliCPU != 750 || len(c.Pods) != 2 {
			t.Errorf("clone: requested %d, %d pods", c.Requested.MilliCPU, len(c.Pods))
		}
	})
	t.Run("a node without ports or claims clones without them", func(t *testing.T) {
		e := NewNodeInfo()
		e.SetNode(node)
		e.AddPod(NewPodInfo(nodeInfoTestPod("x", 100, 0, "")))
		ec := e.Clone()
		if ec.UsedPorts != nil || ec.PVCRefCounts != nil {
			t.Errorf("empty sets allocated: %v %v", ec.UsedPorts, ec.PVCRefCounts)
		}
		ec.AddPod(NewPodInfo(nodeInfoTestPod("y", 100, 7070, "c")))
		if !ec.UsedPorts.Conflicts("", "TCP", 7070) || ec.PVCRefCounts["ns/c"] != 1 {
			t.Errorf("adding to a clone with nil sets: %v %v", ec.UsedPorts, ec.PVCRefCounts)
		}
	})
	t.Run("RemoveNode", func(t *testing.T) {
		ni.RemoveNode()
		if ni.Name() != "" || ni.Unschedulable() || ni.Taints() != nil {
			t.Errorf("after RemoveNode: name %q, unschedulable %v, taints %v", ni.Name(), ni.Unschedulable(), ni.Taints())
		}
		if _, ok := ni.Label(corev1.LabelHostname); ok {
			t.Error("hostname label kept after RemoveNode")
		}
	})
}
