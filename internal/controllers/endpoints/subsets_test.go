package endpoints

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

type podOpt func(*corev1.Pod)

func testPod(name, ip string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: corev1.PodSpec{NodeName: "n0", Containers: []corev1.Container{{Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "metrics", ContainerPort: 9100, Protocol: corev1.ProtocolTCP},
		}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if ip != "" {
		p.Status.PodIP, p.Status.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func notReady(p *corev1.Pod)    { p.Status.Conditions[0].Status = corev1.ConditionFalse }
func terminating(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }
func httpOn(n int32) podOpt {
	return func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = n }
}
func noHTTP(p *corev1.Pod)    { p.Spec.Containers[0].Ports = p.Spec.Containers[0].Ports[1:] }
func noMetrics(p *corev1.Pod) { p.Spec.Containers[0].Ports = p.Spec.Containers[0].Ports[:1] }

type svcOpt func(*corev1.Service)

func testService(opts ...svcOpt) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.10", IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("http")}},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func withMetrics(s *corev1.Service) {
	s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9100, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("metrics")})
}
func publish(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }

func addr(pod, ip string) corev1.EndpointAddress {
	return corev1.EndpointAddress{IP: ip, NodeName: new("n0"), TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: pod, UID: types.UID("uid-" + pod)}}
}

func port(name string, n int32) corev1.EndpointPort {
	return corev1.EndpointPort{Name: name, Port: n, Protocol: corev1.ProtocolTCP}
}

func addrs(a ...corev1.EndpointAddress) []corev1.EndpointAddress { return a }
func ports(p ...corev1.EndpointPort) []corev1.EndpointPort       { return p }

