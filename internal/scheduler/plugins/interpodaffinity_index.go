package plugins

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// The InterPodAffinity index (see the InterPodAffinity doc comment): term
// groups and label groups of the existing pods, kept in step with the
// snapshot by NodeInfo generation, and memos of which groups an incoming
// pod or term matched.

// ipaCounts counts pods per value of one topology key.
type ipaCounts struct {
	counts map[string]int64
	total  int64
}

func (c *ipaCounts) add(v string, d int64) {
	if c.counts == nil {
		c.counts = map[string]int64{}
	}
	if n := c.counts[v] + d; n == 0 {
		delete(c.counts, v)
	} else {
		c.counts[v] = n
	}
	c.total += d
}

// ipaTermGroup is one distinct term of existing pods with the number of
// pods carrying it per value of its topology key.
type ipaTermGroup struct {
	key  string
	term framework.AffinityTerm
	// weight is the signed score weight (score groups only).
	weight int64
	anti   bool
	ipaCounts
	// refs counts the pods carrying the term, also those on nodes
	// without the topology label; the group is dropped at zero.
	refs int
}

func (g *ipaTermGroup) addNode(node *corev1.Node, d int64) {
	if v, ok := node.Labels[g.term.TopologyKey]; ok {
		g.add(v, d)
	}
}

// ipaLabelGroup is the existing pods sharing a namespace and labels, with
// counts per value of every tracked topology key.
type ipaLabelGroup struct {
	key   string
	rep   *corev1.Pod // any member: matching reads only namespace and labels
	byKey map[string]*ipaCounts
	refs  int
}

func (g *ipaLabelGroup) addNode(node *corev1.Node, keys []string, d int64) {
	for _, k := range keys {
		if v, ok := node.Labels[k]; ok {
			g.byKey[k].add(v, d)
		}
	}
}

// ipaContrib is what one pod on a node contributed to the index.
type ipaContrib struct {
	pi    *framework.PodInfo
	terms []*ipaTermGroup
	label *ipaLabelGroup
}

// ipaNodeEntry is the index's memory of one node: the NodeInfo and
// generation last synced, the node object whose labels the counts used,
// and each pod's contribution.
type ipaNodeEntry struct {
	name  string
	ni    *framework.NodeInfo
	gen   int64
	node  *corev1.Node
	pods  []ipaContrib
	epoch uint64
}

// ipaTable tracks the nodes of one snapshot list.
type ipaTable struct {
	byName map[string]*ipaNodeEntry
	// order mirrors the last list. When the next list holds the same
	// nodes in the same order (the usual case: the cache patches changed
	// NodeInfos in place), a sequential walk comparing pointers and
	// generations finds the changes without map lookups; the slot keeps
	// them side by side so the walk touches little memory.
	order []ipaSlot
	epoch uint64
	// spare, seen and logged are diff's buffers, kept across cycles.
	spare  []ipaSlot
	seen   []bool
	logged []int32
	// ver is the snapshot list version order mirrors, when the list was
	// verSnap's NodeInfoList (see diffList).
	ver     framework.ListVersion
	verSnap *framework.Snapshot
}

// diffList is diff for a list that may be snap's NodeInfoList: when the
// table mirrors that list as of a version the snapshot can still answer
// for, only the positions logged since are compared, instead of every
// NodeInfo of the cluster.
func (t *ipaTable) diffList(snap *framework.Snapshot, list []*framework.NodeInfo) (changed []ipaChange, dropped []*ipaNodeEntry) {
	isList := snap != nil && len(list) > 0 && len(list) == len(snap.NodeInfoList) && &list[0] == &snap.NodeInfoList[0]
	if isList && t.verSnap == snap && len(t.order) == len(list) {
		var ok bool
		if t.logged, ok = snap.ChangedSince(t.ver, t.logged[:0]); ok && t.loggedSameNodes(list) {
			for _, p := range t.logged {
				sl, ni := &t.order[p], list[p]
				if sl.ni != ni || sl.gen != ni.Generation {
					sl.ni, sl.gen = ni, ni.Generation
					changed = append(changed, ipaChange{sl.e, ni})
				}
			}
			t.ver = snap.ListVersion()
			return changed, nil
		}
	}
	changed, dropped = t.diff(list)
	t.ver, t.verSnap = framework.ListVersion{}, nil
	if isList && len(t.order) == len(list) {
		t.ver, t.verSnap = snap.ListVersion(), snap
	}
	return changed, dropped
}

