package proxy

import (
	"encoding/base32"
	"fmt"
	"hash/fnv"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// Protocol numbers as the kernel matches them (meta l4proto).
const (
	protoTCP  uint8 = 6
	protoUDP  uint8 = 17
	protoSCTP uint8 = 132
)

func protoNumber(p corev1.Protocol) (uint8, bool) {
	switch p {
	case corev1.ProtocolTCP, "":
		return protoTCP, true
	case corev1.ProtocolUDP:
		return protoUDP, true
	case corev1.ProtocolSCTP:
		return protoSCTP, true
	}
	return 0, false
}

func protoName(p uint8) string {
	switch p {
	case protoTCP:
		return "tcp"
	case protoUDP:
		return "udp"
	case protoSCTP:
		return "sctp"
	}
	return fmt.Sprint(p)
}

// NodeInfo is what planning needs to know about the node it runs on.
type NodeInfo struct {
	Name string
	// NodePortIPs are the addresses NodePorts answer on.
	NodePortIPs []netip.Addr
	// ClusterCIDR is the pods' range; traffic to a ClusterIP from outside
	// it is masqueraded, and Local external policy keeps cluster-wide
	// balancing for traffic from inside it. Invalid prefix = unknown.
	ClusterCIDR netip.Prefix
}

// Rule is one nftables rule, as data: matches first, then statements.
// Its String is the nft syntax the doc shows; the kernel form is built
// from the same fields (render.go).
type Rule struct {
	SrcNotIn    netip.Prefix // ip saddr != prefix
	SrcIn       netip.Prefix // ip saddr prefix
	FibSrcLocal bool         // fib saddr type local
	SrcInSet    string       // ip saddr @set
	Numgen      uint32       // numgen random mod N == 0 (0: none)
	UpdateSet   string       // update @set { ip saddr }
	ClearMark   bool         // meta mark set mark & ~0x4000
	Jump        string       // jump chain
	Goto        string       // goto chain
	DNAT        netip.AddrPort
	// DNATMap, when not 0, is "dnat to <DNATMap> . numgen random mod
	// Modulus map @endpoints": the endpoint is looked up in the shared
	// endpoints map, under this chain's key and the drawn index.
	DNATMap uint64
	Modulus uint32
	Drop    bool
}

func (r Rule) String() string {
	var b []string
	if r.SrcNotIn.IsValid() {
		b = append(b, "ip saddr != "+r.SrcNotIn.String())
	}
	if r.SrcIn.IsValid() {
		b = append(b, "ip saddr "+r.SrcIn.String())
	}
	if r.FibSrcLocal {
		b = append(b, "fib saddr type local")
	}
	if r.SrcInSet != "" {
		b = append(b, "ip saddr @"+r.SrcInSet)
	}
	if r.Numgen > 0 {
		b = append(b, fmt.Sprintf("numgen random mod %d == 0", r.Numgen))
	}
	if r.UpdateSet != "" {
		b = append(b, "update @"+r.UpdateSet+" { ip saddr }")
	}
	if r.ClearMark {
		b = append(b, "meta mark set mark & ~0x4000")
	}
	if r.Jump != "" {
		b = append(b, "jump "+r.Jump)
	}
	if r.Goto != "" {
		b = append(b, "goto "+r.Goto)
	}
	if r.DNAT.IsValid() {
		b = append(b, "dnat to "+r.DNAT.String())
	}
	if r.DNATMap != 0 {
		b = append(b, fmt.Sprintf("dnat to %#x . numgen random mod %d map @%s", r.DNATMap, r.Modulus, endpointShard(r.DNATMap)))
	}
	if r.Drop {
		b = append(b, "drop")
	}
	return strings.Join(b, " ")
}

// Chain is a regular chain and its rules.
type Chain struct {
	Name  string
	Rules []Rule
}

// IPEntry is an element of a map keyed by ip . proto . port.
type IPEntry struct {
	IP    netip.Addr
	Proto uint8
	Port  uint16
	Chain string // goto target
}

func (e IPEntry) String() string {
	return fmt.Sprintf("%s . %s . %d : goto %s", e.IP, protoName(e.Proto), e.Port, e.Chain)
}

// PortEntry is an element of a map keyed by proto . port.
type PortEntry struct {
	Proto uint8
	Port  uint16
	Chain string
}

func (e PortEntry) String() string {
	return fmt.Sprintf("%s . %d : goto %s", protoName(e.Proto), e.Port, e.Chain)
}

// EndpointEntry is an element of the endpoints map: chain key . index
// → address . port.
type EndpointEntry struct {
	Key   uint64
	Index uint32
	Addr  netip.AddrPort
}

func (e EndpointEntry) String() string {
	return fmt.Sprintf("%#x . %d : %s . %d", e.Key, e.Index, e.Addr.Addr(), e.Addr.Port())
}

// AffinitySet is a per-endpoint dynamic set of client addresses.
type AffinitySet struct {
	Name    string
	Timeout time.Duration
}

// PortPlan is everything one service port puts in the table. Plans are
// compared whole: an unchanged plan costs nothing to sync.
type PortPlan struct {
	Key   string // namespace/name:port/proto
	Proto uint8
	// Endpoints are where cluster traffic goes (for conntrack cleanup).
	Endpoints           []netip.AddrPort
	Chains              []Chain
	ServiceIPs          []IPEntry   // in service-ips
	NodePorts           []PortEntry // in service-nodeports
	NoEndpoints         []IPEntry   // in no-endpoint-services
	NoEndpointNodePorts []PortEntry
	EndpointMap         []EndpointEntry // in endpoints
	Affinity            []AffinitySet
	// LocalIPs are this node's endpoint addresses: a connection from one
	// of them to itself through the service is hairpinned and must be
	// masqueraded.
	LocalIPs []netip.Addr
}

// endpoint is one usable backend of a service port.
type endpoint struct {
	addr        netip.AddrPort
	local       bool
	ready       bool
	serving     bool
	terminating bool
}

// chainID names a service port's chains: short, stable, unique.
func chainID(key string) string {
	h := fnv.New64a()
	h.Write([]byte(key))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h.Sum(nil)))
}

