package plugins

import (
	"context"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// NodeResourcesBalancedAllocationName is the plugin's name.
const NodeResourcesBalancedAllocationName = "NodeResourcesBalancedAllocation"

const balancedPreScoreKey framework.StateKey = "PreScore" + NodeResourcesBalancedAllocationName

// NodeResourcesBalancedAllocation favours nodes whose resources would be
// used evenly with the pod on them, so that no node runs out of one
// resource while others sit idle:
//
//	fraction_i = min(1, requested_i / allocatable_i)   (pod included)
//	score      = (1 - stddev(fractions)) * 100
//
// Requests are the pods' real ones (no scoring defaults), and resources
// the node does not have are left out. Best-effort pods are not scored
// (upstream issue 129138: they would all pile onto one balanced node).
type NodeResourcesBalancedAllocation struct {
	resources []fitResourceSpec
}

var (
	_ framework.PreScorePlugin = (*NodeResourcesBalancedAllocation)(nil)
	_ framework.BatchScorer    = (*NodeResourcesBalancedAllocation)(nil)
	_ framework.ScorePlugin    = (*NodeResourcesBalancedAllocation)(nil)
)

// NewNodeResourcesBalancedAllocation builds the plugin from
// *configv1.NodeResourcesBalancedAllocationArgs (nil: cpu and memory).
func NewNodeResourcesBalancedAllocation(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	a := &configv1.NodeResourcesBalancedAllocationArgs{}
	if args != nil {
		in, ok := args.(*configv1.NodeResourcesBalancedAllocationArgs)
		if !ok {
			return nil, fmt.Errorf("%s: want args of type NodeResourcesBalancedAllocationArgs, got %T", NodeResourcesBalancedAllocationName, args)
		}
		a = in.DeepCopy()
	}
	if len(a.Resources) == 0 {
		a.Resources = fitDefaultResources()
	}
	for i := range a.Resources {
		if a.Resources[i].Weight == 0 {
			a.Resources[i].Weight = 1
		}
	}
	if err := fitValidateResources(a.Resources, "resources"); err != nil {
		return nil, fmt.Errorf("%s: %w", NodeResourcesBalancedAllocationName, err)
	}
	return &NodeResourcesBalancedAllocation{resources: fitResourceSpecs(a.Resources)}, nil
}

func (b *NodeResourcesBalancedAllocation) Name() string { return NodeResourcesBalancedAllocationName }

type balancedScoreState struct {
	podRequests []int64
}

func (s *balancedScoreState) Clone() framework.StateData { return s }

// PreScore computes the pod's requests, or skips scoring for a pod that
// requests none of the resources.
func (b *NodeResourcesBalancedAllocation) PreScore(_ context.Context, state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) *framework.Status {
	reqs := fitPodRequestList(pod, b.resources, false)
	if balancedBestEffort(reqs) {
		return skipBalancedAllocation
	}
	state.Write(balancedPreScoreKey, &balancedScoreState{podRequests: reqs})
	return nil
}

func balancedBestEffort(reqs []int64) bool {
	for _, r := range reqs {
		if r != 0 {
			return false
		}
	}
	return true
}

// Score rates how evenly the node's resources would be used.
func (b *NodeResourcesBalancedAllocation) Score(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := state.Read(balancedPreScoreKey).(*balancedScoreState)
	if !ok {
		s = &balancedScoreState{podRequests: fitPodRequestList(pod, b.resources, false)}
		if balancedBestEffort(s.podRequests) {
			return 0, nil
		}
	}
	return balancedScore(ni, b.resources, s.podRequests), nil
}

// ScoreNodes is Score over a range of nodes, reading the state once.
func (b *NodeResourcesBalancedAllocation) ScoreNodes(_ context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo, scores []framework.NodeScore) *framework.Status {
	s, ok := state.Read(balancedPreScoreKey).(*balancedScoreState)
	if !ok {
		s = &balancedScoreState{podRequests: fitPodRequestList(pod, b.resources, false)}
		if balancedBestEffort(s.podRequests) {
			for i := range scores {
				scores[i].Score = 0
			}
			return nil
		}
	}
	for i, ni := range nodes {
		scores[i].Score = balancedScore(ni, b.resources, s.podRequests)
	}
	return nil
}

func (b *NodeResourcesBalancedAllocation) ScoreExtensions() framework.ScoreExtensions { return nil }

// balancedScore is (1 - standard deviation of the used fractions) * 100.
// The fractions live on the stack for up to 8 resources.
func balancedScore(ni *framework.NodeInfo, resources []fitResourceSpec, podRequests []int64) int64 {
	var buf [8]float64
	fractions := buf[:0]
	var sum float64
	for i := range resources {
		alloc, req := fitAllocatableRequested(ni, &resources[i], podRequests[i], true)
		if alloc == 0 {
			continue
		}
		f := min(float64(req)/float64(alloc), 1)
		sum += f
		fractions = append(fractions, f)
	}
	var std float64
	switch n := len(fractions); {
	case n == 2:
		// The common cpu+memory case: the deviation of two values is half
		// their distance.
		std = math.Abs((fractions[0] - fractions[1]) / 2)
	case n > 2:
		mean := sum / float64(n)
		var sq float64
		for _, f := range fractions {
			sq += (f - mean) * (f - mean)
		}
		std = math.Sqrt(sq / float64(n))
	}
	return int64((1 - std) * float64(framework.MaxNodeScore))
}