// loggedSameNodes reports whether every logged position still holds the
// node the table has there (a NodeInfo swapped for a clone), checked
// before diffList changes anything.
func (t *ipaTable) loggedSameNodes(list []*framework.NodeInfo) bool {
	for _, p := range t.logged {
		ni := list[p]
		if ni.Node() == nil || ni.Name() != t.order[p].e.name {
			return false
		}
	}
	return true
}

type ipaSlot struct {
	ni  *framework.NodeInfo
	gen int64
	e   *ipaNodeEntry
}

type ipaChange struct {
	e  *ipaNodeEntry
	ni *framework.NodeInfo
}

// diff returns the nodes whose NodeInfo changed and the entries whose
// node left the list, and records the new list. The caller must apply
// every change it is given.
//
// It walks the new list against the last one: a node at the expected
// position is matched by pointer or name without a map lookup, so a list
// that gained or lost a few nodes (a pod with anti-affinity landing on a
// node that had none) costs a lookup per inserted node, not one per node.
// Nodes found only by name are marked with the table's epoch; slots of
// the last list neither matched nor marked were dropped.
func (t *ipaTable) diff(list []*framework.NodeInfo) (changed []ipaChange, dropped []*ipaNodeEntry) {
	if t.byName == nil {
		t.byName = map[string]*ipaNodeEntry{}
	}
	t.epoch++
	old := t.order
	seen := grow(&t.seen, len(old))
	clear(seen)
	order := t.spare[:0]
	j := 0
	for _, ni := range list {
		if ni.Node() == nil {
			continue
		}
		if j < len(old) {
			if sl := &old[j]; sl.ni == ni || sl.e.name == ni.Name() {
				// The scheduler cache swaps a changed node's NodeInfo for a
				// new clone at the same position.
				if sl.ni != ni || sl.gen != ni.Generation {
					changed = append(changed, ipaChange{sl.e, ni})
				}
				seen[j] = true
				order = append(order, ipaSlot{ni: ni, gen: ni.Generation, e: sl.e})
				j++
				continue
			}
		}
		e := t.byName[ni.Name()]
		if e == nil {
			e = &ipaNodeEntry{name: ni.Name()}
			t.byName[e.name] = e
		} else if k := ipaFindAhead(old, j, e); k >= 0 {
			// The slots before it left the list (or moved; the epoch
			// tells at the end).
			j = k + 1
			seen[k] = true
		}
		e.epoch = t.epoch
		if e.ni != ni || e.gen != ni.Generation {
			changed = append(changed, ipaChange{e, ni})
		}
		order = append(order, ipaSlot{ni: ni, gen: ni.Generation, e: e})
	}
	for k := range old {
		if e := old[k].e; !seen[k] && e.epoch != t.epoch {
			dropped = append(dropped, e)
			delete(t.byName, e.name)
		}
	}
	clear(old) // the spare buffer must not keep NodeInfos alive
	t.order, t.spare = order, old[:0]
	return changed, dropped
}

// ipaFindAhead returns the position of e in the next few slots of old
// from j, or -1.
func ipaFindAhead(old []ipaSlot, j int, e *ipaNodeEntry) int {
	for k := j; k < min(j+8, len(old)); k++ {
		if old[k].e == e {
			return k
		}
	}
	return -1
}

// grow returns (*buf)[:n], reallocating only when it is too short.
func grow[T any](buf *[]T, n int) []T {
	if cap(*buf) < n {
		*buf = make([]T, n)
	}
	*buf = (*buf)[:n]
	return *buf
}

// ipaIndex is the cross-cycle index described on InterPodAffinity. All
// methods require mu.
type ipaIndex struct {
	mu         sync.Mutex
	par        framework.Parallelizer
	hardWeight int64

	termNodes   ipaTable
	antiGroups  map[string]*ipaTermGroup
	scoreGroups map[string]*ipaTermGroup

	labelNodes  ipaTable
	labelGroups map[string]*ipaLabelGroup
	labelKeys   []string

	// Which groups matched an incoming pod or term depends only on the
	// set of groups, not on their counts: the memos stay valid until a
	// group is created or dropped (the epochs count those).
	termEpoch, labelEpoch uint64
	termMemo              map[string]ipaMemo[*ipaTermGroup]
	labelMemo             map[string]ipaMemo[*ipaLabelGroup]
}

type ipaMemo[G any] struct {
	epoch  uint64
	groups []G
}

// ipaMemoMax bounds each memo; past it the memo starts over.
const ipaMemoMax = 4096

