package netpolicy

import (
	"fmt"
	"math"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Pod is what the planner keeps of a pod: enough to match it as a peer
// (IP, namespace, labels) and, for this node's pods, to resolve named
// ports. Memory stays proportional to the pods, not to their specs.
type Pod struct {
	Namespace, Name string
	IP              netip.Addr
	Labels          map[string]string
	// Ports are the pod's named container ports (name → proto/port).
	Ports []NamedPort
}

// NamedPort is one named container port.
type NamedPort struct {
	Name  string
	Proto uint8
	Port  uint16
}

// PodFromAPI reduces a pod to what planning needs; ok is false for pods
// that take no part (no IPv4 address yet, host network, finished).
func PodFromAPI(p *corev1.Pod) (Pod, bool) {
	if p.Spec.HostNetwork || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed || p.DeletionTimestamp != nil && p.Status.PodIP == "" {
		return Pod{}, false
	}
	ip, err := netip.ParseAddr(p.Status.PodIP)
	if err != nil || !ip.Is4() {
		return Pod{}, false
	}
	out := Pod{Namespace: p.Namespace, Name: p.Name, IP: ip, Labels: p.Labels}
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			if cp.Name == "" || cp.ContainerPort <= 0 || cp.ContainerPort > math.MaxUint16 {
				continue
			}
			out.Ports = append(out.Ports, NamedPort{Name: cp.Name, Proto: protoNum(cp.Protocol), Port: uint16(cp.ContainerPort)})
		}
	}
	return out, true
}

// PortRange is a protocol's destination ports First..Last (inclusive).
type PortRange struct {
	Proto       uint8
	First, Last uint16
}

// Allow is one way in (or out): traffic whose peer address is in Peers
// and not in Except, to one of Ports, passes. AnyPeer: any address;
// no Ports: any port and protocol.
type Allow struct {
	AnyPeer bool
	Peers   []netip.Prefix
	Except  []netip.Prefix
	Ports   []PortRange
}

// PodPlan is what one of this node's pods may receive and send. A
// direction that is not isolated lets everything through; an isolated
// one with no Allows lets nothing through (default deny).
type PodPlan struct {
	IP              netip.Addr
	IngressIsolated bool
	EgressIsolated  bool
	Ingress, Egress []Allow
}

// State is the cluster as the planner sees it.
type State struct {
	Policies   []*networkingv1.NetworkPolicy
	Pods       []Pod                 // every pod of the cluster with an IP
	Namespaces map[string]labels.Set // namespace → its labels
}

// Plan computes the plans of the targets (this node's pods): pure, the
// same input gives the same output. Pods no policy selects get no plan.
func Plan(state State, targets []Pod) []PodPlan {
	st := &planner{State: state, peers: map[*networkingv1.NetworkPolicyPeer][]Pod{}}
	var out []PodPlan
	for _, t := range targets {
		pp := PodPlan{IP: t.IP}
		for _, pol := range st.Policies {
			if pol.Namespace != t.Namespace {
				continue
			}
			sel, err := metav1.LabelSelectorAsSelector(&pol.Spec.PodSelector)
			if err != nil || !sel.Matches(labels.Set(t.Labels)) {
				continue
			}
			ing, eg := policyTypes(pol)
			if ing {
				pp.IngressIsolated = true
				for _, r := range pol.Spec.Ingress {
					pp.Ingress = append(pp.Ingress, st.allows(pol.Namespace, r.From, r.Ports, &t, false)...)
				}
			}
			if eg {
				pp.EgressIsolated = true
				for _, r := range pol.Spec.Egress {
					pp.Egress = append(pp.Egress, st.allows(pol.Namespace, r.To, r.Ports, &t, true)...)
				}
			}
		}
		if pp.IngressIsolated || pp.EgressIsolated {
			out = append(out, pp)
		}
	}
	slices.SortStableFunc(out, func(a, b PodPlan) int { return a.IP.Compare(b.IP) })
	// Two pods claiming one address (a finished pod's IP reused before
	// its object is gone): the first keeps it, as the kernel's map can
	// send an address to one chain only.
	return slices.CompactFunc(out, func(a, b PodPlan) bool { return a.IP == b.IP })
}

