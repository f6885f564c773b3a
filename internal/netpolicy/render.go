package netpolicy

import (
	"encoding/binary"
	"fmt"
	"math"
	"net/netip"
	"reflect"
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

// installed is what one pod has in the kernel: its plan and the names
// of its chains and sets. Names carry a generation, so a pod's new
// chains go in beside its old ones and the swap is one transaction.
type installed struct {
	plan   PodPlan
	chains []string
	sets   []string
}

// ruleset is what the table holds, by pod IP. Every change is computed
// against it and committed in one transaction; after a refused one the
// caller starts over with a full sync.
type ruleset struct {
	table *nftables.Table
	pods  map[netip.Addr]installed
	gen   uint64
	rules int
}

func newRuleset(name string) *ruleset {
	return &ruleset{table: &nftables.Table{Name: name, Family: nftables.TableFamilyINet}, pods: map[netip.Addr]installed{}}
}

func (rs *ruleset) maps() (ingress, egress *nftables.Set) {
	return &nftables.Set{Table: rs.table, Name: mapIngress, KeyType: nftables.TypeIPAddr, DataType: nftables.TypeVerdict, IsMap: true},
		&nftables.Set{Table: rs.table, Name: mapEgress, KeyType: nftables.TypeIPAddr, DataType: nftables.TypeVerdict, IsMap: true}
}

// full adds to c the whole table for plans, replacing whatever table
// of that name was there in the same transaction, and resets rs to it.
func (rs *ruleset) full(c *nftables.Conn, plans []PodPlan) error {
	t := rs.table
	c.AddTable(t)
	c.DelTable(t)
	c.AddTable(t)
	rs.pods, rs.rules = map[netip.Addr]installed{}, 0
	ingress, egress := rs.maps()
	if err := c.AddSet(ingress, nil); err != nil {
		return fmt.Errorf("ingress map: %w", err)
	}
	if err := c.AddSet(egress, nil); err != nil {
		return fmt.Errorf("egress map: %w", err)
	}
	rs.skeleton(c, ingress, egress)
	for _, pp := range plans {
		if err := rs.addPod(c, pp); err != nil {
			return err
		}
	}
	return nil
}

// update adds to c what turns the installed pods into plans: only the
// pods whose plan changed are touched. It reports whether anything did.
func (rs *ruleset) update(c *nftables.Conn, plans []PodPlan) (bool, error) {
	want := make(map[netip.Addr]PodPlan, len(plans))
	for _, pp := range plans {
		want[pp.IP] = pp
	}
	changed := false
	for ip, old := range rs.pods {
		if pp, ok := want[ip]; !ok || !reflect.DeepEqual(pp, old.plan) {
			rs.delPod(c, ip)
			changed = true
		}
	}
	for _, pp := range plans {
		if _, ok := rs.pods[pp.IP]; ok {
			continue
		}
		if err := rs.addPod(c, pp); err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}

// delPod removes a pod's map elements, chains and sets, in the order
// the kernel accepts: nothing may refer to what goes.
func (rs *ruleset) delPod(c *nftables.Conn, ip netip.Addr) {
	old := rs.pods[ip]
	ingress, egress := rs.maps()
	key := ip.As4()
	if old.plan.IngressIsolated {
		c.SetDeleteElements(ingress, []nftables.SetElement{{Key: key[:]}})
	}
	if old.plan.EgressIsolated {
		c.SetDeleteElements(egress, []nftables.SetElement{{Key: key[:]}})
	}
	for _, name := range old.chains {
		ch := &nftables.Chain{Name: name, Table: rs.table}
		c.FlushChain(ch)
		c.DelChain(ch)
	}
	for _, name := range old.sets {
		c.DelSet(&nftables.Set{Table: rs.table, Name: name})
	}
	rs.rules -= countRules(old.plan)
	delete(rs.pods, ip)
}

// countRules is the number of rules a pod's chains hold.
func countRules(pp PodPlan) int {
	n := 0
	for _, dir := range []struct {
		on bool
		as []Allow
	}{{pp.IngressIsolated, pp.Ingress}, {pp.EgressIsolated, pp.Egress}} {
		if !dir.on {
			continue
		}
		n++ // the final drop
		for _, a := range dir.as {
			n += max(1, len(a.Ports))
		}
	}
	return n
}

// addPod adds a pod's chains, sets, rules and map elements.
func (rs *ruleset) addPod(c *nftables.Conn, pp PodPlan) error {
	t := rs.table
	rs.gen++
	ingress, egress := rs.maps()
	inst := installed{plan: pp}
	ip := pp.IP.As4()
	for _, dir := range []struct {
		on      bool
		prefix  string
		allows  []Allow
		verdict expr.VerdictKind
		addrOff uint32
		m       *nftables.Set
	}{
		{pp.IngressIsolated, "in", pp.Ingress, expr.VerdictAccept, 12, ingress}, // saddr
		{pp.EgressIsolated, "out", pp.Egress, expr.VerdictReturn, 16, egress},   // daddr; allowed: on to ingress
	} {
		if !dir.on {
			continue
		}
		ch := c.AddChain(&nftables.Chain{Name: fmt.Sprintf("%s-%s-%d", dir.prefix, pp.IP, rs.gen), Table: t})
		inst.chains = append(inst.chains, ch.Name)
		for i, a := range dir.allows {
			var match []expr.Any
			if !a.AnyPeer {
				s, err := addIntervalSet(c, t, fmt.Sprintf("%s-%d", ch.Name, i), a.Peers)
				if err != nil {
					return err
				}
				inst.sets = append(inst.sets, s.Name)
				match = append(match, loadAddr(dir.addrOff), &expr.Lookup{SourceRegister: 1, SetName: s.Name, SetID: s.ID})
			}
			if len(a.Except) > 0 {
				s, err := addIntervalSet(c, t, fmt.Sprintf("%s-%dx", ch.Name, i), a.Except)
				if err != nil {
					return err
				}
				inst.sets = append(inst.sets, s.Name)
				match = append(match, loadAddr(dir.addrOff), &expr.Lookup{SourceRegister: 1, SetName: s.Name, SetID: s.ID, Invert: true})
			}
			if len(a.Ports) == 0 {
				c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: append(match, &expr.Verdict{Kind: dir.verdict})})
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
				c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: append(e, &expr.Verdict{Kind: dir.verdict})})
			}
		}
		c.AddRule(&nftables.Rule{Table: t, Chain: ch, Exprs: []expr.Any{&expr.Verdict{Kind: expr.VerdictDrop}}})
		if err := c.SetAddElements(dir.m, []nftables.SetElement{{Key: ip[:], VerdictData: &expr.Verdict{Kind: expr.VerdictJump, Chain: ch.Name}}}); err != nil {
			return fmt.Errorf("%s map: %w", dir.prefix, err)
		}
	}
	rs.rules += countRules(pp)
	rs.pods[pp.IP] = inst
	return nil
}

// skeleton is the base chain: after the proxy's DNAT (prerouting), so
// it sees the real pod addresses.
func (rs *ruleset) skeleton(c *nftables.Conn, ingress, egress *nftables.Set) {
	t := rs.table
	policy := nftables.ChainPolicyAccept
	fwd := c.AddChain(&nftables.Chain{Name: chainFwd, Table: t, Type: nftables.ChainTypeFilter,
		Hooknum: nftables.ChainHookForward, Priority: nftables.ChainPriorityFilter, Policy: &policy})
	ipv4 := []expr.Any{&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1}, &expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{unix.NFPROTO_IPV4}}}
	add := func(e ...expr.Any) {
		c.AddRule(&nftables.Rule{Table: t, Chain: fwd, Exprs: e})
		rs.rules++
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