func ipaMemoize[G any](memo map[string]ipaMemo[G], key string, epoch uint64, all func(yield func(G) bool), match func(G) bool) []G {
	if m, ok := memo[key]; ok && m.epoch == epoch {
		return m.groups
	}
	var out []G
	all(func(g G) bool {
		if match(g) {
			out = append(out, g)
		}
		return true
	})
	if len(memo) >= ipaMemoMax {
		clear(memo)
	}
	memo[key] = ipaMemo[G]{epoch: epoch, groups: out}
	return out
}

// termGroupsMatching returns the groups of kind (antiGroups or
// scoreGroups) whose term the pod matches, memoized by the pod's
// namespace, labels and namespace labels. With no groups (no existing pod
// has such terms: the common case) it builds no key.
func (x *ipaIndex) termGroupsMatching(kind string, groups map[string]*ipaTermGroup, pod *corev1.Pod, nsLabels labels.Set) []*ipaTermGroup {
	if len(groups) == 0 {
		return nil
	}
	return ipaMemoize(x.termMemo, kind+ipaPodKey(pod, nsLabels), x.termEpoch, maps.Values(groups),
		func(g *ipaTermGroup) bool { return g.term.Matches(pod, nsLabels) })
}

// labelGroupsMatching returns the label groups whose pods match the
// terms: all of them (affinity) or, with one term, that one.
func (x *ipaIndex) labelGroupsMatching(terms []framework.AffinityTerm) []*ipaLabelGroup {
	var b strings.Builder
	for i := range terms {
		b.WriteString(ipaTermKey(&terms[i]))
		b.WriteByte(1)
	}
	return ipaMemoize(x.labelMemo, b.String(), x.labelEpoch, maps.Values(x.labelGroups),
		func(g *ipaLabelGroup) bool { return ipaMatchesAll(terms, g.rep) })
}

// ipaPodKey identifies what matching an existing pod's term sees of an
// incoming pod.
func ipaPodKey(pod *corev1.Pod, nsLabels labels.Set) string {
	return ipaLabelKey(pod) + "\x01" + nsLabels.String()
}

func newIPAIndex(hardWeight int64, par framework.Parallelizer) *ipaIndex {
	return &ipaIndex{
		par:         par,
		hardWeight:  hardWeight,
		antiGroups:  map[string]*ipaTermGroup{},
		scoreGroups: map[string]*ipaTermGroup{},
		labelGroups: map[string]*ipaLabelGroup{},
		termMemo:    map[string]ipaMemo[*ipaTermGroup]{},
		labelMemo:   map[string]ipaMemo[*ipaLabelGroup]{},
	}
}

// ipaTermSpec names one group a pod's term belongs to.
type ipaTermSpec struct {
	key    string
	term   *framework.AffinityTerm
	weight int64
	anti   bool
}

// ipaPlan is the work for one changed node, computed (possibly in
// parallel) before it is applied to the shared groups.
type ipaPlan struct {
	keep    []ipaContrib
	removed []ipaContrib
	added   []*framework.PodInfo
	specs   [][]ipaTermSpec // term side, per added pod
	lkeys   []string        // label side, per added pod
	relabel bool
}

// planParallelMin is the number of changed nodes from which the plan is
// computed in parallel (a cold start or a big snapshot change).
const ipaPlanParallelMin = 64

func (x *ipaIndex) plan(changed []ipaChange, pods func(*framework.NodeInfo) []*framework.PodInfo, keys func(p *ipaPlan, pi *framework.PodInfo)) []ipaPlan {
	plans := make([]ipaPlan, len(changed))
	one := func(i int) {
		c, p := changed[i], &plans[i]
		node := c.ni.Node()
		p.relabel = c.e.node != nil && !maps.Equal(c.e.node.Labels, node.Labels)
		p.keep, p.removed, p.added = ipaDiffPods(c.e.pods, pods(c.ni))
		for _, pi := range p.added {
			keys(p, pi)
		}
	}
	if len(changed) >= ipaPlanParallelMin && x.par != nil {
		// Not the caller's context: a plan cut short would leave the
		// index inconsistent, and the work is bounded by the snapshot.
		x.par.Until(context.Background(), len(changed), one)
	} else {
		for i := range changed {
			one(i)
		}
	}
	return plans
}