// Names of the table's fixed parts.
const (
	chainMarkMasq     = "mark-for-masquerade"
	chainReject       = "reject-chain"
	mapServiceIPs     = "service-ips"
	mapNodePorts      = "service-nodeports"
	mapNoEndpoints    = "no-endpoint-services"
	mapNoEPNodePort   = "no-endpoint-nodeports"
	mapEndpoints      = "endpoints"
	chainEndpointDNAT = "endpoint-dnat"
	setNodePortIPs    = "nodeport-ips"
	setHairpin        = "hairpin"
)

// PlanService computes the plans of every port of svc from its
// EndpointSlices. Services the proxy does not handle (headless,
// ExternalName, no IPv4 cluster IP) have no plans. Malformed parts of
// slices (bad addresses, unknown protocols) are skipped, not fatal.
func PlanService(svc *corev1.Service, sls []*discoveryv1.EndpointSlice, node NodeInfo) []PortPlan {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var clusterIPs []netip.Addr
	for _, s := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
		if a, err := netip.ParseAddr(s); err == nil && a.Is4() && !slices.Contains(clusterIPs, a) {
			clusterIPs = append(clusterIPs, a)
		}
	}
	if len(clusterIPs) == 0 {
		return nil // headless or IPv6-only
	}
	var lbIPs []netip.Addr
	if svc.Spec.Type == corev1.ServiceTypeLoadBalancer {
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			if a, err := netip.ParseAddr(ing.IP); err == nil && a.Is4() && !slices.Contains(lbIPs, a) {
				lbIPs = append(lbIPs, a)
			}
		}
		for _, s := range svc.Spec.ExternalIPs {
			if a, err := netip.ParseAddr(s); err == nil && a.Is4() && !slices.Contains(lbIPs, a) {
				lbIPs = append(lbIPs, a)
			}
		}
	}
	var plans []PortPlan
	for _, sp := range svc.Spec.Ports {
		proto, ok := protoNumber(sp.Protocol)
		if !ok || sp.Port <= 0 || sp.Port > 65535 {
			continue
		}
		eps := portEndpoints(svc, sls, sp, node.Name)
		plans = append(plans, planPort(svc, sp, proto, clusterIPs, lbIPs, eps, node))
	}
	return plans
}

