package netpolicy

import (
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

func pod(ns, name, ip string, lbl map[string]string, ports ...NamedPort) Pod {
	return Pod{Namespace: ns, Name: name, IP: netip.MustParseAddr(ip), Labels: lbl, Ports: ports}
}

func policy(ns, name string, sel map[string]string, mutate func(*networkingv1.NetworkPolicySpec)) *networkingv1.NetworkPolicy {
	p := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: sel}}}
	if mutate != nil {
		mutate(&p.Spec)
	}
	return p
}

func TestPlan(t *testing.T) {
	srv := pod("default", "srv", "10.42.0.20", map[string]string{"app": "srv"}, NamedPort{"http", 6, 8080}, NamedPort{"dns", 17, 53})
	a := pod("default", "a", "10.42.0.10", map[string]string{"role": "client"})
	b := pod("other", "b", "10.42.0.11", map[string]string{"role": "client"})
	c := pod("other", "c", "10.42.1.12", map[string]string{"role": "db"}, NamedPort{"pg", 6, 5432})
	pods := []Pod{srv, a, b, c}
	nss := map[string]labels.Set{"default": {"team": "x"}, "other": {"team": "y"}}
	tcp := corev1.ProtocolTCP
	cases := []struct {
		name   string
		pols   []*networkingv1.NetworkPolicy
		target Pod
		want   string // "" = no plan: not isolated
	}{
		{"no policy", nil, srv, ""},
		{"policy in another namespace", []*networkingv1.NetworkPolicy{policy("other", "deny", nil, nil)}, srv, ""},
		{"selector does not match", []*networkingv1.NetworkPolicy{policy("default", "deny", map[string]string{"app": "x"}, nil)}, srv, ""},
		{"default deny ingress", []*networkingv1.NetworkPolicy{policy("default", "deny", nil, nil)}, srv, "10.42.0.20 in[]"},
		{"default deny egress", []*networkingv1.NetworkPolicy{policy("default", "deny", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
		})}, srv, "10.42.0.20 out[]"},
		{"allow all ingress (empty rule)", []*networkingv1.NetworkPolicy{policy("default", "all", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{}}
		})}, srv, "10.42.0.20 in[any]"},
		{"podSelector: same namespace only", []*networkingv1.NetworkPolicy{policy("default", "p", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}}}}
		})}, srv, "10.42.0.20 in[10.42.0.10]"},
		{"namespaceSelector: all pods there", []*networkingv1.NetworkPolicy{policy("default", "p", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "y"}}}}}}
		})}, srv, "10.42.0.20 in[10.42.0.11,10.42.1.12]"},
		{"namespace and pod selector together", []*networkingv1.NetworkPolicy{policy("default", "p", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{}, PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "client"}}}}}}
		})}, srv, "10.42.0.20 in[10.42.0.10,10.42.0.11]"},
		{"ipBlock with except, ports with endPort and named", []*networkingv1.NetworkPolicy{policy("default", "p", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{
				From:  []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.42.0.0/16", Except: []string{"10.42.1.0/24"}}}},
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: ptr.To(intstr.FromInt32(9000)), EndPort: ptr.To[int32](9010)}, {Port: ptr.To(intstr.FromString("http"))}},
			}}
		})}, srv, "10.42.0.20 in[10.42.0.0/16 except 10.42.1.0/24 tcp/9000-9010 tcp/8080]"},
		{"a bad or IPv6 CIDR that got past validation allows nothing", []*networkingv1.NetworkPolicy{policy("default", "p", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/33"}}, {IPBlock: &networkingv1.IPBlock{CIDR: "fd00::/64"}}}}}
		})}, srv, "10.42.0.20 in[]"},
		{"named port the target lacks allows nothing", []*networkingv1.NetworkPolicy{policy("default", "p", nil, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("nope"))}}}}
		})}, srv, "10.42.0.20 in[]"},
		{"egress named port resolves on the peer", []*networkingv1.NetworkPolicy{policy("default", "p", map[string]string{"role": "client"}, func(s *networkingv1.NetworkPolicySpec) {
			s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
			s.Egress = []networkingv1.NetworkPolicyEgressRule{{
				To:    []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}},
				Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromString("pg"))}},
			}}
		})}, a, "10.42.0.10 out[10.42.1.12 tcp/5432]"},
		{"two policies add up", []*networkingv1.NetworkPolicy{
			policy("default", "deny", nil, func(s *networkingv1.NetworkPolicySpec) {
				s.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}
			}),
			policy("default", "web", map[string]string{"app": "srv"}, func(s *networkingv1.NetworkPolicySpec) {
				s.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: []networkingv1.NetworkPolicyPort{{Port: ptr.To(intstr.FromInt32(80))}}}}
			}),
		}, srv, "10.42.0.20 in[any tcp/80] out[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Plan(State{Policies: tc.pols, Pods: pods, Namespaces: nss}, []Pod{tc.target})
			var s []string
			for _, p := range got {
				s = append(s, p.String())
			}
			if strings.Join(s, "\n") != tc.want {
				t.Errorf("plan:\n got %q\nwant %q", strings.Join(s, "\n"), tc.want)
			}
		})
	}
}