// ipaDiffPods splits a node's previous contributions and current pods into
// kept, removed and added, by PodInfo identity (a changed pod gets a new
// PodInfo).
func ipaDiffPods(old []ipaContrib, cur []*framework.PodInfo) (keep, removed []ipaContrib, added []*framework.PodInfo) {
	if len(old) == 0 {
		return nil, nil, cur
	}
	used := make([]bool, len(old))
	var idx map[*framework.PodInfo]int
	if len(old) > 16 {
		idx = make(map[*framework.PodInfo]int, len(old))
		for i := range old {
			idx[old[i].pi] = i
		}
	}
	keep = make([]ipaContrib, 0, len(cur))
	for _, pi := range cur {
		j := -1
		if idx != nil {
			if k, ok := idx[pi]; ok {
				j = k
			}
		} else {
			for k := range old {
				if old[k].pi == pi {
					j = k
					break
				}
			}
		}
		if j >= 0 && !used[j] {
			used[j] = true
			keep = append(keep, old[j])
		} else {
			added = append(added, pi)
		}
	}
	for j := range old {
		if !used[j] {
			removed = append(removed, old[j])
		}
	}
	return keep, removed, added
}

// syncTerms brings the term groups up to date with the snapshot's nodes
// that host pods with affinity terms.
func (x *ipaIndex) syncTerms(list []*framework.NodeInfo) {
	changed, dropped := x.termNodes.diff(list)
	for _, e := range dropped {
		for _, c := range e.pods {
			x.releaseTerms(c, e.node)
		}
	}
	if len(changed) == 0 {
		return
	}
	plans := x.plan(changed, func(ni *framework.NodeInfo) []*framework.PodInfo { return ni.PodsWithAffinity },
		func(p *ipaPlan, pi *framework.PodInfo) { p.specs = append(p.specs, x.termSpecs(pi)) })
	for i, c := range changed {
		p := &plans[i]
		e, node := c.e, c.ni.Node()
		for _, rc := range p.removed {
			x.releaseTerms(rc, e.node)
		}
		if p.relabel {
			for _, kc := range p.keep {
				for _, g := range kc.terms {
					g.addNode(e.node, -1)
					g.addNode(node, 1)
				}
			}
		}
		for j, pi := range p.added {
			p.keep = append(p.keep, x.acquireTerms(pi, p.specs[j], node))
		}
		e.pods, e.node, e.ni, e.gen = p.keep, node, c.ni, c.ni.Generation
	}
}

// termSpecs lists the groups a pod's terms belong to. Pure: it may run
// in parallel.
func (x *ipaIndex) termSpecs(pi *framework.PodInfo) []ipaTermSpec {
	var out []ipaTermSpec
	for i := range pi.RequiredAntiAffinityTerms {
		t := &pi.RequiredAntiAffinityTerms[i]
		out = append(out, ipaTermSpec{key: ipaTermKey(t), term: t, anti: true})
	}
	if x.hardWeight > 0 {
		for i := range pi.RequiredAffinityTerms {
			t := &pi.RequiredAffinityTerms[i]
			out = append(out, ipaTermSpec{key: ipaTermKey(t) + "\x00" + strconv.FormatInt(x.hardWeight, 10), term: t, weight: x.hardWeight})
		}
	}
	for i := range pi.PreferredAffinityTerms {
		t := &pi.PreferredAffinityTerms[i]
		w := int64(t.Weight)
		out = append(out, ipaTermSpec{key: ipaTermKey(&t.AffinityTerm) + "\x00" + strconv.FormatInt(w, 10), term: &t.AffinityTerm, weight: w})
	}
	for i := range pi.PreferredAntiAffinityTerms {
		t := &pi.PreferredAntiAffinityTerms[i]
		w := -int64(t.Weight)
		out = append(out, ipaTermSpec{key: ipaTermKey(&t.AffinityTerm) + "\x00" + strconv.FormatInt(w, 10), term: &t.AffinityTerm, weight: w})
	}
	return out
}

func (x *ipaIndex) acquireTerms(pi *framework.PodInfo, specs []ipaTermSpec, node *corev1.Node) ipaContrib {
	c := ipaContrib{pi: pi, terms: make([]*ipaTermGroup, 0, len(specs))}
	for _, s := range specs {
		groups := x.scoreGroups
		if s.anti {
			groups = x.antiGroups
		}
		g := groups[s.key]
		if g == nil {
			g = &ipaTermGroup{key: s.key, term: *s.term, weight: s.weight, anti: s.anti}
			groups[s.key] = g
			x.termEpoch++
		}
		g.refs++
		g.addNode(node, 1)
		c.terms = append(c.terms, g)
	}
	return c
}

