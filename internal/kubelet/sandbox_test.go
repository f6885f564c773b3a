package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSandboxBits(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a-very-long-pod-name-that-goes-on-and-on-and-on-well-past-sixty-three-chars", UID: "u1"}}
	if h := podHostname(p); len(h) > 63 {
		t.Errorf("hostname %q longer than 63", h)
	}
	p.Spec.Hostname = "custom"
	if h := podHostname(p); h != "custom" {
		t.Errorf("hostname %q", h)
	}
	for _, tc := range []struct {
		qos  corev1.PodQOSClass
		want string
	}{
		{corev1.PodQOSGuaranteed, "/kubepods/podu1"},
		{corev1.PodQOSBurstable, "/kubepods/burstable/podu1"},
		{corev1.PodQOSBestEffort, "/kubepods/besteffort/podu1"},
	} {
		p.Status.QOSClass = tc.qos
		if got := podCgroupParent("/", p); got != tc.want {
			t.Errorf("%s: cgroup parent %q, want %q", tc.qos, got, tc.want)
		}
	}
	p.Status.QOSClass = corev1.PodQOSBestEffort
	if got := podCgroupParent("/rudder/node-1", p); got != "/rudder/node-1/kubepods/besteffort/podu1" {
		t.Errorf("cgroup parent under a root: %q", got)
	}
	p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.ShareProcessNamespace = true, false, ptr.To(true)
	ns := namespaceOptions(p)
	if ns.Network.String() != "NODE" || ns.Pid.String() != "POD" || ns.Ipc.String() != "POD" {
		t.Errorf("namespaces %v", ns)
	}
}