func TestMergeRanges(t *testing.T) {
	pf := func(ss ...string) []netip.Prefix {
		var out []netip.Prefix
		for _, s := range ss {
			out = append(out, netip.MustParsePrefix(s))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		in   []netip.Prefix
		want int
	}{
		{"overlapping", pf("10.0.0.0/8", "10.1.0.0/16"), 1},
		{"adjacent", pf("10.0.0.0/32", "10.0.0.1/32"), 1},
		{"apart", pf("10.0.0.0/32", "10.0.0.2/32"), 2},
		{"everything", pf("0.0.0.0/0", "1.2.3.4/32"), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mergeRanges(tc.in); len(got) != tc.want {
				t.Errorf("%v → %v, want %d ranges", tc.in, got, tc.want)
			}
		})
	}
}

func TestPodFromAPI(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "d"}, Status: corev1.PodStatus{PodIP: "10.0.0.1"}}
	if _, ok := PodFromAPI(p); !ok {
		t.Error("a pod with an IP is taken")
	}
	p.Spec.HostNetwork = true
	if _, ok := PodFromAPI(p); ok {
		t.Error("host-network pods are not fenced or matched")
	}
	p.Spec.HostNetwork, p.Status.PodIP = false, "bogus"
	if _, ok := PodFromAPI(p); ok {
		t.Error("a bad IP is ignored")
	}
}

// BenchmarkPlan: 100 fenced pods of a 5,000-pod cluster under 20
// policies with selector peers.
func BenchmarkPlan(b *testing.B) {
	var pods []Pod
	for i := range 5000 {
		pods = append(pods, pod("ns"+string(rune('a'+i%10)), "p", netip.AddrFrom4([4]byte{10, 42, byte(i >> 8), byte(i)}).String(),
			map[string]string{"app": string(rune('a' + i%20)), "tier": string(rune('a' + i%3))}))
	}
	nss := map[string]labels.Set{}
	for i := range 10 {
		nss["ns"+string(rune('a'+i))] = labels.Set{"team": string(rune('a' + i%2))}
	}
	var pols []*networkingv1.NetworkPolicy
	for i := range 20 {
		pols = append(pols, policy("nsa", "p"+string(rune('a'+i)), map[string]string{"app": string(rune('a' + i))}, func(s *networkingv1.NetworkPolicySpec) {
			s.Ingress = []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
				{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "a"}}},
				{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "b"}}},
			}}}
		}))
	}
	var targets []Pod
	for _, p := range pods {
		if p.Namespace == "nsa" && len(targets) < 100 {
			targets = append(targets, p)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if len(Plan(State{Policies: pols, Pods: pods, Namespaces: nss}, targets)) == 0 {
			b.Fatal("no plans")
		}
	}
}
