package plugins

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// Reasons, as upstream words them.
const (
	ipaReasonAffinity         = "node(s) didn't match pod affinity rules"
	ipaReasonAntiAffinity     = "node(s) didn't match pod anti-affinity rules"
	ipaReasonExistingAntiAffi = "node(s) didn't satisfy existing pods anti-affinity rules"
)

const ipaFilterKey framework.StateKey = "PreFilter" + InterPodAffinityName

// ipaPair is a topology domain: a topology key and one of its values.
type ipaPair struct{ key, value string }

// ipaBucket sums pod counts for one topology key over several count maps
// (one per matching index group). The maps belong to the index: read
// only.
type ipaBucket struct {
	key    string
	counts []map[string]int64
}

func (b *ipaBucket) sum(v string) (n int64) {
	for _, m := range b.counts {
		n += m[v]
	}
	return n
}

type ipaBuckets []ipaBucket

func (bs *ipaBuckets) add(key string, m map[string]int64) {
	for i := range *bs {
		if (*bs)[i].key == key {
			(*bs)[i].counts = append((*bs)[i].counts, m)
			return
		}
	}
	*bs = append(*bs, ipaBucket{key: key, counts: []map[string]int64{m}})
}

// ensure adds an empty bucket for key, so a delta under a key no group
// counted is still looked at.
func (bs *ipaBuckets) ensure(key string) {
	for i := range *bs {
		if (*bs)[i].key == key {
			return
		}
	}
	*bs = append(*bs, ipaBucket{key: key})
}

func (bs ipaBuckets) count(key, v string) int64 {
	for i := range bs {
		if bs[i].key == key {
			return bs[i].sum(v)
		}
	}
	return 0
}

// ipaCompactMin is the number of maps in a bucket from which they are
// summed into one, so that Filter stays a few lookups per node when a
// term matches many groups (e.g. one pod per StatefulSet ordinal).
const ipaCompactMin = 8

func (bs ipaBuckets) compact() {
	for i := range bs {
		b := &bs[i]
		if len(b.counts) < ipaCompactMin {
			continue
		}
		size := 0
		for _, m := range b.counts {
			size += len(m)
		}
		merged := make(map[string]int64, size)
		for _, m := range b.counts {
			for v, n := range m {
				merged[v] += n
			}
		}
		b.counts = []map[string]int64{merged}
	}
}

// violates reports whether a domain of the node holds a count above zero.
// The node's labels come from ni.Label, which answers the usual
// hostname and zone keys without a map lookup.
func (bs ipaBuckets) violates(ni *framework.NodeInfo, delta map[ipaPair]int64) bool {
	for i := range bs {
		b := &bs[i]
		if v, ok := ni.Label(b.key); ok && b.sum(v)+delta[ipaPair{b.key, v}] > 0 {
			return true
		}
	}
	return false
}

// ipaFilterState is PreFilter's result. Buckets reference index maps;
// the deltas hold what AddPod/RemovePod changed on a clone.
type ipaFilterState struct {
	pod      *corev1.Pod
	nsLabels labels.Set
	// affinity and antiAffinity are the pod's required terms with
	// namespace selectors resolved.
	affinity, antiAffinity []framework.AffinityTerm
	// selfMatch: the pod matches all its own affinity terms.
	selfMatch bool

	// existing: domains with existing pods whose required anti-affinity
	// the pod matches.
	existing      ipaBuckets
	existingDelta map[ipaPair]int64
	// aff: domains with pods matching all affinity terms; affTotal is the
	// number of (term, matching pod on a labelled node) pairs, zero when
	// no such pod exists anywhere.
	aff      ipaBuckets
	affDelta map[ipaPair]int64
	affTotal int64
	// anti: domains with pods matching an anti-affinity term.
	anti      ipaBuckets
	antiDelta map[ipaPair]int64
}

func (s *ipaFilterState) Clone() framework.StateData {
	c := *s
	c.existing = slices.Clone(s.existing)
	c.aff = slices.Clone(s.aff)
	c.anti = slices.Clone(s.anti)
	c.existingDelta = maps.Clone(s.existingDelta)
	c.affDelta = maps.Clone(s.affDelta)
	c.antiDelta = maps.Clone(s.antiDelta)
	return &c
}

func ipaBump(m map[ipaPair]int64, p ipaPair, d int64) map[ipaPair]int64 {
	if m == nil {
		m = map[ipaPair]int64{}
	}
	if n := m[p] + d; n == 0 {
		delete(m, p)
	} else {
		m[p] = n
	}
	return m
}

// update accounts pi on node as added (d=1) or removed (d=-1).
func (s *ipaFilterState) update(pi *framework.PodInfo, node *corev1.Node, d int64) {
	if node == nil {
		return
	}
	for i := range pi.RequiredAntiAffinityTerms {
		t := &pi.RequiredAntiAffinityTerms[i]
		if v, ok := node.Labels[t.TopologyKey]; ok && t.Matches(s.pod, s.nsLabels) {
			s.existingDelta = ipaBump(s.existingDelta, ipaPair{t.TopologyKey, v}, d)
			s.existing.ensure(t.TopologyKey)
		}
	}
	if ipaMatchesAll(s.affinity, pi.Pod) {
		for i := range s.affinity {
			k := s.affinity[i].TopologyKey
			if v, ok := node.Labels[k]; ok {
				s.affDelta = ipaBump(s.affDelta, ipaPair{k, v}, d)
				s.affTotal += d
			}
		}
	}
	for i := range s.antiAffinity {
		t := &s.antiAffinity[i]
		if v, ok := node.Labels[t.TopologyKey]; ok && t.Matches(pi.Pod, nil) {
			s.antiDelta = ipaBump(s.antiDelta, ipaPair{t.TopologyKey, v}, d)
			s.anti.ensure(t.TopologyKey)
		}
	}
}

