package plugins

import (
	"context"
	"errors"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

const ptsPreScoreKey framework.StateKey = "PreScore" + PodTopologySpreadName

// ptsIgnoredScore marks, between Score and NormalizeScore, a node that
// lacks a topology key: it gets 0 after normalizing and does not take part
// in the min/max. Real raw scores are never negative (maxSkew ≥ 1).
const ptsIgnoredScore = -1

// ptsPreScoreState is the ScheduleAnyway spreading computed in PreScore.
// It is read-only afterwards.
type ptsPreScoreState struct {
	constraints []ptsConstraint
	// requireAll: nodes missing a topology key are not scored. Off only
	// for System defaults, so that nodes without a zone label still
	// spread by hostname.
	requireAll bool
	// domains[i] counts matching pods per domain of constraint i, only
	// for the domains of feasible nodes; empty for hostname constraints,
	// which Score counts on the node itself.
	domains []ptsDomainCounts
	// perNode[i], for a hostname constraint, is the count of each node's
	// own matching pods by node name: the counter's totals, kept across
	// cycles and recounted only for nodes that changed, so Score does a
	// lookup instead of walking every pod of every scored node (the cost
	// that grew with pods² at density scale). It points into the
	// counter's entry, which is not changed before the next PreFilter or
	// PreScore, so it is valid for this cycle's Score only.
	perNode []*ptsDomainCounts
	// weights[i] is log(#domains+2): a constraint with many small
	// domains weighs more per pod than one with a few large ones.
	weights   []float64
	namespace string
}

func (s *ptsPreScoreState) Clone() framework.StateData { return s }

// PreScore finds the domains of the feasible nodes and counts matching
// pods in them over all nodes. Skip when there are no nodes or the pod
// has no ScheduleAnyway constraint.
func (pl *PodTopologySpread) PreScore(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, filtered []*framework.NodeInfo) *framework.Status {
	var all []*framework.NodeInfo
	if snap := pl.handle.Snapshot(); snap != nil {
		all = snap.NodeInfoList
	}
	if len(all) == 0 {
		return skipPodTopologySpread
	}
	cs, err := pl.ptsConstraintsFor(pod, corev1.ScheduleAnyway)
	if err != nil {
		return framework.AsStatus(fmt.Errorf("obtaining pod's soft topology spread constraints: %w", err))
	}
	if len(cs) == 0 {
		return skipPodTopologySpread
	}
	s := &ptsPreScoreState{
		constraints: cs,
		requireAll:  len(pod.Spec.TopologySpreadConstraints) > 0 || !pl.systemDefaulted,
		domains:     make([]ptsDomainCounts, len(cs)),
		weights:     make([]float64, len(cs)),
		perNode:     make([]*ptsDomainCounts, len(cs)),
		namespace:   pod.Namespace,
	}

	// Domains come from the feasible nodes only: a domain no feasible
	// node is in cannot receive the pod, so its count does not matter.
	ignored := 0
	for _, ni := range filtered {
		node := ni.Node()
		if node == nil {
			continue
		}
		if s.requireAll && !ptsHasAllKeys(node.Labels, cs) {
			ignored++
			continue
		}
		for c := range cs {
			if !cs[c].hostname {
				// A node without the key lands in the "" domain, as
				// upstream (only possible with System defaults).
				if v := node.Labels[cs[c].topologyKey]; s.domains[c].find(v) < 0 {
					s.domains[c].add(v, 0)
				}
			}
		}
	}
	for c := range cs {
		size := s.domains[c].len()
		if cs[c].hostname {
			size = len(filtered) - ignored
		}
		s.weights[c] = math.Log(float64(size + 2))
	}

	// Counts come from all nodes: pods on infeasible nodes still make
	// their domain crowded.
	req := naRequiredOf(pod)
	elig := ptsEligibilityOf(cs)
	mode := "score"
	if s.requireAll {
		mode = "score-all-keys"
	}
	err = pl.counter.count(ctx, pl.parallelizer, ptsSignature(mode, pod, cs, elig), len(cs), all, pl.snapshot(), func(ni *framework.NodeInfo, out []ptsContrib) {
		node := ni.Node()
		if node == nil || (s.requireAll && !ptsHasAllKeys(node.Labels, cs)) {
			return
		}
		affinityOK, taintsOK := elig.check(pod, &req, node)
		for c := range cs {
			switch {
			case cs[c].hostname:
				// Upstream counts the node's own pods without the
				// inclusion policies; keyed by the unique node name.
				out[c] = ptsContrib{value: ni.Name(), count: ptsCountMatching(ni.Pods, &cs[c], pod.Namespace)}
			case cs[c].includes(affinityOK, taintsOK):
				out[c] = ptsContrib{value: node.Labels[cs[c].topologyKey], count: ptsCountMatching(ni.Pods, &cs[c], pod.Namespace)}
			}
		}
	}, func(e *ptsCacheEntry) {
		for c := range cs {
			if cs[c].hostname {
				s.perNode[c] = &e.totals[c]
				continue
			}
			d := &s.domains[c]
			for i, v := range d.values {
				d.counts[i] = e.totals[c].get(v)
			}
		}
	})
	if err != nil {
		return framework.AsStatus(err)
	}
	state.Write(ptsPreScoreKey, s)
	return nil
}

// Score is Σ over the constraints whose key the node has of
// count·weight + (maxSkew-1), rounded; the maxSkew term damps the
// differences a larger tolerated skew should not care about.
func (pl *PodTopologySpread) Score(_ context.Context, state *framework.CycleState, _ *corev1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := state.Read(ptsPreScoreKey).(*ptsPreScoreState)
	if !ok || s == nil {
		return 0, framework.AsStatus(fmt.Errorf("reading %q from cycle state: not found", ptsPreScoreKey))
	}
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(errors.New("node not found"))
	}
	if s.requireAll && !ptsHasAllKeys(node.Labels, s.constraints) {
		return ptsIgnoredScore, nil
	}
	var score float64
	for c := range s.constraints {
		con := &s.constraints[c]
		v, ok := node.Labels[con.topologyKey]
		if !ok {
			continue
		}
		var cnt int64
		if con.hostname {
			// Upstream counts the node's own pods here without the
			// inclusion policies; so did PreScore, for every node.
			if pn := s.perNode[c]; pn != nil {
				cnt = pn.get(nodeInfo.Name())
			} else {
				cnt = ptsCountMatching(nodeInfo.Pods, con, s.namespace)
			}
		} else {
			cnt = s.domains[c].get(v)
		}
		score += float64(cnt)*s.weights[c] + float64(con.maxSkew-1)
	}
	return int64(math.Round(score)), nil
}

func (pl *PodTopologySpread) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore maps raw scores to MaxNodeScore·(max+min-score)/max: the
// emptiest node gets close to 100, the most crowded the lowest. Ignored
// nodes get 0.
func (pl *PodTopologySpread) NormalizeScore(_ context.Context, state *framework.CycleState, _ *corev1.Pod, scores []framework.NodeScore) *framework.Status {
	if _, ok := state.Read(ptsPreScoreKey).(*ptsPreScoreState); !ok {
		return framework.AsStatus(fmt.Errorf("reading %q from cycle state: not found", ptsPreScoreKey))
	}
	var lo int64 = math.MaxInt64
	var hi int64
	for i := range scores {
		sc := scores[i].Score
		if sc == ptsIgnoredScore {
			continue
		}
		lo = min(lo, sc)
		hi = max(hi, sc)
	}
	for i := range scores {
		sc := scores[i].Score
		switch {
		case sc == ptsIgnoredScore:
			scores[i].Score = 0
		case hi == 0:
			scores[i].Score = framework.MaxNodeScore
		default:
			scores[i].Score = framework.MaxNodeScore * (hi + lo - sc) / hi
		}
	}
	return nil
}
