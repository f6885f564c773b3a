package netpolicy

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"slices"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// Names in the table.
const (
	mapIngress = "ingress-pods" // pod IP → jump in-<ip>
	mapEgress  = "egress-pods"  // pod IP → jump out-<ip>
	chainFwd   = "forward"
)

// render adds to c the whole table for plans, replacing whatever table
// of that name was there in the same transaction.
func render(c *nftables.Conn, tableName string, plans []PodPlan) (rules int, err error) {
	t := &nftables.Table{Name: tableName, Family: nftables.TableFamilyINet}
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	ingress := &nftables.Set{Table: t, Name: mapIngress, KeyType: nftables.TypeIPAddr, DataType: nftables.TypeVerdict, IsMap: true}
	egress := &nftables.Set{Table: t, Name: mapEgress, KeyType: nftables.TypeIPAddr, DataType: nftables.TypeVerdict, IsMap: true}
	var inElems, outElems []nftables.SetElement

	type pending struct {
		chain *nftables.Chain
		plan  PodPlan
		out   bool
	}
	var chains []pending
	for _, pp := range plans {
		ip := pp.IP.As4()
		if pp.IngressIsolated {
			ch := c.AddChain(&nftables.Chain{Name: "in-" + pp.IP.String(), Table: t})
			chains = append(chains, pending{ch, pp, false})
			inElems = append(inElems, nftables.SetElement{Key: ip[:], VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: ch.Name}})
		}
		if pp.EgressIsolated {
			ch := c.AddChain(&nftables.Chain{Name: "out-" + pp.IP.String(), Table: t})
			chains = append(chains, pending{ch, pp, true})
			outElems = append(outElems, nftables.SetElement{Key: ip[:], VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: ch.Name}})
		}
	}
	if err := c.AddSet(ingress, inElems); err != nil {
		return 0, fmt.Errorf("ingress map: %w", err)
	}
	if err := c.AddSet(egress, outElems); err != nil {
		return 0, fmt.Errorf("egress map: %w", err)
	}
	for _, p := range chains {
		allows, verdict, addrOff := p.plan.Ingress, expr.VerdictAccept, uint32(12) // saddr
		if p.out {
			allows, verdict, addrOff = p.plan.Egress, expr.VerdictReturn, 16 // daddr
		}
		for i, a := range allows {
			var match []expr.Any
			if !a.AnyPeer {
				s, err := addIntervalSet(c, t, fmt.Sprintf("%s-%d", p.chain.Name, i), a.Peers)
				if err != nil {
					return 0, err
				}
				match = append(match, loadAddr(addrOff), &expr.Lookup{SourceRegister: 1, SetName: s.Name, SetID: s.ID})
			}
			if len(a.Except) > 0 {
				s, err := addIntervalSet(c, t, fmt.Sprintf("%s-%dx", p.chain.Name, i), a.Except)
				if err != nil {
					return 0, err
				}
				match = append(match, loadAddr(addrOff), &expr.Lookup{SourceRegister: 1, SetName: s.Name, SetID: s.ID, Invert: true})
			}
			if len(a.Ports) == 0 {
				c.AddRule(&nftables.Rule{Table: t, Chain: p.chain, Exprs: append(match, &expr.Verdict{Kind: verdict})})
				rules++
				continue
			}
			for _, r := range a.Ports {
				e := slices.Clone(match)
				e = append(e, &expr.Meta{Key: expr.MetaKeyL4PROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{r.Proto}})
				if r.First != 0 || r.Last != math.MaxUint16 {
					e = append(e, &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseTransportHeader, Offset: 2, Len: 2})
					if r.First == r.Last {
						e = append(e, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: be16(r.First)})
					} else {
						e = append(e, &expr.Range{Op: expr.CmpOpEq, Register: 1, FromData: be16(r.First), ToData: be16(r.Last)})
					}
				}
				c.AddRule(&nftables.Rule{Table: t, Chain: p.chain, Exprs: append(e, &expr.Verdict{Kind: verdict})})
				rules++
			}
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: p.chain, Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}})
		rules++
	}

	// The base chain: after the proxy's DNAT (prerouting), so it sees
	// the real pod addresses.
	policy := nftables.ChainPolicyAccept
	fwd := c.AddChain(&nftables.Chain{Name: chainFwd, Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &policy})
	ipv4 := []expr.Any{&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}}}
	add := func(e ...expr.Any) {
		c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: e})
		rules++
	}
	// Replies and related traffic (ICMP errors) of allowed connections.
	add(&expr.Ct{Register: 1, Key: expr.CtKeySTATE},
		&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: 4,
			Mask: binary.NativeEndian.AppendUint32(nil, expr.CtStateBitESTABLISHED|expr.CtStateBitRELATED), Xor: []byte{0, 0, 0, 0}},
		&expr.Cmp{Op: expr.CmpOpNeq, Register: 1, Data: []byte{0, 0, 0, 0}},
		&expr.Verdict{Kind: expr.VerdictAccept})
	add(append(slices.Clone(ipv4), loadAddr(12),
		&expr.Lookup{SourceRegister: 1, DestRegister: 0, IsDestRegSet: true, SetName: egress.Name, SetID: egress.ID})...)
	// The node itself (kubelet probes, hairpinned service traffic) may
	// always reach its pods.
	add(append(slices.Clone(ipv4), &expr.Fib{Register: 1, FlagSADDR: true, ResultADDRTYPE: true},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: binary.NativeEndian.AppendUint32(nil, unix.RTN_LOCAL)},
		&expr.Verdict{Kind: expr.VerdictAccept})...)
	add(append(slices.Clone(ipv4), loadAddr(16),
		&expr.Lookup{SourceRegister: 1, DestRegister: 0, IsDestRegSet: true, SetName: ingress.Name, SetID: ingress.ID})...)
	return rules, nil
}

