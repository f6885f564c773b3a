package plugins

import (
	"context"
	"sort"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// Counting matching pods on every node is the cost of PodTopologySpread:
// ~100 ns a node, 0.5 ms per pod at 5,000 nodes, in PreFilter and again in
// PreScore. But consecutive pods are mostly replicas of the same workload,
// asking the same question of a cluster where one node changed since the
// last cycle. So the counter keeps, per question, each node's answer
// tagged with the NodeInfo's Generation, and the domain totals as the sum
// of those answers; a cycle re-asks only nodes whose Generation moved
// (Generation is a global counter bumped by every change to a NodeInfo,
// so an equal Generation means an equal node and pod list) and adjusts
// the totals by the difference.
//
// The question is identified by a signature: what is counted (namespace,
// keys, selectors, inclusion policies), plus the pod's node affinity and
// tolerations when a policy honors them. Entries are kept for the
// ptsCacheEntries most recently asked questions.

const ptsCacheEntries = 16

// ptsContrib is one node's share of one constraint's totals.
type ptsContrib struct {
	value string // the node's domain
	count int64  // matching pods; -1: the node is in no domain
}

// ptsCacheEntry is the answer to one question over the last node list.
type ptsCacheEntry struct {
	width   int               // constraints
	gens    []int64           // per node position; 0: nothing recorded
	contrib []ptsContrib      // per node position × constraint
	totals  []ptsDomainCounts // per constraint, Σ contrib by domain
	members [][]int32         // members[c][i]: nodes adding to totals[c] domain i
	used    uint64            // LRU clock
	changed []int32           // scratch: positions to recompute
	logged  []int32           // scratch: positions the snapshot logged
	// ver is the snapshot list version last synced, when the nodes were
	// the snapshot's NodeInfoList (zero otherwise): the next cycle then
	// asks the snapshot which positions changed instead of comparing
	// every node's Generation, which touches every NodeInfo.
	ver     framework.ListVersion
	verSnap *framework.Snapshot
}

// ptsCounter is safe for concurrent use; one question is answered at a
// time.
type ptsCounter struct {
	mu      sync.Mutex
	entries map[string]*ptsCacheEntry
	clock   uint64
}

// count brings the entry for sig up to date with nodes, computing a node's
// contributions with compute (called concurrently for different nodes,
// into out of length width, pre-filled with count -1), and passes the entry
// to use, which must copy what it needs: the entry changes next cycle.
//
// snap, when not nil, is the snapshot nodes may be the NodeInfoList of.
func (pc *ptsCounter) count(ctx context.Context, par framework.Parallelizer, sig string, width int, nodes []*framework.NodeInfo,
	snap *framework.Snapshot, compute func(ni *framework.NodeInfo, out []ptsContrib), use func(e *ptsCacheEntry)) error {
	pc.mu.Lock()
	defer pc.mu.Unlock()
	e := pc.entry(sig, width)

	n := len(nodes)
	isList := snap != nil && n > 0 && n == len(snap.NodeInfoList) && &nodes[0] == &snap.NodeInfoList[0]
	known := false
	if isList && len(e.gens) == n && e.verSnap == snap {
		e.logged, known = snap.ChangedSince(e.ver, e.logged[:0])
	}
	e.ver, e.verSnap = framework.ListVersion{}, nil
	if known {
		// Only the logged positions can differ; a position logged twice
		// is recomputed once (its gen is set to -1 until then).
		e.changed = e.changed[:0]
		for _, p := range e.logged {
			i := int(p)
			if g := e.gens[i]; g != -1 && (g != nodes[i].Generation || nodes[i].Generation == 0) {
				e.gens[i] = -1
				e.changed = append(e.changed, p)
				e.remove(i)
			}
		}
		return pc.finish(ctx, par, sig, e, nodes, snap, isList, compute, use)
	}
	for i := n; i < len(e.gens); i++ {
		e.remove(i)
	}
	if len(e.gens) > n {
		e.gens, e.contrib = e.gens[:n], e.contrib[:n*width]
	}
	if grow := n - len(e.gens); grow > 0 {
		e.gens = append(e.gens, make([]int64, grow)...)
		old := len(e.contrib)
		e.contrib = append(e.contrib, make([]ptsContrib, grow*width)...)
		for i := old; i < len(e.contrib); i++ {
			e.contrib[i].count = -1
		}
	}
	if cap(e.changed) < n {
		e.changed = make([]int32, 0, n)
	}
	e.changed = e.changed[:0]
	for i, ni := range nodes {
		if e.gens[i] != ni.Generation || ni.Generation == 0 {
			e.changed = append(e.changed, int32(i))
			e.remove(i)
		}
	}
	return pc.finish(ctx, par, sig, e, nodes, snap, isList, compute, use)
}

// finish recomputes the positions in e.changed (already removed from the
// totals), adds them back, and hands the entry to use.
func (pc *ptsCounter) finish(ctx context.Context, par framework.Parallelizer, sig string, e *ptsCacheEntry, nodes []*framework.NodeInfo,
	snap *framework.Snapshot, isList bool, compute func(ni *framework.NodeInfo, out []ptsContrib), use func(e *ptsCacheEntry)) error {
	width := e.width
	one := func(k int) {
		i := int(e.changed[k])
		out := e.contrib[i*width : (i+1)*width]
		for c := range out {
			out[c] = ptsContrib{count: -1}
		}
		compute(nodes[i], out)
	}
	if len(e.changed) < 64 {
		for k := range e.changed {
			one(k)
		}
	} else {
		par.Until(ctx, len(e.changed), one)
	}
	if err := ctx.Err(); err != nil {
		// Some nodes may not have been recomputed: forget the entry.
		delete(pc.entries, sig)
		return err
	}
	for _, i := range e.changed {
		e.gens[i] = nodes[i].Generation
		e.insert(int(i))
	}
	if isList {
		e.ver, e.verSnap = snap.ListVersion(), snap
	}
	e.compactIfSparse()
	use(e)
	return nil
}

func (pc *ptsCounter) entry(sig string, width int) *ptsCacheEntry {
	pc.clock++
	if e, ok := pc.entries[sig]; ok {
		e.used = pc.clock
		return e
	}
	if pc.entries == nil {
		pc.entries = map[string]*ptsCacheEntry{}
	}
	if len(pc.entries) >= ptsCacheEntries {
		var oldest string
		var at uint64 = ^uint64(0)
		for k, v := range pc.entries {
			if v.used < at {
				oldest, at = k, v.used
			}
		}
		delete(pc.entries, oldest)
	}
	e := &ptsCacheEntry{width: width, totals: make([]ptsDomainCounts, width), members: make([][]int32, width), used: pc.clock}
	pc.entries[sig] = e
	return e
}

// remove takes node position i's contributions out of the totals.
func (e *ptsCacheEntry) remove(i int) {
	for c := 0; c < e.width; c++ {
		k := &e.contrib[i*e.width+c]
		if k.count < 0 {
			continue
		}
		if d := e.totals[c].find(k.value); d >= 0 {
			e.totals[c].counts[d] -= k.count
			e.members[c][d]--
		}
		k.count = -1
	}
}

// insert adds node position i's contributions to the totals.
func (e *ptsCacheEntry) insert(i int) {
	for c := 0; c < e.width; c++ {
		k := e.contrib[i*e.width+c]
		if k.count < 0 {
			continue
		}
		d := e.totals[c].add(k.value, k.count)
		if d == len(e.members[c]) {
			e.members[c] = append(e.members[c], 0)
		}
		e.members[c][d]++
	}
}

// compactIfSparse rebuilds a constraint's totals when most of its domains
// no longer have nodes (node churn with per-node domains).
func (e *ptsCacheEntry) compactIfSparse() {
	for c := 0; c < e.width; c++ {
		live := 0
		for _, m := range e.members[c] {
			if m > 0 {
				live++
			}
		}
		if total := e.totals[c].len(); total <= 16 || live*2 >= total {
			continue
		}
		e.totals[c] = ptsNewDomainCounts(live)
		e.members[c] = e.members[c][:0]
		for i := range e.gens {
			k := e.contrib[i*e.width+c]
			if k.count < 0 {
				continue
			}
			d := e.totals[c].add(k.value, k.count)
			if d == len(e.members[c]) {
				e.members[c] = append(e.members[c], 0)
			}
			e.members[c][d]++
		}
	}
}

// liveDomains copies constraint c's domains that still have nodes.
func (e *ptsCacheEntry) liveDomains(c int) ptsDomainCounts {
	t := &e.totals[c]
	d := ptsNewDomainCounts(t.len())
	for i, v := range t.values {
		if e.members[c][i] > 0 {
			d.add(v, t.counts[i])
		}
	}
	return d
}

// ptsSignature identifies a counting question; see the top of the file.
func ptsSignature(mode string, pod *corev1.Pod, cs []ptsConstraint, elig ptsEligibility) string {
	var b strings.Builder
	b.WriteString(mode)
	b.WriteByte(0)
	b.WriteString(pod.Namespace)
	for i := range cs {
		c := &cs[i]
		b.WriteByte(0)
		b.WriteString(c.topologyKey)
		b.WriteByte(0)
		b.WriteString(c.selector.String())
		b.WriteByte(0)
		for _, f := range []bool{c.countable, c.honorAffinity, c.honorTaints} {
			if f {
				b.WriteByte('1')
			} else {
				b.WriteByte('0')
			}
		}
	}
	if elig.anyAffinity {
		b.WriteString("\x00affinity")
		keys := make([]string, 0, len(pod.Spec.NodeSelector))
		for k := range pod.Spec.NodeSelector {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			b.WriteByte(0)
			b.WriteString(k)
			b.WriteByte('=')
			b.WriteString(pod.Spec.NodeSelector[k])
		}
		if ns := naPodRequiredAffinity(pod); ns != nil {
			b.WriteByte(0)
			b.WriteString(ns.String())
		}
	}
	if elig.anyTaints {
		b.WriteString("\x00tolerations")
		for _, t := range pod.Spec.Tolerations {
			b.WriteByte(0)
			b.WriteString(t.Key)
			b.WriteByte(0)
			b.WriteString(string(t.Operator))
			b.WriteByte(0)
			b.WriteString(t.Value)
			b.WriteByte(0)
			b.WriteString(string(t.Effect))
		}
	}
	return b.String()
}