// portEndpoints collects the IPv4 endpoints of one service port, merged
// over all slices (one address per endpoint, as upstream uses), sorted.
func portEndpoints(svc *corev1.Service, sls []*discoveryv1.EndpointSlice, sp corev1.ServicePort, nodeName string) []endpoint {
	seen := map[netip.AddrPort]int{}
	var eps []endpoint
	for _, sl := range sls {
		if sl.AddressType != discoveryv1.AddressTypeIPv4 {
			continue
		}
		var port int32 = -1
		for _, p := range sl.Ports {
			proto := corev1.ProtocolTCP
			if p.Protocol != nil {
				proto = *p.Protocol
			}
			name := ""
			if p.Name != nil {
				name = *p.Name
			}
			if name == sp.Name && proto == sp.Protocol && p.Port != nil {
				port = *p.Port
			}
		}
		if port <= 0 || port > 65535 {
			continue
		}
		for _, e := range sl.Endpoints {
			if len(e.Addresses) == 0 {
				continue
			}
			a, err := netip.ParseAddr(e.Addresses[0])
			if err != nil || !a.Is4() {
				slog.Debug("proxy: skipping an endpoint with a bad address", "service", svc.Namespace+"/"+svc.Name, "slice", sl.Name, "address", e.Addresses[0])
				continue
			}
			ep := endpoint{addr: netip.AddrPortFrom(a, uint16(port))}
			ep.ready = e.Conditions.Ready == nil || *e.Conditions.Ready
			ep.serving = ep.ready
			if e.Conditions.Serving != nil {
				ep.serving = *e.Conditions.Serving
			}
			ep.terminating = e.Conditions.Terminating != nil && *e.Conditions.Terminating
			ep.local = e.NodeName != nil && *e.NodeName == nodeName
			if i, dup := seen[ep.addr]; dup {
				if !eps[i].ready && ep.ready { // a ready copy wins
					eps[i] = ep
				}
				continue
			}
			seen[ep.addr] = len(eps)
			eps = append(eps, ep)
		}
	}
	slices.SortFunc(eps, func(a, b endpoint) int { return a.addr.Compare(b.addr) })
	return eps
}

// usable picks the endpoints traffic may go to, as upstream's
// CategorizeEndpoints does: the ready ones; when none is ready, the
// serving ones that are terminating (so a rolling update's last pods
// keep answering until they stop serving).
func usable(eps []endpoint, onlyLocal bool) []netip.AddrPort {
	var ready, fallback []netip.AddrPort
	for _, e := range eps {
		if onlyLocal && !e.local {
			continue
		}
		if e.ready {
			ready = append(ready, e.addr)
		} else if e.serving && e.terminating {
			fallback = append(fallback, e.addr)
		}
	}
	if len(ready) > 0 {
		return ready
	}
	return fallback
}

func planPort(svc *corev1.Service, sp corev1.ServicePort, proto uint8, clusterIPs, lbIPs []netip.Addr, eps []endpoint, node NodeInfo) PortPlan {
	key := fmt.Sprintf("%s/%s:%s/%s", svc.Namespace, svc.Name, sp.Name, protoName(proto))
	id := chainID(key)
	svcChain, extChain, localChain := "svc-"+id, "ext-"+id, "svl-"+id
	p := PortPlan{Key: key, Proto: proto}
	port := uint16(sp.Port)

	clusterEPs := usable(eps, false)
	localEPs := usable(eps, true)
	p.Endpoints = clusterEPs
	for _, e := range eps {
		if e.local {
			p.LocalIPs = append(p.LocalIPs, e.addr.Addr())
		}
	}
	p.LocalIPs = slices.Compact(p.LocalIPs)

	// No endpoints at all: every address of the service is rejected, as
	// kube-proxy answers them (ICMP port unreachable, TCP reset).
	if len(clusterEPs) == 0 {
		for _, ip := range append(slices.Clone(clusterIPs), lbIPs...) {
			p.NoEndpoints = append(p.NoEndpoints, IPEntry{IP: ip, Proto: proto, Port: port, Chain: chainReject})
		}
		if sp.NodePort > 0 && sp.NodePort <= 65535 {
			p.NoEndpointNodePorts = append(p.NoEndpointNodePorts, PortEntry{Proto: proto, Port: uint16(sp.NodePort), Chain: chainReject})
		}
		return p
	}

	var affinity time.Duration
	if svc.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		affinity = 10800 * time.Second
		if c := svc.Spec.SessionAffinityConfig; c != nil && c.ClientIP != nil && c.ClientIP.TimeoutSeconds != nil && *c.ClientIP.TimeoutSeconds > 0 {
			affinity = time.Duration(*c.ClientIP.TimeoutSeconds) * time.Second
		}
	}
	affSet := func(ep netip.AddrPort) string {
		if affinity == 0 {
			return ""
		}
		return "aff-" + id + "-" + chainID(ep.String()+"/"+affinity.String())
	}
	if affinity > 0 {
		for _, ep := range clusterEPs {
			p.Affinity = append(p.Affinity, AffinitySet{Name: affSet(ep), Timeout: affinity})
		}
		for _, ep := range localEPs {
			if n := affSet(ep); !slices.ContainsFunc(p.Affinity, func(a AffinitySet) bool { return a.Name == n }) {
				p.Affinity = append(p.Affinity, AffinitySet{Name: n, Timeout: affinity})
			}
		}
	}

	// The cluster path: traffic to a ClusterIP.
	internal := clusterEPs
	if svc.Spec.InternalTrafficPolicy != nil && *svc.Spec.InternalTrafficPolicy == corev1.ServiceInternalTrafficPolicyLocal {
		internal = localEPs
	}
	// Off-cluster clients of a ClusterIP are marked for masquerade by
	// one shared rule in the services chain, not one per service.
	svcRules := p.balance(svcChain, internal, affSet)
	p.Chains = append(p.Chains, Chain{Name: svcChain, Rules: svcRules})
	for _, ip := range clusterIPs {
		p.ServiceIPs = append(p.ServiceIPs, IPEntry{IP: ip, Proto: proto, Port: port, Chain: svcChain})
	}

	// The external path: NodePorts and load-balancer IPs.
	external := sp.NodePort > 0 || len(lbIPs) > 0
	if external {
		var ext []Rule
		if svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
			// The shared rule marked off-cluster clients; Local keeps
			// their address.
			ext = append(ext, Rule{ClearMark: true})
			if node.ClusterCIDR.IsValid() {
				ext = append(ext, Rule{SrcIn: node.ClusterCIDR, Goto: svcChain})
			}
			ext = append(ext,
				Rule{FibSrcLocal: true, Jump: chainMarkMasq},
				Rule{FibSrcLocal: true, Goto: svcChain},
				Rule{Goto: localChain})
			p.Chains = append(p.Chains, Chain{Name: localChain, Rules: p.balance(localChain, localEPs, affSet)})
		} else {
			ext = []Rule{{Jump: chainMarkMasq}, {Goto: svcChain}}
		}
		p.Chains = append(p.Chains, Chain{Name: extChain, Rules: ext})
		for _, ip := range lbIPs {
			p.ServiceIPs = append(p.ServiceIPs, IPEntry{IP: ip, Proto: proto, Port: port, Chain: extChain})
		}
		if sp.NodePort > 0 && sp.NodePort <= 65535 {
			p.NodePorts = append(p.NodePorts, PortEntry{Proto: proto, Port: uint16(sp.NodePort), Chain: extChain})
		}
	}
	return p
}

