package proxy

import (
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
)

// ruleset is what the proxy believes the kernel table holds: the plans
// of the last committed transaction. Every change is computed against it
// and committed in one transaction; a refused transaction leaves both
// the kernel and the ruleset as they were.
type ruleset struct {
	table string
	// services: namespace/name → its port plans, as installed.
	services map[string][]PortPlan
	// owners: which port plan installed each map element, so a clash
	// (two services claiming one IP and port, a bad object) skips the
	// second instead of failing the transaction.
	owners      map[slotKey]string
	hairpin     map[netip.Addr]int
	nodePortIPs []netip.Addr
	rules       int
	// deferred, during a full sync, collects the endpoints map's
	// elements so they go in a few big messages.
	deferred  *[]EndpointEntry
	deferIP   map[string][]IPEntry
	deferPort map[string][]PortEntry
}

// slotKey is a map element's key: what must be unique in the map.
type slotKey struct {
	m     string
	ip    netip.Addr
	proto uint8
	port  uint16
}

// elemKey is a whole element: key and verdict.
type elemKey struct {
	slotKey
	chain string
}

// skeletonRules is the number of rules skeleton adds.
const skeletonRules = 16

func newRuleset(table string) *ruleset {
	return &ruleset{table: table, services: map[string][]PortPlan{}, owners: map[slotKey]string{}, hairpin: map[netip.Addr]int{}}
}

