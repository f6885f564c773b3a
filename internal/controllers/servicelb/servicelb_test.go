package servicelb

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func node(name string, ready bool, ips ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: st}}
	for _, ip := range ips {
		n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
	}
	return n
}

func TestIngress(t *testing.T) {
	excluded := node("x", true, "10.0.0.9")
	excluded.Labels[excludeLabel] = ""
	nodes := []*corev1.Node{node("b", true, "10.0.0.2", "fd00::2"), node("a", true, "10.0.0.1"), node("down", false, "10.0.0.3"), excluded}
	lb := func(mut func(*corev1.Service)) *corev1.Service {
		s := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol}}}
		if mut != nil {
			mut(s)
		}
		return s
	}
	tests := []struct {
		name string
		svc  *corev1.Service
		want []string
	}{
		{"ready nodes' IPv4 addresses, sorted", lb(nil), []string{"10.0.0.1", "10.0.0.2"}},
		{"dual stack", lb(func(s *corev1.Service) { s.Spec.IPFamilies = append(s.Spec.IPFamilies, corev1.IPv6Protocol) }), []string{"10.0.0.1", "10.0.0.2", "fd00::2"}},
		{"another class", lb(func(s *corev1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/lb") }), nil},
		{"not a load balancer", lb(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort }), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Ingress(tt.svc, nodes)
			var ips []string
			for _, g := range got {
				ips = append(ips, g.IP)
			}
			if len(ips) != len(tt.want) {
				t.Fatalf("got %v, want %v", ips, tt.want)
			}
			for i := range ips {
				if ips[i] != tt.want[i] {
					t.Fatalf("got %v, want %v", ips, tt.want)
				}
			}
		})
	}
}