// balance spreads new connections evenly over eps. Without affinity it
// is one rule that draws an index and finds the endpoint in the shared
// endpoints map: an endpoint replaced by another changes map elements
// only, which the kernel commits without revalidating the table (a
// changed rule with a nat statement makes it walk every chain). With
// ClientIP affinity each endpoint has its own rule: clients in an
// endpoint's set go back to it first, new ones draw — rule i of n
// wins with probability 1/(n-i), so each endpoint gets 1/n. No
// endpoints: drop (a Local policy with none on this node).
func (p *PortPlan) balance(chain string, eps []netip.AddrPort, affSet func(netip.AddrPort) string) []Rule {
	if len(eps) == 0 {
		return []Rule{{Drop: true}}
	}
	if affSet(eps[0]) == "" {
		key := chainKey(chain)
		for i, ep := range eps {
			p.EndpointMap = append(p.EndpointMap, EndpointEntry{Key: key, Index: uint32(i), Addr: ep})
		}
		return []Rule{{DNATMap: key, Modulus: uint32(len(eps))}}
	}
	var rules []Rule
	for _, ep := range eps {
		s := affSet(ep)
		rules = append(rules, Rule{SrcInSet: s, UpdateSet: s, DNAT: ep})
	}
	for i, ep := range eps {
		r := Rule{UpdateSet: affSet(ep), DNAT: ep}
		if n := len(eps) - i; n > 1 {
			r.Numgen = uint32(n)
		}
		rules = append(rules, r)
	}
	return rules
}

// chainKey is a chain's key in the endpoints map (never 0).
func chainKey(chain string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(chain))
	return h.Sum64() | 1
}

// String renders a plan as nft-like text, for tests and debugging.
func (p PortPlan) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n", p.Key)
	for _, a := range p.Affinity {
		fmt.Fprintf(&b, "set %s { type ipv4_addr; flags dynamic,timeout; timeout %s }\n", a.Name, a.Timeout)
	}
	for _, c := range p.Chains {
		fmt.Fprintf(&b, "chain %s {\n", c.Name)
		for _, r := range c.Rules {
			fmt.Fprintf(&b, "\t%s\n", r)
		}
		b.WriteString("}\n")
	}
	for _, e := range p.ServiceIPs {
		fmt.Fprintf(&b, "element %s { %s }\n", mapServiceIPs, e)
	}
	for _, e := range p.NodePorts {
		fmt.Fprintf(&b, "element %s { %s }\n", mapNodePorts, e)
	}
	for _, e := range p.NoEndpoints {
		fmt.Fprintf(&b, "element %s { %s }\n", mapNoEndpoints, e)
	}
	for _, e := range p.NoEndpointNodePorts {
		fmt.Fprintf(&b, "element %s { %s }\n", mapNoEPNodePort, e)
	}
	for _, e := range p.EndpointMap {
		fmt.Fprintf(&b, "element %s { %s }\n", mapEndpoints, e)
	}
	return b.String()
}