func TestDesiredSubsets(t *testing.T) {
	cases := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want []corev1.EndpointSubset
	}{{
		name: "ready pods: one subset, sorted by IP",
		svc:  testService(),
		pods: []*corev1.Pod{testPod("c", "10.0.0.3"), testPod("a", "10.0.0.1"), testPod("b", "10.0.0.2")},
		want: []corev1.EndpointSubset{{Addresses: addrs(addr("a", "10.0.0.1"), addr("b", "10.0.0.2"), addr("c", "10.0.0.3")), Ports: ports(port("http", 8080))}},
	}, {
		name: "not ready pods are notReadyAddresses; terminating, finished and IP-less pods are out",
		svc:  testService(),
		pods: []*corev1.Pod{
			testPod("a", "10.0.0.1"), testPod("b", "10.0.0.2", notReady), testPod("c", "10.0.0.3", terminating),
			testPod("d", "10.0.0.4", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), testPod("e", ""),
		},
		want: []corev1.EndpointSubset{{Addresses: addrs(addr("a", "10.0.0.1")), NotReadyAddresses: addrs(addr("b", "10.0.0.2")), Ports: ports(port("http", 8080))}},
	}, {
		name: "publishNotReadyAddresses: everyone ready, terminating too",
		svc:  testService(publish),
		pods: []*corev1.Pod{testPod("b", "10.0.0.2", notReady), testPod("c", "10.0.0.3", terminating)},
		want: []corev1.EndpointSubset{{Addresses: addrs(addr("b", "10.0.0.2"), addr("c", "10.0.0.3")), Ports: ports(port("http", 8080))}},
	}, {
		name: "named targetPort per pod: a subset per number, pods without it left out",
		svc:  testService(),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1"), testPod("b", "10.0.0.2", httpOn(9090)), testPod("c", "10.0.0.3", noHTTP)},
		want: []corev1.EndpointSubset{
			{Addresses: addrs(addr("a", "10.0.0.1")), Ports: ports(port("http", 8080))},
			{Addresses: addrs(addr("b", "10.0.0.2")), Ports: ports(port("http", 9090))},
		},
	}, {
		name: "two ports on the same pods share a subset",
		svc:  testService(withMetrics),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1"), testPod("b", "10.0.0.2")},
		want: []corev1.EndpointSubset{{Addresses: addrs(addr("a", "10.0.0.1"), addr("b", "10.0.0.2")), Ports: ports(port("http", 8080), port("metrics", 9100))}},
	}, {
		name: "a pod lacking one port splits the subsets",
		svc:  testService(withMetrics),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1"), testPod("b", "10.0.0.2", noMetrics)},
		want: []corev1.EndpointSubset{
			{Addresses: addrs(addr("a", "10.0.0.1"), addr("b", "10.0.0.2")), Ports: ports(port("http", 8080))},
			{Addresses: addrs(addr("a", "10.0.0.1")), Ports: ports(port("metrics", 9100))},
		},
	}, {
		name: "headless without ports: addresses without ports",
		svc:  testService(func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.Ports = corev1.ClusterIPNone, nil }),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1"), testPod("b", "10.0.0.2", notReady)},
		want: []corev1.EndpointSubset{{Addresses: addrs(addr("a", "10.0.0.1")), NotReadyAddresses: addrs(addr("b", "10.0.0.2"))}},
	}, {
		name: "hostname when the pod's subdomain is the Service",
		svc:  testService(),
		pods: []*corev1.Pod{testPod("a", "10.0.0.1", func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a0", "web" })},
		want: []corev1.EndpointSubset{{Addresses: addrs(func() corev1.EndpointAddress { a := addr("a", "10.0.0.1"); a.Hostname = "a0"; return a }()), Ports: ports(port("http", 8080))}},
	}, {
		name: "the Service's first family picks the address; pods without one are out",
		svc: testService(func(s *corev1.Service) {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
		}),
		pods: []*corev1.Pod{
			testPod("a", "10.0.0.1", func(p *corev1.Pod) { p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: "fd00::1"}) }),
			testPod("b", "10.0.0.2"),
		},
		want: []corev1.EndpointSubset{{Addresses: addrs(addr("a", "fd00::1")), Ports: ports(port("http", 8080))}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := desiredSubsets(tc.svc, tc.pods)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRepackSubsets(t *testing.T) {
	a, b := addr("a", "10.0.0.1"), addr("b", "10.0.0.2")
	cases := []struct {
		name string
		in   []corev1.EndpointSubset
		want []corev1.EndpointSubset
	}{{
		name: "ready and not ready for one port: not ready wins",
		in: []corev1.EndpointSubset{
			{Addresses: addrs(a), Ports: ports(port("http", 80))},
			{NotReadyAddresses: addrs(a), Ports: ports(port("http", 80))},
		},
		want: []corev1.EndpointSubset{{NotReadyAddresses: addrs(a), Ports: ports(port("http", 80))}},
	}, {
		name: "same address twice is listed once",
		in: []corev1.EndpointSubset{
			{Addresses: addrs(b, a), Ports: ports(port("http", 80))},
			{Addresses: addrs(a), Ports: ports(port("http", 80))},
		},
		want: []corev1.EndpointSubset{{Addresses: addrs(a, b), Ports: ports(port("http", 80))}},
	}, {
		name: "order of input does not matter",
		in: []corev1.EndpointSubset{
			{Addresses: addrs(b), Ports: ports(port("z", 2), port("a", 1))},
			{Addresses: addrs(a), Ports: ports(port("a", 1))},
		},
		want: []corev1.EndpointSubset{
			{Addresses: addrs(a, b), Ports: ports(port("a", 1))},
			{Addresses: addrs(b), Ports: ports(port("z", 2))},
		},
	}, {
		name: "one IP, two pods: both kept",
		in: []corev1.EndpointSubset{{Addresses: addrs(a, func() corev1.EndpointAddress {
			x := addr("host", "10.0.0.1")
			return x
		}()), Ports: ports(port("http", 80))}},
		want: []corev1.EndpointSubset{{Addresses: addrs(a, addr("host", "10.0.0.1")), Ports: ports(port("http", 80))}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, repackSubsets(tc.in), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func many(prefix string, n int) []corev1.EndpointAddress {
	out := make([]corev1.EndpointAddress, n)
	for i := range out {
		out[i] = addr(fmt.Sprintf("%s%d", prefix, i), fmt.Sprintf("10.%d.%d.%d", len(prefix), i/250, i%250))
	}
	return out
}

func TestTruncate(t *testing.T) {
	type counts struct{ ready, notReady []int }
	cases := []struct {
		name      string
		in        []corev1.EndpointSubset
		truncated bool
		want      counts
	}{{
		name: "at capacity: untouched",
		in:   []corev1.EndpointSubset{{Addresses: many("a", 600), NotReadyAddresses: many("b", 400)}},
		want: counts{[]int{600}, []int{400}},
	}, {
		name:      "not-ready addresses go first",
		in:        []corev1.EndpointSubset{{Addresses: many("a", 900), NotReadyAddresses: many("b", 300)}},
		truncated: true,
		want:      counts{[]int{900}, []int{100}},
	}, {
		name: "ready addresses shared in proportion",
		in: []corev1.EndpointSubset{
			{Addresses: many("a", 800), NotReadyAddresses: many("b", 10)},
			{Addresses: many("cc", 400)},
		},
		truncated: true,
		want:      counts{[]int{667, 333}, []int{0, 0}},
	}, {
		name: "a subset left empty is dropped",
		in: []corev1.EndpointSubset{
			{Addresses: many("a", 1200)},
			{NotReadyAddresses: many("b", 5)},
		},
		truncated: true,
		want:      counts{[]int{1000}, []int{0}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, truncated := truncate(tc.in)
			if truncated != tc.truncated {
				t.Errorf("truncated = %v, want %v", truncated, tc.truncated)
			}
			var got counts
			for _, ss := range out {
				got.ready = append(got.ready, len(ss.Addresses))
				got.notReady = append(got.notReady, len(ss.NotReadyAddresses))
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(counts{})); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if r, n := countAddresses(out); r+n > MaxAddresses {
				t.Errorf("%d addresses after truncation", r+n)
			}
		})
	}
}

func TestSameSubsetsIgnoresPodResourceVersion(t *testing.T) {
	a := []corev1.EndpointSubset{{Addresses: addrs(addr("a", "10.0.0.1")), Ports: ports(port("http", 80))}}
	b := []corev1.EndpointSubset{{Addresses: addrs(addr("a", "10.0.0.1")), Ports: ports(port("http", 80))}}
	b[0].Addresses[0].TargetRef.ResourceVersion = "42"
	if !sameSubsets(a, b) {
		t.Error("subsets differing only in a pod's resourceVersion compare unequal")
	}
	b[0].Addresses[0].IP = "10.0.0.2"
	if sameSubsets(a, b) {
		t.Error("subsets with different IPs compare equal")
	}
}