// full renders the whole table from scratch: the old table (if any) is
// removed in the same transaction, so the kernel never sees half of it.
// On success it returns the new ruleset.
func (rs *ruleset) full(all map[string][]PortPlan, nodePortIPs []netip.Addr, clusterCIDR netip.Prefix) (*ruleset, *batch, error) {
	renderMu.Lock()
	defer renderMu.Unlock()
	b, err := newBatch(rs.table)
	if err != nil {
		return nil, nil, err
	}
	b.c.AddTable(b.table)
	b.c.DelTable(b.table)
	if err := b.skeleton(nodePortIPs, clusterCIDR); err != nil {
		return nil, nil, err
	}
	next := newRuleset(rs.table)
	next.nodePortIPs = slices.Clone(nodePortIPs)
	next.rules = skeletonRules
	if clusterCIDR.IsValid() {
		next.rules++
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	// The elements of all services go after all chains, in few big
	// messages: each message costs the kernel a search of the table's
	// sets by name.
	var eps []EndpointEntry
	next.deferred = &eps
	next.deferIP, next.deferPort = map[string][]IPEntry{}, map[string][]PortEntry{}
	for _, k := range keys {
		if err := next.applyService(b, k, all[k]); err != nil {
			return nil, nil, err
		}
	}
	for _, m := range []string{mapServiceIPs, mapNoEndpoints} {
		for es := next.deferIP[m]; len(es) > 0; {
			n := min(len(es), 1000)
			if err := b.ipElements(m, true, es[:n]); err != nil {
				return nil, nil, err
			}
			es = es[n:]
		}
	}
	for _, m := range []string{mapNodePorts, mapNoEPNodePort} {
		for es := next.deferPort[m]; len(es) > 0; {
			n := min(len(es), 1000)
			if err := b.portElements(m, true, es[:n]); err != nil {
				return nil, nil, err
			}
			es = es[n:]
		}
	}
	next.deferred, next.deferIP, next.deferPort = nil, nil, nil
	if err := b.endpointElements(true, eps); err != nil {
		return nil, nil, err
	}
	return next, b, nil
}

// update renders the changes of the named services (a nil plan list: the
// service is gone) and of the NodePort addresses into one batch, and
// changes rs to match. The caller commits the batch and, if that fails,
// drops rs for a full resync.
func (rs *ruleset) update(changed map[string][]PortPlan, nodePortIPs []netip.Addr) (*batch, error) {
	renderMu.Lock()
	defer renderMu.Unlock()
	b, err := newBatch(rs.table)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(rs.nodePortIPs, nodePortIPs) {
		var add, del []netip.Addr
		for _, ip := range nodePortIPs {
			if !slices.Contains(rs.nodePortIPs, ip) {
				add = append(add, ip)
			}
		}
		for _, ip := range rs.nodePortIPs {
			if !slices.Contains(nodePortIPs, ip) {
				del = append(del, ip)
			}
		}
		if err := b.setNodePortIPs(add, del); err != nil {
			return nil, err
		}
		rs.nodePortIPs = slices.Clone(nodePortIPs)
	}
	keys := make([]string, 0, len(changed))
	for k := range changed {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := rs.applyService(b, k, changed[k]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// applyService adds to b what turns the service's installed plans into
// plans, in the order the kernel accepts within one transaction: new
// sets and chains first, stale map elements out, rules rewritten, new
// elements in, then chains and sets nothing refers to any more removed.
func (rs *ruleset) applyService(b *batch, svc string, plans []PortPlan) error {
	old := rs.services[svc]
	oldChains, newChains := chainsOf(old), chainsOf(plans)
	oldAff, newAff := affinityOf(old), affinityOf(plans)

	// Elements, deduplicated against other services' claims.
	type elem struct {
		m  string
		ip *IPEntry
		pt *PortEntry
	}
	key := func(e elem) elemKey {
		if e.ip != nil {
			return elemKey{slotKey{e.m, e.ip.IP, e.ip.Proto, e.ip.Port}, e.ip.Chain}
		}
		return elemKey{slotKey{m: e.m, proto: e.pt.Proto, port: e.pt.Port}, e.pt.Chain}
	}
	// slot is the element's key without its verdict: what must be unique.
	slot := func(e elem) slotKey { return key(e).slotKey }
	elems := func(ps []PortPlan) map[elemKey]elem {
		out := map[elemKey]elem{}
		for i := range ps {
			p := &ps[i]
			for j := range p.ServiceIPs {
				e := elem{m: mapServiceIPs, ip: &p.ServiceIPs[j]}
				out[key(e)] = e
			}
			for j := range p.NoEndpoints {
				e := elem{m: mapNoEndpoints, ip: &p.NoEndpoints[j]}
				out[key(e)] = e
			}
			for j := range p.NodePorts {
				e := elem{m: mapNodePorts, pt: &p.NodePorts[j]}
				out[key(e)] = e
			}
			for j := range p.NoEndpointNodePorts {
				e := elem{m: mapNoEPNodePort, pt: &p.NoEndpointNodePorts[j]}
				out[key(e)] = e
			}
		}
		return out
	}
	oldEl, newEl := elems(old), elems(plans)
	// Elements go out in one message per map and direction.
	ipBatch, portBatch := map[string][]IPEntry{}, map[string][]PortEntry{}
	emit := func(e elem, _ bool) error {
		if e.ip != nil {
			ipBatch[e.m] = append(ipBatch[e.m], *e.ip)
		} else {
			portBatch[e.m] = append(portBatch[e.m], *e.pt)
		}
		return nil
	}
	flush := func(add bool) error {
		if add && rs.deferIP != nil {
			for m, es := range ipBatch {
				rs.deferIP[m] = append(rs.deferIP[m], es...)
			}
			for m, es := range portBatch {
				rs.deferPort[m] = append(rs.deferPort[m], es...)
			}
			clear(ipBatch)
			clear(portBatch)
			return nil
		}
		for _, m := range []string{mapServiceIPs, mapNoEndpoints} {
			if err := b.ipElements(m, add, ipBatch[m]); err != nil {
				return err
			}
		}
		for _, m := range []string{mapNodePorts, mapNoEPNodePort} {
			if err := b.portElements(m, add, portBatch[m]); err != nil {
				return err
			}
		}
		clear(ipBatch)
		clear(portBatch)
		return nil
	}

	for name, a := range newAff {
		if _, ok := oldAff[name]; !ok {
			if err := b.addAffinitySet(a); err != nil {
				return err
			}
		}
	}
	for name := range newChains {
		if _, ok := oldChains[name]; !ok {
			b.addChain(name)
		}
	}
	for k, e := range oldEl {
		if _, keep := newEl[k]; keep {
			continue
		}
		if rs.owners[slot(e)] != svc {
			continue // never installed: another service held the slot
		}
		if err := emit(e, false); err != nil {
			return err
		}
		delete(rs.owners, slot(e))
	}
	if err := flush(false); err != nil {
		return err
	}
	for name, c := range newChains {
		oc, existed := oldChains[name]
		switch {
		case !existed:
			b.addRules(c)
			rs.rules += len(c.Rules)
		case !slices.Equal(oc.Rules, c.Rules):
			b.flushChain(name)
			b.addRules(c)
			rs.rules += len(c.Rules) - len(oc.Rules)
		}
	}
	for k, e := range newEl {
		if _, had := oldEl[k]; had && rs.owners[slot(e)] == svc {
			continue
		}
		if owner, taken := rs.owners[slot(e)]; taken && owner != svc {
			slog.Warn("proxy: two services claim one address and port; keeping the first", "address", fmt.Sprint(slot(e)), "kept", owner, "skipped", svc)
			continue
		}
		if err := emit(e, true); err != nil {
			return err
		}
		rs.owners[slot(e)] = svc
	}
	if err := flush(true); err != nil {
		return err
	}
	// Endpoint elements: those whose address changed are deleted, then
	// added anew (a map element cannot be overwritten in place).
	oldEP, newEP := map[[2]uint64]netip.AddrPort{}, map[[2]uint64]netip.AddrPort{}
	for _, p := range old {
		for _, e := range p.EndpointMap {
			oldEP[[2]uint64{e.Key, uint64(e.Index)}] = e.Addr
		}
	}
	for _, p := range plans {
		for _, e := range p.EndpointMap {
			newEP[[2]uint64{e.Key, uint64(e.Index)}] = e.Addr
		}
	}
	var epDel, epAdd []EndpointEntry
	for k, a := range oldEP {
		if n, ok := newEP[k]; !ok || n != a {
			epDel = append(epDel, EndpointEntry{Key: k[0], Index: uint32(k[1]), Addr: a})
		}
	}
	for k, a := range newEP {
		if o, ok := oldEP[k]; !ok || o != a {
			epAdd = append(epAdd, EndpointEntry{Key: k[0], Index: uint32(k[1]), Addr: a})
		}
	}
	if err := b.endpointElements(false, epDel); err != nil {
		return err
	}
	if rs.deferred != nil {
		*rs.deferred = append(*rs.deferred, epAdd...)
	} else if err := b.endpointElements(true, epAdd); err != nil {
		return err
	}

	var gone []string
	for name, c := range oldChains {
		if _, keep := newChains[name]; !keep {
			b.flushChain(name)
			gone = append(gone, name)
			rs.rules -= len(c.Rules)
		}
	}
	for _, name := range gone {
		b.delChain(name)
	}
	for name := range oldAff {
		if _, keep := newAff[name]; !keep {
			b.delSet(name)
		}
	}

	// Hairpin addresses, counted over services.
	var hpAdd, hpDel []netip.Addr
	for _, ip := range localIPsOf(plans) {
		if rs.hairpin[ip]++; rs.hairpin[ip] == 1 {
			hpAdd = append(hpAdd, ip)
		}
	}
	for _, ip := range localIPsOf(old) {
		if rs.hairpin[ip]--; rs.hairpin[ip] == 0 {
			delete(rs.hairpin, ip)
			hpDel = append(hpDel, ip)
		}
	}
	// An address both added and removed in this pass is unchanged.
	hpAdd, hpDel = slices.DeleteFunc(hpAdd, func(a netip.Addr) bool { return rs.hairpin[a] == 0 }),
		slices.DeleteFunc(hpDel, func(a netip.Addr) bool { return rs.hairpin[a] > 0 })
	if err := b.hairpinElements(false, hpDel); err != nil {
		return err
	}
	if err := b.hairpinElements(true, hpAdd); err != nil {
		return err
	}

	if plans == nil {
		delete(rs.services, svc)
	} else {
		rs.services[svc] = plans
	}
	return nil
}

func chainsOf(ps []PortPlan) map[string]Chain {
	m := map[string]Chain{}
	for _, p := range ps {
		for _, c := range p.Chains {
			m[c.Name] = c
		}
	}
	return m
}

func affinityOf(ps []PortPlan) map[string]AffinitySet {
	m := map[string]AffinitySet{}
	for _, p := range ps {
		for _, a := range p.Affinity {
			m[a.Name] = a
		}
	}
	return m
}

// localIPsOf is the service's local endpoint addresses, each once.
func localIPsOf(ps []PortPlan) []netip.Addr {
	var ips []netip.Addr
	for _, p := range ps {
		for _, ip := range p.LocalIPs {
			if !slices.Contains(ips, ip) {
				ips = append(ips, ip)
			}
		}
	}
	return ips
}
