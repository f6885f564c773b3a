package kubelet

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAllocatable(t *testing.T) {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("8Gi"),
		corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
		corev1.ResourcePods:             resource.MustParse("110"),
	}
	got := allocatableOf(capacity, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("20Gi")})
	for name, want := range map[corev1.ResourceName]string{
		corev1.ResourceCPU:              "3500m",
		corev1.ResourceMemory:           "0",    // reserved more than there is: zero, never negative
		corev1.ResourceEphemeralStorage: "90Gi", // less the 10 % eviction threshold
		corev1.ResourcePods:             "110",
	} {
		q := got[name]
		if q.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("%s = %s, want %s", name, q.String(), want)
		}
	}
	got = allocatableOf(capacity, nil, nil)
	if q := got[corev1.ResourceMemory]; q.Cmp(resource.MustParse("8092Mi")) != 0 {
		t.Errorf("memory = %s, want 8Gi - 100Mi", q.String())
	}
}

func TestNodeConditions(t *testing.T) {
	ok := nodeFigures{memoryAvailable: 1 << 30, fsAvailable: 50, fsSize: 100}
	for _, tc := range []struct {
		name string
		f    nodeFigures
		want map[corev1.NodeConditionType]string
	}{
		{"healthy", ok, map[corev1.NodeConditionType]string{
			corev1.NodeMemoryPressure: "False/KubeletHasSufficientMemory", corev1.NodeDiskPressure: "False/KubeletHasNoDiskPressure",
			corev1.NodePIDPressure: "False/KubeletHasSufficientPID", corev1.NodeReady: "True/KubeletReady"}},
		{"memory short", nodeFigures{memoryAvailable: 50 << 20, fsAvailable: 50, fsSize: 100}, map[corev1.NodeConditionType]string{
			corev1.NodeMemoryPressure: "True/KubeletHasInsufficientMemory"}},
		{"disk short", nodeFigures{memoryAvailable: 1 << 30, fsAvailable: 5, fsSize: 100}, map[corev1.NodeConditionType]string{
			corev1.NodeDiskPressure: "True/KubeletHasDiskPressure"}},
		{"runtime down", nodeFigures{memoryAvailable: 1 << 30, runtimeErr: "container runtime is down"}, map[corev1.NodeConditionType]string{
			corev1.NodeReady: "False/KubeletNotReady"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var st corev1.NodeStatus
			setNodeConditions(&st, nodeConditions(tc.f), t0)
			if len(st.Conditions) != 4 || st.Conditions[3].Type != corev1.NodeReady {
				t.Fatalf("conditions %v", st.Conditions)
			}
			for _, c := range st.Conditions {
				if want, ok := tc.want[c.Type]; ok && string(c.Status)+"/"+c.Reason != want {
					t.Errorf("%s = %s/%s, want %s", c.Type, c.Status, c.Reason, want)
				}
			}
		})
	}
	// A heartbeat alone is no change; the transition time holds.
	var st corev1.NodeStatus
	setNodeConditions(&st, nodeConditions(ok), t0)
	next := *st.DeepCopy()
	setNodeConditions(&next, nodeConditions(ok), t0.Add(10*time.Second))
	if nodeStatusChanged(&st, &next) {
		t.Error("a heartbeat counted as a change")
	}
	if !next.Conditions[3].LastTransitionTime.Equal(&metav1.Time{Time: t0}) {
		t.Errorf("transition time moved: %v", next.Conditions[3].LastTransitionTime)
	}
	setNodeConditions(&next, nodeConditions(nodeFigures{memoryAvailable: 1 << 30, runtimeErr: "down"}), t0.Add(20*time.Second))
	if !nodeStatusChanged(&st, &next) {
		t.Error("NotReady is no change?")
	}
}

func TestOSImage(t *testing.T) {
	if got := osImage("NAME=\"Debian\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n"); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("got %q", got)
	}
	if got := osImage(""); got != "Linux" {
		t.Errorf("got %q", got)
	}
}

func TestAdmitPod(t *testing.T) {
	alloc := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3"), corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	asking := func(cpu, mem string) *corev1.Pod {
		p := testPod(corev1.RestartPolicyAlways, "c")
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{}
		if cpu != "" {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return p
	}
	for _, tc := range []struct {
		name           string
		pod            *corev1.Pod
		admitted       []*corev1.Pod
		reason, prefix string
	}{
		{"fits", asking("1", "512Mi"), []*corev1.Pod{asking("500m", "")}, "", ""},
		{"pods full", asking("", ""), []*corev1.Pod{asking("", ""), asking("", ""), asking("", "")}, "OutOfpods",
			"Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{"cpu", asking("1500m", ""), []*corev1.Pod{asking("1", "")}, "OutOfcpu",
			"Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"},
		{"memory", asking("", "2Gi"), nil, "OutOfmemory", "Node didn't have enough resource: memory, requested: 2147483648"},
		{"best effort always fits but for the pod count", asking("", ""), []*corev1.Pod{asking("2", "1Gi")}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reason, msg := admitPod(tc.pod, tc.admitted, alloc)
			if reason != tc.reason || !strings.HasPrefix(msg, tc.prefix) {
				t.Errorf("got %q %q, want %q %q", reason, msg, tc.reason, tc.prefix)
			}
		})
	}
}