func loadAddr(off uint32) *expr.Payload {
	return &expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: off, Len: 4}
}

func be16(v uint16) []byte { return binary.BigEndian.AppendUint16(nil, v) }

// addIntervalSet adds a set of the prefixes, merged into disjoint
// ranges (the kernel refuses overlapping intervals).
func addIntervalSet(c *nftables.Conn, t *nftables.Table, name string, pfs []netip.Prefix) (*nftables.Set, error) {
	s := &nftables.Set{Table: t, Name: name, KeyType: nftables.TypeIPAddr, Interval: true}
	var elems []nftables.SetElement
	for _, r := range mergeRanges(pfs) {
		elems = append(elems, nftables.SetElement{Key: binary.BigEndian.AppendUint32(nil, r[0])})
		if r[1] != math.MaxUint32 {
			elems = append(elems, nftables.SetElement{Key: binary.BigEndian.AppendUint32(nil, r[1]+1), IntervalEnd: true})
		}
	}
	if err := c.AddSet(s, elems); err != nil {
		return nil, fmt.Errorf("set %s: %w", name, err)
	}
	return s, nil
}

// mergeRanges turns IPv4 prefixes into sorted, disjoint, non-adjacent
// [first, last] ranges.
func mergeRanges(pfs []netip.Prefix) [][2]uint32 {
	var rs [][2]uint32
	for _, p := range pfs {
		if !p.Addr().Is4() {
			continue
		}
		a := p.Masked().Addr().As4()
		first := binary.BigEndian.Uint32(a[:])
		last := first | uint32(uint64(1)<<(32-p.Bits())-1)
		rs = append(rs, [2]uint32{first, last})
	}
	slices.SortFunc(rs, func(x, y [2]uint32) int {
		if x[0] != y[0] {
			if x[0] < y[0] {
				return -1
			}
			return 1
		}
		return 0
	})
	var out [][2]uint32
	for _, r := range rs {
		if n := len(out); n > 0 && (out[n-1][1] == math.MaxUint32 || r[0] <= out[n-1][1]+1) {
			out[n-1][1] = max(out[n-1][1], r[1])
			continue
		}
		out = append(out, r)
	}
	return out
}
