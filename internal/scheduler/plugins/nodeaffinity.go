package plugins

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// NodeAffinityName is the plugin's name in profiles.
const NodeAffinityName = "NodeAffinity"

// Reasons NodeAffinity reports; all are UnschedulableAndUnresolvable, as
// no preemption can change a node's labels.
const (
	ErrReasonNodeAffinity         = "node(s) didn't match Pod's node affinity/selector"
	ErrReasonNodeAffinityEnforced = "node(s) didn't match scheduler-enforced node affinity"
	ErrReasonNodeAffinityConflict = "pod affinity terms conflict"
)

const (
	naPreFilterKey framework.StateKey = "PreFilter" + NodeAffinityName
	naPreScoreKey  framework.StateKey = "PreScore" + NodeAffinityName
)

// NodeAffinity filters nodes by the pod's spec.nodeSelector and
// spec.affinity.nodeAffinity.requiredDuringScheduling... terms, and scores
// them by the weights of the preferred terms they match. A profile may add
// its own affinity (NodeAffinityArgs.addedAffinity) on top of every pod's.
//
// Matching is k8s.io/component-helpers' (what upstream's plugin uses):
//   - nodeSelector is a conjunction of key=value equalities;
//   - required terms are ORed; the expressions and fields inside one term
//     are ANDed; a term with neither matches nothing;
//   - a term that fails to parse (bad key, In without values, Gt with a
//     non-integer) never matches, but the other terms still may;
//   - matchFields only know metadata.name, with In/NotIn and one value.
type NodeAffinity struct {
	addedRequired  *nodeaffinity.NodeSelector             // nil: no added required affinity
	addedPreferred *nodeaffinity.PreferredSchedulingTerms // nil: no added preferred terms
}

var (
	_ framework.PreFilterPlugin   = (*NodeAffinity)(nil)
	_ framework.FilterPlugin      = (*NodeAffinity)(nil)
	_ framework.PreScorePlugin    = (*NodeAffinity)(nil)
	_ framework.ScorePlugin       = (*NodeAffinity)(nil)
	_ framework.ScoreExtensions   = (*NodeAffinity)(nil)
	_ framework.EnqueueExtensions = (*NodeAffinity)(nil)
)

// NewNodeAffinity builds the plugin. args is nil or *configv1.NodeAffinityArgs;
// an addedAffinity that does not parse is a configuration error.
func NewNodeAffinity(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	pl := &NodeAffinity{}
	var added *corev1.NodeAffinity
	switch a := args.(type) {
	case nil:
	case *configv1.NodeAffinityArgs:
		if a != nil {
			added = a.AddedAffinity
		}
	default:
		return nil, fmt.Errorf("%s: args are not of type NodeAffinityArgs, got %T", NodeAffinityName, args)
	}
	if added == nil {
		return pl, nil
	}
	if ns := added.RequiredDuringSchedulingIgnoredDuringExecution; ns != nil {
		sel, err := nodeaffinity.NewNodeSelector(ns)
		if err != nil {
			return nil, fmt.Errorf("parsing addedAffinity.requiredDuringSchedulingIgnoredDuringExecution: %w", err)
		}
		pl.addedRequired = sel
	}
	if terms := added.PreferredDuringSchedulingIgnoredDuringExecution; len(terms) > 0 {
		p, err := nodeaffinity.NewPreferredSchedulingTerms(terms)
		if err != nil {
			return nil, fmt.Errorf("parsing addedAffinity.preferredDuringSchedulingIgnoredDuringExecution: %w", err)
		}
		pl.addedPreferred = p
	}
	return pl, nil
}

func (pl *NodeAffinity) Name() string { return NodeAffinityName }

// EventsToRegister: only a new node or new labels can make a node match.
func (pl *NodeAffinity) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{{
		Event:          framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add | framework.UpdateNodeLabel},
		QueueingHintFn: pl.hintNode,
	}}, nil
}

// hintNode queues the pod only when the event turns a non-matching node
// (or no node) into a matching one.
func (pl *NodeAffinity) hintNode(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := naAsPair[*corev1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.QueueSkip, nil
	}
	if pl.addedRequired != nil && !pl.addedRequired.Match(newNode) {
		return framework.QueueSkip, nil
	}
	req := naRequiredOf(pod)
	if !req.match(newNode) {
		return framework.QueueSkip, nil
	}
	if oldNode != nil && req.match(oldNode) {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}

// naPreFilterState holds the pod's parsed required affinity. It never
// changes after PreFilter, so Clone shares it.
type naPreFilterState struct {
	required naRequired
}

func (s *naPreFilterState) Clone() framework.StateData { return s }

// PreFilter parses the pod's required affinity once. When every required
// term pins metadata.name with matchFields In, only those nodes can fit,
// and PreFilterResult names them so Filter runs on nothing else.
func (pl *NodeAffinity) PreFilter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	req := naPodRequiredAffinity(pod)
	if req == nil && pl.addedRequired == nil && pod.Spec.NodeSelector == nil {
		return nil, skipNodeAffinity
	}
	state.Write(naPreFilterKey, &naPreFilterState{required: naRequiredOf(pod)})
	if req == nil || len(req.NodeSelectorTerms) == 0 {
		return nil, nil
	}
	names := naPinnedNodeNames(req.NodeSelectorTerms)
	switch {
	case names == nil:
		return nil, nil
	case len(names) == 0:
		// Every term pins names, but each term's pins contradict.
		return nil, framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeAffinityConflict)
	}
	return &framework.PreFilterResult{NodeNames: names}, nil
}

