package endpointslice

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Builders for the pure tests: a Service "web" in "ns" and pods on nodes
// n0..n2 in zones z0..z2.

type podOpt func(*corev1.Pod)

func testPod(name, ip string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "n0", Containers: []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
	if ip != "" {
		p.Status.PodIP = ip
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func terminating(p *corev1.Pod) {
	p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1000, 0)}
}
func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func httpPort(n int32) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = n }
}
func noPorts(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil }
func extraIP(ip string) podOpt {
	return func(p *corev1.Pod) { p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip}) }
}

type svcOpt func(*corev1.Service)

func testService(opts ...svcOpt) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "svc-uid", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			Selector:   map[string]string{"app": "web"},
			ClusterIP:  "10.96.0.10",
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{
				Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http"),
			}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func headless(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }
func publishNotReady(s *corev1.Service) {
	s.Spec.PublishNotReadyAddresses = true
}
func families(f ...corev1.IPFamily) svcOpt { return func(s *corev1.Service) { s.Spec.IPFamilies = f } }

func testNodes(name string) *corev1.Node {
	var i int
	if _, err := fmt.Sscanf(name, "n%d", &i); err != nil {
		return nil
	}
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: fmt.Sprintf("z%d", i)}}}
}

func httpPorts(n int32) []discoveryv1.EndpointPort {
	return []discoveryv1.EndpointPort{{Name: new("http"), Port: new(n), Protocol: new(corev1.ProtocolTCP)}}
}

// ep is the endpoint the controller should write for a pod; conds is
// "ready serving terminating" as r/s/t letters present when true.
func ep(pod, ip, node, zone, conds string) discoveryv1.Endpoint {
	has := func(c rune) *bool {
		for _, x := range conds {
			if x == c {
				return new(true)
			}
		}
		return new(false)
	}
	e := discoveryv1.Endpoint{
		Addresses:  []string{ip},
		Conditions: discoveryv1.EndpointConditions{Ready: has('r'), Serving: has('s'), Terminating: has('t')},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: pod, UID: types.UID("uid-" + pod)},
		NodeName:   new(node),
	}
	if zone != "" {
		e.Zone = new(zone)
	}
	return e
}

