package plugins

import (
	"context"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

const ipaScoreKey framework.StateKey = "PreScore" + InterPodAffinityName

// ipaScoreRef adds weight × (matching pods in the node's domain of key).
type ipaScoreRef struct {
	key    string
	weight int64
	counts map[string]int64
}

type ipaScoreState struct{ refs []ipaScoreRef }

func (s *ipaScoreState) Clone() framework.StateData { return s }

// PreScore collects the weighted groups that score the pod:
//   - the pod's preferred affinity (+weight) and anti-affinity (-weight)
//     terms, against label groups of existing pods;
//   - existing pods' required affinity (+hardPodAffinityWeight),
//     preferred affinity (+weight) and anti-affinity (-weight) terms
//     that the pod matches.
//
// It returns Skip when none of them counts a pod.
func (pl *InterPodAffinity) PreScore(_ context.Context, cs *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) *framework.Status {
	var prefAff, prefAnti []corev1.WeightedPodAffinityTerm
	if a := pod.Spec.Affinity; a != nil {
		if a.PodAffinity != nil {
			prefAff = a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		}
		if a.PodAntiAffinity != nil {
			prefAnti = a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
		}
	}
	hasConstraints := len(prefAff)+len(prefAnti) > 0
	if pl.ignorePreferredOfExisting && !hasConstraints {
		return skipInterPodAffinity
	}
	type weighted struct {
		term   framework.AffinityTerm
		weight int64
	}
	terms := make([]weighted, 0, len(prefAff)+len(prefAnti))
	for _, side := range []struct {
		sign int64
		in   []corev1.WeightedPodAffinityTerm
	}{{1, prefAff}, {-1, prefAnti}} {
		sign, in := side.sign, side.in
		for i := range in {
			t, err := framework.NewAffinityTerm(pod, &in[i].PodAffinityTerm)
			if err != nil {
				return framework.AsStatus(fmt.Errorf("failed to parse pod: %w", err))
			}
			if err := pl.ipaResolveNamespaces(&t); err != nil {
				return framework.AsStatus(err)
			}
			terms = append(terms, weighted{t, sign * int64(in[i].Weight)})
		}
	}
	nsLabels := pl.ipaNamespaceLabels(pod.Namespace)
	synced, _ := cs.Read(ipaSyncedKey).(*ipaSynced)
	snap := pl.h.Snapshot()
	x := pl.idx
	x.mu.Lock()
	defer x.mu.Unlock()

	if synced == nil || !synced.terms {
		x.syncTerms(snap.HavePodsWithAffinityList)
	}
	var refs []ipaScoreRef
	for _, g := range x.termGroupsMatching("score", x.scoreGroups, pod, nsLabels) {
		if g.total > 0 {
			refs = append(refs, ipaScoreRef{g.term.TopologyKey, g.weight, g.counts})
		}
	}
	if hasConstraints {
		if synced == nil || !synced.labels {
			x.syncLabels(snap, snap.NodeInfoList)
		}
		ipaMarkSynced(cs, true, true)
		for i := range terms {
			x.trackKey(terms[i].term.TopologyKey)
		}
		for i := range terms {
			t := &terms[i].term
			var matched []map[string]int64
			for _, g := range x.labelGroupsMatching([]framework.AffinityTerm{*t}) {
				if c := g.byKey[t.TopologyKey]; c.total > 0 {
					matched = append(matched, c.counts)
				}
			}
			b := ipaBuckets{{key: t.TopologyKey, counts: matched}}
			b.compact()
			for _, m := range b[0].counts {
				refs = append(refs, ipaScoreRef{t.TopologyKey, terms[i].weight, m})
			}
		}
	} else {
		ipaMarkSynced(cs, true, false)
	}
	if len(refs) == 0 {
		return skipInterPodAffinity
	}
	cs.Write(ipaScoreKey, &ipaScoreState{refs: refs})
	return nil
}

// Score sums the weights of the pods in the node's domains; positive for
// affinity, negative for anti-affinity. NormalizeScore scales it.
func (pl *InterPodAffinity) Score(_ context.Context, cs *framework.CycleState, _ *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := cs.Read(ipaScoreKey).(*ipaScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("reading %q from cycle state: not found", ipaScoreKey))
	}
	node := ni.Node()
	if node == nil {
		return 0, framework.AsStatus(fmt.Errorf("node not found"))
	}
	var score int64
	for i := range s.refs {
		r := &s.refs[i]
		if v, ok := node.Labels[r.key]; ok {
			score += r.weight * r.counts[v]
		}
	}
	return score, nil
}

func (pl *InterPodAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps the scores min-max onto 0..MaxNodeScore; all equal
// scores become 0.
func (pl *InterPodAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *corev1.Pod, scores []framework.NodeScore) *framework.Status {
	if len(scores) == 0 {
		return nil
	}
	minS, maxS := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range scores {
		minS = min(minS, scores[i].Score)
		maxS = max(maxS, scores[i].Score)
	}
	diff := maxS - minS
	for i := range scores {
		f := float64(0)
		if diff > 0 {
			f = float64(framework.MaxNodeScore) * float64(scores[i].Score-minS) / float64(diff)
		}
		scores[i].Score = int64(f)
	}
	return nil
}
