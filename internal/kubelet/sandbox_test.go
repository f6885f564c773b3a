package kubelet

import (
	"net"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestBuildDNSConfig(t *testing.T) {
	host := parseResolvConf([]byte("# host\nnameserver 192.168.1.1\nnameserver 192.168.1.2 ; second\nsearch corp.example home\noptions edns0\n"))
	pod := func(policy corev1.DNSPolicy, hostNet bool, dc *corev1.PodDNSConfig) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}, Spec: corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: dc}}
	}
	for _, tc := range []struct {
		name                      string
		pod                       *corev1.Pod
		cluster                   []net.IP
		servers, searches, option []string
	}{
		{"Default: the host's", pod(corev1.DNSDefault, false, nil), nil,
			[]string{"192.168.1.1", "192.168.1.2"}, []string{"corp.example", "home"}, []string{"edns0"}},
		{"ClusterFirst without a cluster DNS: the host's servers, the cluster's search path", pod(corev1.DNSClusterFirst, false, nil), nil,
			[]string{"192.168.1.1", "192.168.1.2"}, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "home"}, []string{"ndots:5"}},
		{"ClusterFirst with a cluster DNS", pod("", false, nil), []net.IP{net.ParseIP("10.96.0.10")},
			[]string{"10.96.0.10"}, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "home"}, []string{"ndots:5"}},
		{"ClusterFirst on the host network is Default", pod(corev1.DNSClusterFirst, true, nil), []net.IP{net.ParseIP("10.96.0.10")},
			[]string{"192.168.1.1", "192.168.1.2"}, []string{"corp.example", "home"}, []string{"edns0"}},
		{"None: only the pod's, an option replacing", pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "rotate"}}}), nil,
			[]string{"1.1.1.1"}, []string{"a.example"}, []string{"ndots:2", "rotate"}},
		{"ClusterFirst merged with the pod's options", pod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}}}), nil,
			[]string{"192.168.1.1", "192.168.1.2"}, []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "home"}, []string{"ndots:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := buildDNSConfig(tc.pod, host, tc.cluster, "cluster.local")
			if !slices.Equal(c.Servers, tc.servers) || !slices.Equal(c.Searches, tc.searches) || !slices.Equal(c.Options, tc.option) {
				t.Errorf("got %v %v %v\nwant %v %v %v", c.Servers, c.Searches, c.Options, tc.servers, tc.searches, tc.option)
			}
		})
	}
}

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