// PreFilter matches the pod against the index's groups. It returns Skip
// when the pod has no required terms and no existing pod's required
// anti-affinity matches it.
func (pl *InterPodAffinity) PreFilter(_ context.Context, cs *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	var affIn, antiIn []corev1.PodAffinityTerm
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			affIn = a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
		if a.PodAntiAffinity != nil {
			antiIn = a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
		}
	}
	aff, err := ipaParseTerms(pod, affIn)
	if err == nil {
		var anti []framework.AffinityTerm
		anti, err = ipaParseTerms(pod, antiIn)
		if err == nil {
			return pl.ipaPreFilter(cs, pod, aff, anti)
		}
	}
	return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("parsing pod: %+v", err))
}

func (pl *InterPodAffinity) ipaPreFilter(cs *framework.CycleState, pod *corev1.Pod, aff, anti []framework.AffinityTerm) (*framework.PreFilterResult, *framework.Status) {
	for _, terms := range [][]framework.AffinityTerm{aff, anti} {
		for i := range terms {
			if err := pl.ipaResolveNamespaces(&terms[i]); err != nil {
				return nil, framework.AsStatus(err)
			}
		}
	}
	s := &ipaFilterState{pod: pod, nsLabels: pl.ipaNamespaceLabels(pod.Namespace), affinity: aff, antiAffinity: anti}
	snap := pl.h.Snapshot()
	x := pl.idx
	x.mu.Lock()
	defer x.mu.Unlock()

	x.syncTerms(snap.HavePodsWithAffinityList)
	var existingTotal int64
	for _, g := range x.termGroupsMatching("anti", x.antiGroups, pod, s.nsLabels) {
		if g.total > 0 {
			s.existing.add(g.term.TopologyKey, g.counts)
			existingTotal += g.total
		}
	}
	s.existing.compact()
	if len(aff)+len(anti) == 0 {
		ipaMarkSynced(cs, true, false)
		if existingTotal == 0 {
			return nil, skipInterPodAffinity
		}
		cs.Write(ipaFilterKey, s)
		return nil, nil
	}

	x.syncLabels(snap, snap.NodeInfoList)
	ipaMarkSynced(cs, true, true)
	for _, terms := range [][]framework.AffinityTerm{aff, anti} {
		for i := range terms {
			x.trackKey(terms[i].TopologyKey)
		}
	}
	if len(aff) > 0 {
		for _, g := range x.labelGroupsMatching(aff) {
			for i := range aff {
				if c := g.byKey[aff[i].TopologyKey]; c.total > 0 {
					s.aff.add(aff[i].TopologyKey, c.counts)
					s.affTotal += c.total
				}
			}
		}
		s.selfMatch = ipaMatchesAll(aff, pod)
	}
	for i := range anti {
		k := anti[i].TopologyKey
		for _, g := range x.labelGroupsMatching(anti[i : i+1]) {
			if c := g.byKey[k]; c.total > 0 {
				s.anti.add(k, c.counts)
			}
		}
	}
	s.aff.compact()
	s.anti.compact()
	cs.Write(ipaFilterKey, s)
	return nil, nil
}

func (pl *InterPodAffinity) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod accounts a pod the framework tries the incoming pod with
// (nominated pods).
func (pl *InterPodAffinity) AddPod(_ context.Context, cs *framework.CycleState, _ *corev1.Pod, add *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	s, err := ipaReadFilterState(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.update(add, ni.Node(), 1)
	return nil
}

// RemovePod accounts a pod the framework tries the incoming pod without
// (preemption victims).
func (pl *InterPodAffinity) RemovePod(_ context.Context, cs *framework.CycleState, _ *corev1.Pod, rm *framework.PodInfo, ni *framework.NodeInfo) *framework.Status {
	s, err := ipaReadFilterState(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.update(rm, ni.Node(), -1)
	return nil
}

func ipaReadFilterState(cs *framework.CycleState) (*ipaFilterState, error) {
	s, ok := cs.Read(ipaFilterKey).(*ipaFilterState)
	if !ok {
		return nil, fmt.Errorf("reading %q from cycle state: not found", ipaFilterKey)
	}
	return s, nil
}

// Filter is O(terms) map lookups and allocates only to reject.
func (pl *InterPodAffinity) Filter(_ context.Context, cs *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, err := ipaReadFilterState(cs)
	if err != nil {
		return framework.AsStatus(err)
	}
	if ni.Node() == nil {
		return framework.AsStatus(errors.New("node not found"))
	}
	if !s.satisfiesAffinity(ni) {
		// No preemption on this node creates a matching pod.
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ipaReasonAffinity)
	}
	if s.anti.violates(ni, s.antiDelta) {
		return framework.NewStatus(framework.Unschedulable, ipaReasonAntiAffinity)
	}
	if s.existing.violates(ni, s.existingDelta) {
		return framework.NewStatus(framework.Unschedulable, ipaReasonExistingAntiAffi)
	}
	return nil
}

func (s *ipaFilterState) satisfiesAffinity(ni *framework.NodeInfo) bool {
	podsExist := true
	for i := range s.affinity {
		k := s.affinity[i].TopologyKey
		v, ok := ni.Label(k)
		if !ok {
			// Every topology key must exist on the node, also for the
			// first pod of a group.
			return false
		}
		if s.aff.count(k, v)+s.affDelta[ipaPair{k, v}] <= 0 {
			podsExist = false
		}
	}
	if podsExist {
		return true
	}
	// The first pod of a group with affinity to itself: no pod anywhere
	// matches the terms, but the pod does.
	return s.affTotal == 0 && s.selfMatch
}
