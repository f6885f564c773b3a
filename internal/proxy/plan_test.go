package proxy

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

type ep struct {
	ip                          string
	node                        string
	ready, serving, terminating bool
}

func planSlice(port int32, proto corev1.Protocol, eps ...ep) *discoveryv1.EndpointSlice {
	sl := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "ns", Name: "s-1"},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("p"), Port: ptr.To(port), Protocol: ptr.To(proto)}},
	}
	for _, e := range eps {
		sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{Addresses: []string{e.ip}, NodeName: ptr.To(e.node),
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e.ready), Serving: ptr.To(e.serving), Terminating: ptr.To(e.terminating)}})
	}
	return sl
}

func planSvc(mut func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: "10.96.0.5", ClusterIPs: []string{"10.96.0.5"},
			Ports: []corev1.ServicePort{{Name: "p", Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if mut != nil {
		mut(s)
	}
	return s
}

func ready(ip, node string) ep { return ep{ip: ip, node: node, ready: true, serving: true} }

func TestPlanService(t *testing.T) {
	node := NodeInfo{Name: "a", ClusterCIDR: netip.MustParsePrefix("10.42.0.0/16")}
	id := "svc-" + chainID("ns/web:p/tcp")
	tests := []struct {
		name   string
		svc    *corev1.Service
		slices []*discoveryv1.EndpointSlice
		want   []string // lines the rendering must have
		absent []string // and must not
		none   bool     // no plan at all
	}{
		{
			name:   "cluster IP balances evenly",
			svc:    planSvc(nil),
			slices: []*discoveryv1.EndpointSlice{planSlice(8080, corev1.ProtocolTCP, ready("10.42.0.3", "a"), ready("10.42.1.2", "b"), ready("10.42.0.2", "a"))},
			want: []string{
				"chain " + id + " {",
				"numgen random mod 3 map @endpoints-",
				" . 0 : 10.42.0.2 . 8080 }",
				" . 1 : 10.42.0.3 . 8080 }",
				" . 2 : 10.42.1.2 . 8080 }",
				"element service-ips { 10.96.0.5 . tcp . 80 : goto " + id + " }",
			},
			absent: []string{"ext-", "no-endpoint"},
		},
		{
			name:   "no endpoints: rejected on the cluster IP and the node port",
			svc:    planSvc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort; s.Spec.Ports[0].NodePort = 30080 }),
			slices: []*discoveryv1.EndpointSlice{planSlice(8080, corev1.ProtocolTCP, ep{ip: "10.42.0.2", node: "a"})},
			want: []string{
				"element no-endpoint-services { 10.96.0.5 . tcp . 80 : goto reject-chain }",
				"element no-endpoint-nodeports { tcp . 30080 : goto reject-chain }",
			},
			absent: []string{"chain svc-", "service-ips"},
		},
		{
			name: "terminating but serving endpoints only when none is ready",
			svc:  planSvc(nil),
			slices: []*discoveryv1.EndpointSlice{planSlice(8080, corev1.ProtocolTCP,
				ep{ip: "10.42.0.2", node: "a", serving: true, terminating: true},
				ep{ip: "10.42.0.3", node: "a", terminating: true})},
			want:   []string{" . 0 : 10.42.0.2 . 8080 }", "mod 1 map"},
			absent: []string{"10.42.0.3"},
		},
		{
			name: "a ready endpoint wins over terminating ones",
			svc:  planSvc(nil),
			slices: []*discoveryv1.EndpointSlice{planSlice(8080, corev1.ProtocolTCP,
				ep{ip: "10.42.0.2", node: "a", serving: true, terminating: true}, ready("10.42.0.4", "b"))},
			want:   []string{" . 0 : 10.42.0.4 . 8080 }", "mod 1 map"},
			absent: []string{"10.42.0.2 "},
		},
		{
			name: "externalTrafficPolicy Local: node port to local endpoints, pods and node cluster-wide",
			svc: planSvc(func(s *corev1.Service) {
				s.Spec.Type = corev1.ServiceTypeLoadBalancer
				s.Spec.Ports[0].NodePort = 30081
				s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
				s.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.168.9.9"}, {IP: "bogus"}}
			}),
			slices: []*discoveryv1.EndpointSlice{planSlice(8080, corev1.ProtocolTCP, ready("10.42.0.2", "a"), ready("10.42.1.2", "b"))},
			want: []string{
				"\tmeta mark set mark & ~0x4000\n\tip saddr 10.42.0.0/16 goto " + id,
				"\tfib saddr type local jump mark-for-masquerade",
				"\tgoto svl-" + id[4:],
				"chain svl-" + id[4:] + " {\n\tdnat to " + fmt.Sprintf("%#x", chainKey("svl-"+id[4:])) + " . numgen random mod 1 map @endpoints-",
				"element service-nodeports { tcp . 30081 : goto ext-" + id[4:] + " }",
				"element service-ips { 192.168.9.9 . tcp . 80 : goto ext-" + id[4:] + " }",
			},
		},
		{
			name: "internalTrafficPolicy Local without local endpoints drops",
			svc: planSvc(func(s *corev1.Service) {
				s.Spec.InternalTrafficPolicy = ptr.To(corev1.ServiceInternalTrafficPolicyLocal)
			}),
			slices: []*discoveryv1.EndpointSlice{planSlice(8080, corev1.ProtocolTCP, ready("10.42.1.2", "b"))},
			want:   []string{"\tdrop"},
		},
		{
			name: "ClientIP affinity: a set per endpoint, checked first",
			svc: planSvc(func(s *corev1.Service) {
				s.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
				s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptr.To[int32](30)}}
			}),
			slices: []*discoveryv1.EndpointSlice{planSlice(8080, corev1.ProtocolTCP, ready("10.42.0.2", "a"))},
			want:   []string{"flags dynamic,timeout; timeout 30s }", "\tip saddr @aff-", "update @aff-", "dnat to 10.42.0.2:8080"},
		},
		{
			name: "bad addresses, IPv6 slices and unknown ports are skipped",
			svc:  planSvc(nil),
			slices: []*discoveryv1.EndpointSlice{
				planSlice(8080, corev1.ProtocolTCP, ep{ip: "nonsense", ready: true}, ep{ip: "::1", ready: true}, ready("10.42.0.9", "a")),
				func() *discoveryv1.EndpointSlice {
					s := planSlice(8080, corev1.ProtocolTCP, ready("fd00::1", "a"))
					s.AddressType = discoveryv1.AddressTypeIPv6
					return s
				}(),
				planSlice(70000, corev1.ProtocolTCP, ready("10.42.0.7", "a")),
			},
			want:   []string{" . 0 : 10.42.0.9 . 8080 }"},
			absent: []string{"nonsense", "fd00", "10.42.0.7", "::1"},
		},
		{name: "headless", svc: planSvc(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "None", []string{"None"} }), none: true},
		{name: "ExternalName", svc: planSvc(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }), none: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plans := PlanService(tt.svc, tt.slices, node)
			if tt.none {
				if len(plans) != 0 {
					t.Fatalf("got plans %v", plans)
				}
				return
			}
			if len(plans) != 1 {
				t.Fatalf("got %d plans", len(plans))
			}
			text := plans[0].String()
			for _, w := range tt.want {
				if !strings.Contains(text, w) {
					t.Errorf("missing %q in\n%s", w, text)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(text, a) {
					t.Errorf("unexpected %q in\n%s", a, text)
				}
			}
		})
	}
}