// policyTypes: as upstream, no policyTypes means Ingress, plus Egress
// when the policy has egress rules.
func policyTypes(p *networkingv1.NetworkPolicy) (ingress, egress bool) {
	if len(p.Spec.PolicyTypes) == 0 {
		return true, len(p.Spec.Egress) > 0
	}
	for _, t := range p.Spec.PolicyTypes {
		switch t {
		case networkingv1.PolicyTypeIngress:
			ingress = true
		case networkingv1.PolicyTypeEgress:
			egress = true
		}
	}
	return ingress, egress
}

// allows turns one rule (peers + ports) into Allows. Named ports
// resolve against the target pod for ingress and against each peer pod
// for egress (an egress named port to an ipBlock matches nothing).
// planner memoizes each peer's pods for one Plan call: every fenced pod
// a policy selects shares its peers, and matching them is a walk over
// all the cluster's pods.
type planner struct {
	State
	peers map[*networkingv1.NetworkPolicyPeer][]Pod
}

func (st *planner) allows(ns string, peers []networkingv1.NetworkPolicyPeer, ports []networkingv1.NetworkPolicyPort, target *Pod, egress bool) []Allow {
	numeric, named := splitPorts(ports)
	var out []Allow
	add := func(a Allow) {
		if len(ports) > 0 && len(a.Ports) == 0 {
			return // only named ports, none resolved: nothing allowed
		}
		out = append(out, a)
	}
	if !egress {
		rs := append(slices.Clone(numeric), resolve(named, target)...)
		if len(peers) == 0 {
			add(Allow{AnyPeer: true, Ports: rs})
			return out
		}
		var podIPs []netip.Prefix
		for i := range peers {
			peer := &peers[i]
			if peer.IPBlock != nil {
				if a, ok := ipBlock(peer.IPBlock); ok {
					a.Ports = rs
					add(a)
				}
				continue
			}
			for _, p := range st.peerPods(ns, peer) {
				podIPs = append(podIPs, netip.PrefixFrom(p.IP, 32))
			}
		}
		if len(podIPs) > 0 {
			add(Allow{Peers: podIPs, Ports: rs})
		}
		return out
	}
	if len(peers) == 0 {
		if len(named) == 0 {
			add(Allow{AnyPeer: true, Ports: numeric})
			return out
		}
		// A named port to any destination: resolve on every pod.
		peers = []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{}}}
		if len(numeric) > 0 {
			add(Allow{AnyPeer: true, Ports: numeric})
		}
		numeric = nil
	}
	var plain []netip.Prefix
	for i := range peers {
		peer := &peers[i]
		if peer.IPBlock != nil {
			if len(numeric) > 0 || len(ports) == 0 {
				if a, ok := ipBlock(peer.IPBlock); ok {
					a.Ports = numeric
					add(a)
				}
			}
			continue
		}
		for _, p := range st.peerPods(ns, peer) {
			pf := netip.PrefixFrom(p.IP, 32)
			if len(named) == 0 {
				plain = append(plain, pf)
				continue
			}
			rs := append(slices.Clone(numeric), resolve(named, &p)...)
			add(Allow{Peers: []netip.Prefix{pf}, Ports: rs})
		}
	}
	if len(plain) > 0 {
		add(Allow{Peers: plain, Ports: numeric})
	}
	return out
}

func ipBlock(b *networkingv1.IPBlock) (Allow, bool) {
	pf, err := netip.ParsePrefix(b.CIDR)
	if err != nil || !pf.Addr().Is4() {
		return Allow{}, false // refused by validation; IPv6 not enforced
	}
	a := Allow{Peers: []netip.Prefix{pf.Masked()}}
	for _, e := range b.Except {
		if ex, err := netip.ParsePrefix(e); err == nil && ex.Addr().Is4() {
			a.Except = append(a.Except, ex.Masked())
		}
	}
	return a, true
}