// naPinnedNodeNames returns the union over terms of the node names each
// term allows through matchFields metadata.name In; nil when some term
// does not restrict names (terms are ORed, so then any node may match).
func naPinnedNodeNames(terms []corev1.NodeSelectorTerm) sets.Set[string] {
	var all sets.Set[string]
	for i := range terms {
		var term sets.Set[string]
		for _, r := range terms[i].MatchFields {
			if r.Key != metav1.ObjectNameField || r.Operator != corev1.NodeSelectorOpIn {
				continue
			}
			s := sets.New(r.Values...)
			if term == nil {
				term = s
			} else {
				term = term.Intersection(s)
			}
		}
		if term == nil {
			return nil
		}
		if all == nil {
			all = term
		} else {
			all = all.Union(term)
		}
	}
	return all
}

// PreFilterExtensions is nil: other pods do not affect node affinity.
func (pl *NodeAffinity) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter checks the added affinity, then the pod's own.
func (pl *NodeAffinity) Filter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.AsStatus(errors.New("node not found"))
	}
	if pl.addedRequired != nil && !pl.addedRequired.Match(node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeAffinityEnforced)
	}
	s, ok := state.Read(naPreFilterKey).(*naPreFilterState)
	if !ok {
		// PreFilter did not run (e.g. Filter called alone by a caller
		// that skips PreFilter); parse here.
		s = &naPreFilterState{required: naRequiredOf(pod)}
	}
	if !s.required.match(node) {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonNodeAffinity)
	}
	return nil
}

type naPreScoreState struct {
	preferred *nodeaffinity.PreferredSchedulingTerms
}

func (s *naPreScoreState) Clone() framework.StateData { return s }

// PreScore parses the pod's preferred terms; Skip when neither the pod nor
// the profile has any.
func (pl *NodeAffinity) PreScore(_ context.Context, state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) *framework.Status {
	var preferred *nodeaffinity.PreferredSchedulingTerms
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil && a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution != nil {
		p, err := nodeaffinity.NewPreferredSchedulingTerms(a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution)
		if err != nil {
			return framework.AsStatus(err)
		}
		preferred = p
	}
	if preferred == nil && pl.addedPreferred == nil {
		return skipNodeAffinity
	}
	state.Write(naPreScoreKey, &naPreScoreState{preferred: preferred})
	return nil
}

// Score sums the weights of the preferred terms (pod's and added) the node
// matches.
func (pl *NodeAffinity) Score(_ context.Context, state *framework.CycleState, pod *corev1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(errors.New("node not found"))
	}
	var score int64
	if pl.addedPreferred != nil {
		score += pl.addedPreferred.Score(node)
	}
	s, ok := state.Read(naPreScoreKey).(*naPreScoreState)
	if !ok {
		return score, framework.AsStatus(fmt.Errorf("reading %q from cycle state: not found", naPreScoreKey))
	}
	if s.preferred != nil {
		score += s.preferred.Score(node)
	}
	return score, nil
}

func (pl *NodeAffinity) ScoreExtensions() framework.ScoreExtensions { return pl }

// NormalizeScore scales so that the best node gets MaxNodeScore.
func (pl *NodeAffinity) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *corev1.Pod, scores []framework.NodeScore) *framework.Status {
	naDefaultNormalize(scores, false)
	return nil
}

// naDefaultNormalize scales scores to [0, MaxNodeScore] proportionally to
// the highest one; reverse flips them so that the lowest raw score wins.
// All zeros stay 0 (or all become MaxNodeScore when reversed).
func naDefaultNormalize(scores []framework.NodeScore, reverse bool) {
	var highest int64
	for i := range scores {
		highest = max(highest, scores[i].Score)
	}
	if highest == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = framework.MaxNodeScore
			}
		}
		return
	}
	for i := range scores {
		s := framework.MaxNodeScore * scores[i].Score / highest
		if reverse {
			s = framework.MaxNodeScore - s
		}
		scores[i].Score = s
	}
}

// --- node selector matching, by component-helpers ---

// naRequired is a pod's hard node constraints: spec.nodeSelector AND the
// required node affinity. The zero value matches every node.
type naRequired struct {
	nodeaffinity.RequiredNodeAffinity
}

// naRequiredOf parses a pod's hard node constraints.
func naRequiredOf(pod *corev1.Pod) naRequired {
	return naRequired{nodeaffinity.GetRequiredNodeAffinity(pod)}
}

func naPodRequiredAffinity(pod *corev1.Pod) *corev1.NodeSelector {
	if a := pod.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	}
	return nil
}

// match applies the constraints; a term that did not parse matches
// nothing, but the other terms still may.
func (r *naRequired) match(node *corev1.Node) bool {
	ok, _ := r.Match(node)
	return ok
}

// naAsPair converts a cluster event's objects; a missing side stays the
// zero value.
func naAsPair[T any](oldObj, newObj interface{}) (T, T, error) {
	var o, n T
	if newObj != nil {
		v, ok := newObj.(T)
		if !ok {
			return o, n, fmt.Errorf("expected %T, but got %T", n, newObj)
		}
		n = v
	}
	if oldObj != nil {
		v, ok := oldObj.(T)
		if !ok {
			return o, n, fmt.Errorf("expected %T, but got %T", o, oldObj)
		}
		o = v
	}
	return o, n, nil
}