func TestPlanMultiplePortsAndProtocols(t *testing.T) {
	svc := planSvc(func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{
			{Name: "p", Port: 53, Protocol: corev1.ProtocolUDP},
			{Name: "q", Port: 53, Protocol: corev1.ProtocolTCP},
			{Name: "s", Port: 9, Protocol: corev1.ProtocolSCTP},
		}
	})
	sl := planSlice(5353, corev1.ProtocolUDP, ready("10.42.0.2", "a"))
	sl.Ports = append(sl.Ports, discoveryv1.EndpointPort{Name: ptr.To("q"), Port: ptr.To[int32](5354), Protocol: ptr.To(corev1.ProtocolTCP)})
	plans := PlanService(svc, []*discoveryv1.EndpointSlice{sl}, NodeInfo{Name: "a"})
	if len(plans) != 3 {
		t.Fatalf("got %d plans", len(plans))
	}
	for i, want := range []string{"10.96.0.5 . udp . 53", "10.96.0.5 . tcp . 53", "no-endpoint-services { 10.96.0.5 . sctp . 9"} {
		if !strings.Contains(plans[i].String(), want) {
			t.Errorf("plan %d lacks %q:\n%s", i, want, plans[i])
		}
	}
	if !strings.Contains(plans[1].String(), ": 10.42.0.2 . 5354 }") {
		t.Errorf("tcp port maps to its own target:\n%s", plans[1])
	}
}

func TestStaleUDP(t *testing.T) {
	a, b := netip.MustParseAddrPort("10.42.0.2:53"), netip.MustParseAddrPort("10.42.0.3:53")
	old := map[string][]PortPlan{"ns/dns": {{Key: "k", Proto: protoUDP, Endpoints: []netip.AddrPort{a, b}}}}
	f := staleUDP(old, map[string][]PortPlan{"ns/dns": {{Key: "k", Proto: protoUDP, Endpoints: []netip.AddrPort{b}}}})
	if !f.gone[a] || f.gone[b] || len(f.nowServed) != 0 {
		t.Errorf("gone %v served %v", f.gone, f.nowServed)
	}
	f = staleUDP(map[string][]PortPlan{}, map[string][]PortPlan{"ns/dns": {{Key: "k", Proto: protoUDP, Endpoints: []netip.AddrPort{b},
		ServiceIPs: []IPEntry{{IP: netip.MustParseAddr("10.96.0.10"), Proto: protoUDP, Port: 53}}}}})
	if !f.nowServed[netip.MustParseAddrPort("10.96.0.10:53")] {
		t.Errorf("a service gaining endpoints flushes its address: %v", f.nowServed)
	}
}