// peerPods are the pods a podSelector/namespaceSelector peer selects.
func (st *planner) peerPods(ns string, peer *networkingv1.NetworkPolicyPeer) []Pod {
	if pods, ok := st.peers[peer]; ok {
		return pods
	}
	pods := st.matchPeer(ns, peer)
	st.peers[peer] = pods
	return pods
}

func (st *planner) matchPeer(ns string, peer *networkingv1.NetworkPolicyPeer) []Pod {
	podSel := labels.Everything()
	if peer.PodSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(peer.PodSelector)
		if err != nil {
			return nil
		}
		podSel = s
	}
	var nsSel labels.Selector
	if peer.NamespaceSelector != nil {
		s, err := metav1.LabelSelectorAsSelector(peer.NamespaceSelector)
		if err != nil {
			return nil
		}
		nsSel = s
	}
	var out []Pod
	for _, p := range st.Pods {
		if nsSel == nil {
			if p.Namespace != ns {
				continue
			}
		} else if !nsSel.Matches(st.Namespaces[p.Namespace]) {
			continue
		}
		if podSel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	return out
}

type namedPort struct {
	name  string
	proto uint8
}

func splitPorts(ports []networkingv1.NetworkPolicyPort) (numeric []PortRange, named []namedPort) {
	for _, p := range ports {
		proto := uint8(6)
		if p.Protocol != nil {
			proto = protoNum(*p.Protocol)
		}
		switch {
		case p.Port == nil:
			numeric = append(numeric, PortRange{Proto: proto, First: 0, Last: math.MaxUint16})
		case p.Port.Type == intstr.String:
			named = append(named, namedPort{p.Port.StrVal, proto})
		default:
			first := p.Port.IntVal
			last := first
			if p.EndPort != nil && *p.EndPort >= first {
				last = *p.EndPort
			}
			if first < 0 || last > math.MaxUint16 {
				continue
			}
			numeric = append(numeric, PortRange{Proto: proto, First: uint16(first), Last: uint16(last)})
		}
	}
	return numeric, named
}

func resolve(named []namedPort, p *Pod) []PortRange {
	var out []PortRange
	for _, n := range named {
		for _, cp := range p.Ports {
			if cp.Name == n.name && cp.Proto == n.proto {
				out = append(out, PortRange{Proto: cp.Proto, First: cp.Port, Last: cp.Port})
			}
		}
	}
	return out
}

func protoNum(p corev1.Protocol) uint8 {
	switch p {
	case corev1.ProtocolUDP:
		return 17
	case corev1.ProtocolSCTP:
		return 132
	}
	return 6
}

// String is the plan's text form, for tests and logs.
func (pp PodPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s", pp.IP)
	dir := func(name string, iso bool, as []Allow) {
		if !iso {
			return
		}
		fmt.Fprintf(&b, " %s[", name)
		for i, a := range as {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString(a.String())
		}
		b.WriteString("]")
	}
	dir("in", pp.IngressIsolated, pp.Ingress)
	dir("out", pp.EgressIsolated, pp.Egress)
	return b.String()
}

func (a Allow) String() string {
	var parts []string
	if a.AnyPeer {
		parts = append(parts, "any")
	} else {
		var ps []string
		for _, p := range a.Peers {
			if p.Bits() == 32 {
				ps = append(ps, p.Addr().String())
			} else {
				ps = append(ps, p.String())
			}
		}
		parts = append(parts, strings.Join(ps, ","))
	}
	if len(a.Except) > 0 {
		var es []string
		for _, e := range a.Except {
			es = append(es, e.String())
		}
		parts = append(parts, "except "+strings.Join(es, ","))
	}
	for _, r := range a.Ports {
		name := map[uint8]string{6: "tcp", 17: "udp", 132: "sctp"}[r.Proto]
		switch {
		case r.First == 0 && r.Last == math.MaxUint16:
			parts = append(parts, name)
		case r.First == r.Last:
			parts = append(parts, fmt.Sprintf("%s/%d", name, r.First))
		default:
			parts = append(parts, fmt.Sprintf("%s/%d-%d", name, r.First, r.Last))
		}
	}
	return strings.Join(parts, " ")
}