func TestDesiredEndpoints(t *testing.T) {
	v4 := discoveryv1.AddressTypeIPv4
	v6 := discoveryv1.AddressTypeIPv6
	type group struct {
		ports     []discoveryv1.EndpointPort
		endpoints []discoveryv1.Endpoint
	}
	cases := []struct {
		name    string
		svc     *corev1.Service
		pods    []*corev1.Pod
		want    map[discoveryv1.AddressType][]group
		missing []string
	}{{
		name: "ready pods with zones",
		svc:  testService(),
		pods: []*corev1.Pod{testPod("b", "10.0.0.2", onNode("n1")), testPod("a", "10.0.0.1"), testPod("c", "10.0.0.3", onNode("n2"))},
		want: map[discoveryv1.AddressType][]group{v4: {{httpPorts(8080), []discoveryv1.Endpoint{
			ep("a", "10.0.0.1", "n0", "z0", "rs"), ep("b", "10.0.0.2", "n1", "z1", "rs"), ep("c", "10.0.0.3", "n2", "z2", "rs"),
		}}}},
	}, {
		name: "not ready, terminating, terminal, no IP",
		svc:  testService(),
		pods: []*corev1.Pod{
			testPod("a", "10.0.0.1", notReady),
			testPod("b", "10.0.0.2", terminating),
			testPod("c", "10.0.0.3", terminating, notReady),
			testPod("d", "10.0.0.4", phase(corev1.PodSucceeded)),
			testPod("e", "10.0.0.5", phase(corev1.PodFailed)),
			testPod("f", ""),
		},
		want: map[discoveryv1.AddressType][]group{v4: {{httpPorts(8080), []discoveryv1.Endpoint{
			ep("a", "10.0.0.1", "n0", "z0", ""), ep("b", "10.0.0.2", "n0", "z0", "st"), ep("c", "10.0.0.3", "n0", "z0", "t"),
		}}}},
	}, {
		name: "publishNotReadyAddresses makes every endpoint ready",
		svc:  testService(publishNotReady),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1", notReady), testPod("b", "10.0.0.2", terminating)},
		want: map[discoveryv1.AddressType][]group{v4: {{httpPorts(8080), []discoveryv1.Endpoint{
			ep("a", "10.0.0.1", "n0", "z0", "r"), ep("b", "10.0.0.2", "n0", "z0", "rst"),
		}}}},
	}, {
		name: "named targetPort resolved per pod; a pod without it gets no ports",
		svc:  testService(),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1"), testPod("b", "10.0.0.2", httpPort(9090)), testPod("c", "10.0.0.3", noPorts)},
		want: map[discoveryv1.AddressType][]group{v4: {
			{[]discoveryv1.EndpointPort{}, []discoveryv1.Endpoint{ep("c", "10.0.0.3", "n0", "z0", "rs")}},
			{httpPorts(8080), []discoveryv1.Endpoint{ep("a", "10.0.0.1", "n0", "z0", "rs")}},
			{httpPorts(9090), []discoveryv1.Endpoint{ep("b", "10.0.0.2", "n0", "z0", "rs")}},
		}},
	}, {
		name: "numeric targetPort",
		svc: testService(func(s *corev1.Service) {
			s.Spec.Ports[0].TargetPort = intstr.FromInt32(7000)
		}),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1", noPorts)},
		want: map[discoveryv1.AddressType][]group{v4: {{httpPorts(7000), []discoveryv1.Endpoint{ep("a", "10.0.0.1", "n0", "z0", "rs")}}}},
	}, {
		name:    "missing node: skipped and reported",
		svc:     testService(),
		pods:    []*corev1.Pod{testPod("a", "10.0.0.1", onNode("gone")), testPod("b", "10.0.0.2")},
		want:    map[discoveryv1.AddressType][]group{v4: {{httpPorts(8080), []discoveryv1.Endpoint{ep("b", "10.0.0.2", "n0", "z0", "rs")}}}},
		missing: []string{"a"},
	}, {
		name: "missing node with publishNotReadyAddresses: kept, no zone",
		svc:  testService(publishNotReady),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1", onNode("gone"))},
		want: map[discoveryv1.AddressType][]group{v4: {{httpPorts(8080), []discoveryv1.Endpoint{ep("a", "10.0.0.1", "gone", "", "rs")}}}},
	}, {
		name: "dual stack: one group per family",
		svc:  testService(families(corev1.IPv6Protocol, corev1.IPv4Protocol)),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1", extraIP("fd00::1"))},
		want: map[discoveryv1.AddressType][]group{
			v4: {{httpPorts(8080), []discoveryv1.Endpoint{ep("a", "10.0.0.1", "n0", "z0", "rs")}}},
			v6: {{httpPorts(8080), []discoveryv1.Endpoint{ep("a", "fd00::1", "n0", "z0", "rs")}}},
		},
	}, {
		name: "single-stack v6 service: a v4-only pod leaves an empty group",
		svc:  testService(families(corev1.IPv6Protocol)),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1")},
		want: map[discoveryv1.AddressType][]group{v6: {{httpPorts(8080), nil}}},
	}, {
		name: "headless without ports, hostname via subdomain",
		svc:  testService(headless, func(s *corev1.Service) { s.Spec.Ports = nil }),
		pods: []*corev1.Pod{
			testPod("a", "10.0.0.1", func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a-host", "web" }),
			testPod("b", "10.0.0.2", func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "b-host", "other" }),
		},
		want: map[discoveryv1.AddressType][]group{v4: {{[]discoveryv1.EndpointPort{}, []discoveryv1.Endpoint{
			func() discoveryv1.Endpoint {
				e := ep("a", "10.0.0.1", "n0", "z0", "rs")
				e.Hostname = new("a-host")
				return e
			}(),
			ep("b", "10.0.0.2", "n0", "z0", "rs"),
		}}}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, missing := desiredEndpoints(tc.svc, tc.pods, testNodes)
			gotGroups := map[discoveryv1.AddressType][]group{}
			for at, byKey := range got {
				for _, k := range slices.Sorted(maps.Keys(byKey)) {
					gotGroups[at] = append(gotGroups[at], group{byKey[k].ports, byKey[k].endpoints})
				}
			}
			if diff := cmp.Diff(tc.want, gotGroups, cmp.AllowUnexported(group{})); diff != "" {
				t.Errorf("groups (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.missing, missing); diff != "" {
				t.Errorf("missing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddressTypes(t *testing.T) {
	cases := []struct {
		name string
		svc  *corev1.Service
		want []discoveryv1.AddressType
	}{
		{"ipFamilies", testService(families(corev1.IPv6Protocol, corev1.IPv4Protocol)), []discoveryv1.AddressType{"IPv6", "IPv4"}},
		{"no families, v6 cluster IP", testService(families(), func(s *corev1.Service) { s.Spec.ClusterIP = "fd00::10" }), []discoveryv1.AddressType{"IPv6"}},
		{"no families, v4 cluster IP", testService(families()), []discoveryv1.AddressType{"IPv4"}},
		{"no families, headless: both", testService(families(), headless), []discoveryv1.AddressType{"IPv4", "IPv6"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, addressTypes(tc.svc)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
