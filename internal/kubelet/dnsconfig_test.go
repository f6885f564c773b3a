package kubelet

import (
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestBuildDNSConfig(t *testing.T) {
	host := parseResolvConf([]byte("# host\nnameserver 192.168.1.1\nnameserver 192.168.1.2 ; second\nsearch old.example\nsearch corp.example. home .\noptions edns0 attempts:2\noptions attempts:3\n"))
	pod := func(policy corev1.DNSPolicy, hostNet bool, dc *corev1.PodDNSConfig) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}, Spec: corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: dc}}
	}
	clusterDNS := []net.IP{net.ParseIP("10.96.0.10")}
	clusterSearch := []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "home"}
	var longSearches []string
	for i := range 40 {
		longSearches = append(longSearches, fmt.Sprintf("%s%02d.example", strings.Repeat("d", 60), i))
	}
	for _, tc := range []struct {
		name                      string
		pod                       *corev1.Pod
		cluster                   []net.IP
		servers, searches, option []string
	}{
		{"Default: the host's (last search line, no trailing dots, options merged)", pod(corev1.DNSDefault, false, nil), clusterDNS,
			[]string{"192.168.1.1", "192.168.1.2"}, []string{"corp.example", "home"}, []string{"edns0", "attempts:3"}},
		{"ClusterFirst with a cluster DNS", pod(corev1.DNSClusterFirst, false, nil), clusterDNS,
			[]string{"10.96.0.10"}, clusterSearch, []string{"ndots:5"}},
		{"no policy is ClusterFirst", pod("", false, nil), clusterDNS,
			[]string{"10.96.0.10"}, clusterSearch, []string{"ndots:5"}},
		{"ClusterFirst without a cluster DNS is Default", pod(corev1.DNSClusterFirst, false, nil), nil,
			[]string{"192.168.1.1", "192.168.1.2"}, []string{"corp.example", "home"}, []string{"edns0", "attempts:3"}},
		{"ClusterFirst on the host network is Default", pod(corev1.DNSClusterFirst, true, nil), clusterDNS,
			[]string{"192.168.1.1", "192.168.1.2"}, []string{"corp.example", "home"}, []string{"edns0", "attempts:3"}},
		{"ClusterFirstWithHostNet on the host network", pod(corev1.DNSClusterFirstWithHostNet, true, nil), clusterDNS,
			[]string{"10.96.0.10"}, clusterSearch, []string{"ndots:5"}},
		{"ClusterFirstWithHostNet off the host network", pod(corev1.DNSClusterFirstWithHostNet, false, nil), clusterDNS,
			[]string{"10.96.0.10"}, clusterSearch, []string{"ndots:5"}},
		{"None: only the pod's, an option replacing", pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "rotate"}, {Name: "ndots", Value: ptr.To("3")}}}), clusterDNS,
			[]string{"1.1.1.1"}, []string{"a.example"}, []string{"ndots:3", "rotate"}},
		{"None without dnsConfig: empty", pod(corev1.DNSNone, false, nil), clusterDNS, nil, nil, nil},
		{"ClusterFirst merged with the pod's", pod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "9.9.9.9"},
			Searches: []string{"home", "extra.example"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}, {Name: "edns0"}}}), clusterDNS,
			[]string{"10.96.0.10", "9.9.9.9"}, append(slices.Clone(clusterSearch), "extra.example"), []string{"ndots:1", "edns0"}},
		{"at most 3 nameservers", pod(corev1.DNSDefault, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8"}}), nil,
			[]string{"192.168.1.1", "192.168.1.2", "1.1.1.1"}, []string{"corp.example", "home"}, []string{"edns0", "attempts:3"}},
		{"at most 32 searches and 2048 characters", pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Searches: longSearches}), nil,
			nil, longSearches[:28], nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := buildDNSConfig(tc.pod, host, tc.cluster, "cluster.local")
			if !slices.Equal(c.Servers, tc.servers) || !slices.Equal(c.Searches, tc.searches) || !slices.Equal(c.Options, tc.option) {
				t.Errorf("got %v %v %v\nwant %v %v %v", c.Servers, c.Searches, c.Options, tc.servers, tc.searches, tc.option)
			}
			if n := len(strings.Join(c.Searches, " ")); n > maxDNSSearchChars {
				t.Errorf("search path of %d characters", n)
			}
		})
	}
}

func TestParseResolvConfBadInput(t *testing.T) {
	for _, in := range []string{"", "nameserver", "search\noptions\n", strings.Repeat("x", 1<<20), "\x00\xff nameserver 1.2.3.4"} {
		rc := parseResolvConf([]byte(in))
		if len(rc.servers) > 0 {
			t.Errorf("%.20q: servers %v", in, rc.servers)
		}
	}
}