func (x *ipaIndex) releaseTerms(c ipaContrib, node *corev1.Node) {
	for _, g := range c.terms {
		g.addNode(node, -1)
		if g.refs--; g.refs == 0 {
			x.termEpoch++
			if g.anti {
				delete(x.antiGroups, g.key)
			} else {
				delete(x.scoreGroups, g.key)
			}
		}
	}
}

// syncLabels brings the label groups up to date with all snapshot nodes.
func (x *ipaIndex) syncLabels(snap *framework.Snapshot, list []*framework.NodeInfo) {
	changed, dropped := x.labelNodes.diffList(snap, list)
	for _, e := range dropped {
		for _, c := range e.pods {
			x.releaseLabel(c, e.node)
		}
	}
	if len(changed) == 0 {
		return
	}
	plans := x.plan(changed, func(ni *framework.NodeInfo) []*framework.PodInfo { return ni.Pods },
		func(p *ipaPlan, pi *framework.PodInfo) { p.lkeys = append(p.lkeys, ipaLabelKey(pi.Pod)) })
	for i, c := range changed {
		p := &plans[i]
		e, node := c.e, c.ni.Node()
		for _, rc := range p.removed {
			x.releaseLabel(rc, e.node)
		}
		if p.relabel {
			for _, kc := range p.keep {
				kc.label.addNode(e.node, x.labelKeys, -1)
				kc.label.addNode(node, x.labelKeys, 1)
			}
		}
		for j, pi := range p.added {
			g := x.labelGroups[p.lkeys[j]]
			if g == nil {
				g = &ipaLabelGroup{key: p.lkeys[j], rep: pi.Pod, byKey: make(map[string]*ipaCounts, len(x.labelKeys))}
				for _, k := range x.labelKeys {
					g.byKey[k] = &ipaCounts{}
				}
				x.labelGroups[g.key] = g
				x.labelEpoch++
			}
			g.refs++
			g.addNode(node, x.labelKeys, 1)
			p.keep = append(p.keep, ipaContrib{pi: pi, label: g})
		}
		e.pods, e.node, e.ni, e.gen = p.keep, node, c.ni, c.ni.Generation
	}
}

func (x *ipaIndex) releaseLabel(c ipaContrib, node *corev1.Node) {
	g := c.label
	g.addNode(node, x.labelKeys, -1)
	if g.refs--; g.refs == 0 {
		delete(x.labelGroups, g.key)
		x.labelEpoch++
	}
}

// trackKey makes the label groups count pods per value of key from now
// on. The first request for a key walks every indexed pod once.
func (x *ipaIndex) trackKey(key string) {
	if slices.Contains(x.labelKeys, key) {
		return
	}
	x.labelKeys = append(x.labelKeys, key)
	for _, g := range x.labelGroups {
		g.byKey[key] = &ipaCounts{}
	}
	for _, e := range x.labelNodes.byName {
		if e.node == nil {
			continue
		}
		v, ok := e.node.Labels[key]
		if !ok {
			continue
		}
		for _, c := range e.pods {
			c.label.byKey[key].add(v, 1)
		}
	}
}

// ipaTermKey identifies a term: two terms with the same key match the
// same pods in the same topology. Selector strings are canonical (sorted
// requirements), and the empty and the nothing selector, which print
// alike, are told apart.
func ipaTermKey(t *framework.AffinityTerm) string {
	var b strings.Builder
	b.WriteString(t.TopologyKey)
	b.WriteByte(0)
	ipaWriteSelector(&b, t.Selector)
	b.WriteByte(0)
	for i, ns := range ipaSortedKeys(t.Namespaces) {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(ns)
	}
	b.WriteByte(0)
	ipaWriteSelector(&b, t.NamespaceSelector)
	return b.String()
}

func ipaSortedKeys[M ~map[string]V, V any](m M) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func ipaWriteSelector(b *strings.Builder, s labels.Selector) {
	switch {
	case s == nil:
		b.WriteString("~")
	case s.Empty():
		b.WriteString("*")
	default:
		b.WriteString("=")
		b.WriteString(s.String())
	}
}

// ipaLabelKey identifies what term matching sees of a pod: its namespace
// and labels.
func ipaLabelKey(pod *corev1.Pod) string {
	var b strings.Builder
	b.WriteString(pod.Namespace)
	for _, k := range ipaSortedKeys(pod.Labels) {
		b.WriteByte(0)
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(pod.Labels[k])
	}
	return b.String()
}
