package plugins

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// NodeResourcesFitName is the NodeResourcesFit plugin's name.
const NodeResourcesFitName = "NodeResourcesFit"

const (
	fitPreFilterKey framework.StateKey = "PreFilter" + NodeResourcesFitName
	fitPreScoreKey  framework.StateKey = "PreScore" + NodeResourcesFitName

	// fitMaxCustomPriorityScore is the top of the 0..10 scale users write
	// RequestedToCapacityRatio shapes in; scores are scaled to 0..100.
	fitMaxCustomPriorityScore int64 = 10
	fitMaxUtilization         int64 = 100
)

// NodeResourcesFit filters out nodes without room for the pod's requests
// and scores the rest by how allocated they would be, with one of three
// strategies:
//
//	LeastAllocated           Σ w·(alloc-req)·100/alloc / Σ w   (spread)
//	MostAllocated            Σ w·req·100/alloc / Σ w           (bin-pack)
//	RequestedToCapacityRatio Σ w·shape(req·100/alloc) / Σ w    (custom)
//
// where req is what the node's pods request (with the scoring defaults
// for pods that set no cpu/memory, NonZeroRequested) plus this pod's
// request. Resources the node does not have are left out of the average.
type NodeResourcesFit struct {
	ignoredResources      sets.Set[string]
	ignoredResourceGroups sets.Set[string]
	scorer                fitScorer
}

var (
	_ framework.PreFilterPlugin   = (*NodeResourcesFit)(nil)
	_ framework.FilterPlugin      = (*NodeResourcesFit)(nil)
	_ framework.PreScorePlugin    = (*NodeResourcesFit)(nil)
	_ framework.ScorePlugin       = (*NodeResourcesFit)(nil)
	_ framework.BatchScorer       = (*NodeResourcesFit)(nil)
	_ framework.EnqueueExtensions = (*NodeResourcesFit)(nil)
)

// NewNodeResourcesFit builds the plugin from *configv1.NodeResourcesFitArgs
// (nil for the defaults: LeastAllocated over cpu and memory, weight 1).
func NewNodeResourcesFit(_ context.Context, args runtime.Object, _ framework.Handle) (framework.Plugin, error) {
	a := &configv1.NodeResourcesFitArgs{}
	if args != nil {
		in, ok := args.(*configv1.NodeResourcesFitArgs)
		if !ok {
			return nil, fmt.Errorf("%s: want args of type NodeResourcesFitArgs, got %T", NodeResourcesFitName, args)
		}
		a = in.DeepCopy()
	}
	fitDefaultArgs(a)
	if err := fitValidateArgs(a); err != nil {
		return nil, fmt.Errorf("%s: %w", NodeResourcesFitName, err)
	}
	sc := fitScorer{strategy: a.ScoringStrategy.Type, resources: fitResourceSpecs(a.ScoringStrategy.Resources)}
	if sc.strategy == configv1.RequestedToCapacityRatio {
		for _, p := range a.ScoringStrategy.RequestedToCapacityRatio.Shape {
			sc.shape = append(sc.shape, fitShapePoint{
				utilization: int64(p.Utilization),
				score:       int64(p.Score) * (framework.MaxNodeScore / fitMaxCustomPriorityScore),
			})
		}
	}
	return &NodeResourcesFit{
		ignoredResources:      sets.New(a.IgnoredResources...),
		ignoredResourceGroups: sets.New(a.IgnoredResourceGroups...),
		scorer:                sc,
	}, nil
}

// fitDefaultResources is upstream's default scoring resource set.
func fitDefaultResources() []configv1.ResourceSpec {
	return []configv1.ResourceSpec{{Name: string(corev1.ResourceCPU), Weight: 1}, {Name: string(corev1.ResourceMemory), Weight: 1}}
}

// fitDefaultArgs applies kube-scheduler's v1 defaults.
func fitDefaultArgs(a *configv1.NodeResourcesFitArgs) {
	if a.ScoringStrategy == nil {
		a.ScoringStrategy = &configv1.ScoringStrategy{Type: configv1.LeastAllocated}
	}
	if len(a.ScoringStrategy.Resources) == 0 {
		a.ScoringStrategy.Resources = fitDefaultResources()
	}
	for i := range a.ScoringStrategy.Resources {
		if a.ScoringStrategy.Resources[i].Weight == 0 {
			a.ScoringStrategy.Resources[i].Weight = 1
		}
	}
}

func fitValidateArgs(a *configv1.NodeResourcesFitArgs) error {
	for _, r := range a.IgnoredResources {
		if errs := validation.IsQualifiedName(r); len(errs) > 0 {
			return fmt.Errorf("ignoredResources: invalid resource name %q: %s", r, strings.Join(errs, "; "))
		}
	}
	for _, g := range a.IgnoredResourceGroups {
		if strings.Contains(g, "/") {
			return fmt.Errorf("ignoredResourceGroups: %q must not contain '/'", g)
		}
		if errs := validation.IsQualifiedName(g); len(errs) > 0 {
			return fmt.Errorf("ignoredResourceGroups: invalid group %q: %s", g, strings.Join(errs, "; "))
		}
	}
	s := a.ScoringStrategy
	switch s.Type {
	case configv1.LeastAllocated, configv1.MostAllocated:
	case configv1.RequestedToCapacityRatio:
		if s.RequestedToCapacityRatio == nil || len(s.RequestedToCapacityRatio.Shape) == 0 {
			return fmt.Errorf("scoringStrategy.requestedToCapacityRatio.shape: required for %s", s.Type)
		}
		if err := fitValidateShape(s.RequestedToCapacityRatio.Shape); err != nil {
			return err
		}
	default:
		return fmt.Errorf("scoringStrategy.type: unsupported value %q", s.Type)
	}
	return fitValidateResources(s.Resources, "scoringStrategy.resources")
}

func fitValidateResources(rs []configv1.ResourceSpec, path string) error {
	seen := sets.New[string]()
	for _, r := range rs {
		if r.Name == "" {
			return fmt.Errorf("%s: resource name required", path)
		}
		if seen.Has(r.Name) {
			return fmt.Errorf("%s: duplicate resource %q", path, r.Name)
		}
		seen.Insert(r.Name)
		if r.Weight < 1 || r.Weight > 100 {
			return fmt.Errorf("%s: weight of %q is %d, not in [1, 100]", path, r.Name, r.Weight)
		}
	}
	return nil
}

func fitValidateShape(shape []configv1.UtilizationShapePoint) error {
	for i, p := range shape {
		if p.Utilization < 0 || int64(p.Utilization) > fitMaxUtilization {
			return fmt.Errorf("shape[%d].utilization: %d not in [0, 100]", i, p.Utilization)
		}
		if p.Score < 0 || int64(p.Score) > fitMaxCustomPriorityScore {
			return fmt.Errorf("shape[%d].score: %d not in [0, 10]", i, p.Score)
		}
		if i > 0 && p.Utilization <= shape[i-1].Utilization {
			return fmt.Errorf("shape[%d].utilization: values must be sorted in increasing order", i)
		}
	}
	return nil
}

func (f *NodeResourcesFit) Name() string { return NodeResourcesFitName }

// fitPreFilterState is the pod's request, split so that Filter reads
// fields and walks a short sorted slice instead of ranging over a map.
type fitPreFilterState struct {
	milliCPU, memory, ephemeral int64
	// scalars excludes zero and ignored requests; sorted by name so the
	// reasons come out in a stable order.
	scalars []fitScalarRequest
	// empty: nothing requested, so only the pod count matters.
	empty bool
}

type fitScalarRequest struct {
	name   corev1.ResourceName
	amount int64
	reason string // "Insufficient <name>", built once per pod
}

// Clone shares the state: it never changes after PreFilter.
func (s *fitPreFilterState) Clone() framework.StateData { return s }

func (f *NodeResourcesFit) computePreFilterState(pod *corev1.Pod) *fitPreFilterState {
	r := framework.PodRequests(pod, false)
	s := &fitPreFilterState{milliCPU: r.MilliCPU, memory: r.Memory, ephemeral: r.EphemeralStorage}
	for name, v := range r.Scalar {
		if v == 0 || f.ignored(name) {
			continue
		}
		s.scalars = append(s.scalars, fitScalarRequest{name: name, amount: v, reason: "Insufficient " + string(name)})
	}
	slices.SortFunc(s.scalars, func(a, b fitScalarRequest) int { return strings.Compare(string(a.name), string(b.name)) })
	// Upstream tests emptiness before dropping ignored scalars; the result
	// is the same since ignored scalars are never checked.
	s.empty = s.milliCPU == 0 && s.memory == 0 && s.ephemeral == 0 && len(s.scalars) == 0
	return s
}

// ignored reports whether Filter skips an extended resource, by exact name
// or by its domain (the part before '/'). Other resources are never ignored.
func (f *NodeResourcesFit) ignored(name corev1.ResourceName) bool {
	if !framework.IsExtendedResourceName(name) {
		return false
	}
	if f.ignoredResources.Has(string(name)) {
		return true
	}
	if f.ignoredResourceGroups.Len() == 0 {
		return false
	}
	group, _, _ := strings.Cut(string(name), "/")
	return f.ignoredResourceGroups.Has(group)
}

// PreFilter sums the pod's requests once for all nodes.
func (f *NodeResourcesFit) PreFilter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	state.Write(fitPreFilterKey, f.computePreFilterState(pod))
	return nil, nil
}

func (f *NodeResourcesFit) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter lists every resource the node lacks. A node whose whole
// allocatable is below the request is UnschedulableAndUnresolvable, since
// preempting its pods cannot help; otherwise Unschedulable.
func (f *NodeResourcesFit) Filter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	s, ok := state.Read(fitPreFilterKey).(*fitPreFilterState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("%s: no PreFilter state for pod %s/%s", NodeResourcesFitName, pod.Namespace, pod.Name))
	}
	reasons, unresolvable := fitInsufficient(s, ni.Allocatable, ni.Requested, len(ni.Pods))
	if len(reasons) == 0 {
		return nil
	}
	if unresolvable {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, reasons...)
	}
	return framework.NewStatus(framework.Unschedulable, reasons...)
}

// fitInsufficient is the fit decision: the reasons a pod requesting s does
// not fit a node with allocatable alloc, already-requested used and
// numPods pods, and whether some request exceeds alloc outright. It
// allocates only when the pod does not fit.
func fitInsufficient(s *fitPreFilterState, alloc, used *framework.Resource, numPods int) (reasons []string, unresolvable bool) {
	if int64(numPods)+1 > alloc.AllowedPodNumber {
		reasons = append(reasons, "Too many pods")
	}
	if s.empty {
		return reasons, false
	}
	if s.milliCPU > 0 && s.milliCPU > alloc.MilliCPU-used.MilliCPU {
		reasons = append(reasons, "Insufficient cpu")
		unresolvable = unresolvable || s.milliCPU > alloc.MilliCPU
	}
	if s.memory > 0 && s.memory > alloc.Memory-used.Memory {
		reasons = append(reasons, "Insufficient memory")
		unresolvable = unresolvable || s.memory > alloc.Memory
	}
	if s.ephemeral > 0 && s.ephemeral > alloc.EphemeralStorage-used.EphemeralStorage {
		reasons = append(reasons, "Insufficient ephemeral-storage")
		unresolvable = unresolvable || s.ephemeral > alloc.EphemeralStorage
	}
	for i := range s.scalars {
		sc := &s.scalars[i]
		a := alloc.Scalar[sc.name]
		if sc.amount > a-used.Scalar[sc.name] {
			reasons = append(reasons, sc.reason)
			unresolvable = unresolvable || sc.amount > a
		}
	}
	return reasons, unresolvable
}

// EventsToRegister: a pod leaving (or shrinking) frees room; a node
// appearing or growing its allocatable adds room.
func (f *NodeResourcesFit) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.PodResource, ActionType: framework.Delete | framework.UpdatePodScaleDown}, QueueingHintFn: f.hintPodEvent},
		{Event: framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add | framework.UpdateNodeAllocatable}, QueueingHintFn: f.hintNodeEvent},
	}, nil
}

// hintPodEvent queues after a deleted pod that held (or was about to
// hold) resources, or after a scale-down of the pod itself or of an
// assigned pod in a resource this pod asks for.
func (f *NodeResourcesFit) hintPodEvent(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, newPod, err := fitAs[*corev1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newPod == nil {
		if oldPod == nil || (oldPod.Spec.NodeName == "" && oldPod.Status.NominatedNodeName == "") {
			return framework.QueueSkip, nil
		}
		return framework.Queue, nil
	}
	if newPod.UID == pod.UID {
		return framework.Queue, nil
	}
	if newPod.Spec.NodeName == "" || oldPod == nil {
		return framework.QueueSkip, nil
	}
	before, after := framework.PodRequests(oldPod, false), framework.PodRequests(newPod, false)
	want := f.computePreFilterState(pod)
	switch {
	case want.milliCPU > 0 && before.MilliCPU > after.MilliCPU,
		want.memory > 0 && before.Memory > after.Memory,
		want.ephemeral > 0 && before.EphemeralStorage > after.EphemeralStorage:
		return framework.Queue, nil
	}
	for _, sc := range want.scalars {
		if before.Scalar[sc.name] > after.Scalar[sc.name] {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// hintNodeEvent queues when the new or changed node could hold the pod
// on its own and, for an update, grew in a resource the pod asks for.
func (f *NodeResourcesFit) hintNodeEvent(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := fitAs[*corev1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.QueueSkip, nil
	}
	want := f.computePreFilterState(pod)
	after := framework.NewResource(newNode.Status.Allocatable)
	if reasons, _ := fitInsufficient(want, after, &framework.Resource{}, 0); len(reasons) > 0 {
		return framework.QueueSkip, nil
	}
	if oldNode == nil {
		return framework.Queue, nil
	}
	before := framework.NewResource(oldNode.Status.Allocatable)
	switch {
	case after.AllowedPodNumber > before.AllowedPodNumber,
		want.milliCPU > 0 && after.MilliCPU > before.MilliCPU,
		want.memory > 0 && after.Memory > before.Memory,
		want.ephemeral > 0 && after.EphemeralStorage > before.EphemeralStorage:
		return framework.Queue, nil
	}
	for _, sc := range want.scalars {
		if after.Scalar[sc.name] > before.Scalar[sc.name] {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

// fitScoreState holds the pod's request per scoring resource, in the
// order of the configured resources.
type fitScoreState struct {
	podRequests []int64
}

func (s *fitScoreState) Clone() framework.StateData { return s }

// PreScore computes the pod's requests, with the scoring defaults for
// containers that set no cpu or memory.
func (f *NodeResourcesFit) PreScore(_ context.Context, state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) *framework.Status {
	state.Write(fitPreScoreKey, &fitScoreState{podRequests: fitPodRequestList(pod, f.scorer.resources, true)})
	return nil
}

// Score rates the node by the configured strategy.
func (f *NodeResourcesFit) Score(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) (int64, *framework.Status) {
	s, ok := state.Read(fitPreScoreKey).(*fitScoreState)
	if !ok {
		s = &fitScoreState{podRequests: fitPodRequestList(pod, f.scorer.resources, true)}
	}
	return f.scorer.score(ni, s.podRequests), nil
}

// ScoreNodes is Score over a range of nodes, reading the state once.
func (f *NodeResourcesFit) ScoreNodes(_ context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo, scores []framework.NodeScore) *framework.Status {
	s, ok := state.Read(fitPreScoreKey).(*fitScoreState)
	if !ok {
		s = &fitScoreState{podRequests: fitPodRequestList(pod, f.scorer.resources, true)}
	}
	for i, ni := range nodes {
		scores[i].Score = f.scorer.score(ni, s.podRequests)
	}
	return nil
}

func (f *NodeResourcesFit) ScoreExtensions() framework.ScoreExtensions { return nil }

// fitResourceKind says where a scoring resource's numbers live, decided
// once at construction instead of by name per node.
type fitResourceKind uint8

const (
	fitKindOther fitResourceKind = iota // never scored (e.g. "pods")
	fitKindCPU
	fitKindMemory
	fitKindEphemeral
	fitKindScalar
)

type fitResourceSpec struct {
	name   corev1.ResourceName
	kind   fitResourceKind
	weight int64
}

func fitResourceSpecs(in []configv1.ResourceSpec) []fitResourceSpec {
	out := make([]fitResourceSpec, len(in))
	for i, r := range in {
		name := corev1.ResourceName(r.Name)
		kind := fitKindOther
		switch {
		case name == corev1.ResourceCPU:
			kind = fitKindCPU
		case name == corev1.ResourceMemory:
			kind = fitKindMemory
		case name == corev1.ResourceEphemeralStorage:
			kind = fitKindEphemeral
		case framework.IsScalarResourceName(name):
			kind = fitKindScalar
		}
		out[i] = fitResourceSpec{name: name, kind: kind, weight: r.Weight}
	}
	return out
}

// fitPodRequestList returns the pod's request for each resource; nonZero
// applies the scoring defaults (100m cpu, 200Mi memory) per container.
func fitPodRequestList(pod *corev1.Pod, specs []fitResourceSpec, nonZero bool) []int64 {
	r := framework.PodRequests(pod, nonZero)
	out := make([]int64, len(specs))
	for i := range specs {
		if specs[i].kind != fitKindOther {
			out[i] = r.Get(specs[i].name)
		}
	}
	return out
}

// fitAllocatableRequested returns the node's allocatable amount of a
// resource and what would be requested with the pod on it; (0, 0) means
// "leave this resource out". useRequested picks the pods' real requests
// for cpu and memory instead of the scoring defaults.
func fitAllocatableRequested(ni *framework.NodeInfo, r *fitResourceSpec, podRequest int64, useRequested bool) (int64, int64) {
	used := ni.NonZeroRequested
	if useRequested {
		used = ni.Requested
	}
	switch r.kind {
	case fitKindCPU:
		return ni.Allocatable.MilliCPU, used.MilliCPU + podRequest
	case fitKindMemory:
		return ni.Allocatable.Memory, used.Memory + podRequest
	case fitKindEphemeral:
		return ni.Allocatable.EphemeralStorage, ni.Requested.EphemeralStorage + podRequest
	case fitKindScalar:
		// A scalar the pod does not ask for says nothing about this pod.
		if podRequest == 0 {
			return 0, 0
		}
		if a, ok := ni.Allocatable.Scalar[r.name]; ok {
			return a, ni.Requested.Scalar[r.name] + podRequest
		}
	}
	return 0, 0
}

type fitShapePoint struct {
	utilization int64
	score       int64 // already scaled to 0..MaxNodeScore
}

type fitScorer struct {
	strategy  configv1.ScoringStrategyType
	resources []fitResourceSpec
	shape     []fitShapePoint
}

// score is the strategy's weighted average over the resources the node
// has; it allocates nothing.
func (sc *fitScorer) score(ni *framework.NodeInfo, podRequests []int64) int64 {
	var total, weights int64
	for i := range sc.resources {
		r := &sc.resources[i]
		alloc, req := fitAllocatableRequested(ni, r, podRequests[i], false)
		if alloc == 0 {
			continue
		}
		var s int64
		switch sc.strategy {
		case configv1.MostAllocated:
			s = fitMostRequestedScore(req, alloc)
		case configv1.RequestedToCapacityRatio:
			s = fitRatioScore(sc.shape, req, alloc)
			// Upstream averages only over resources with a positive score.
			if s <= 0 {
				continue
			}
		default:
			s = fitLeastRequestedScore(req, alloc)
		}
		total += s * r.weight
		weights += r.weight
	}
	if weights == 0 {
		return 0
	}
	if sc.strategy == configv1.RequestedToCapacityRatio {
		// Rounded, where the other two truncate, as upstream.
		return int64(math.Round(float64(total) / float64(weights)))
	}
	return total / weights
}

// fitLeastRequestedScore is the unused share of capacity, 0..100.
func fitLeastRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return 0
	}
	return (capacity - requested) * framework.MaxNodeScore / capacity
}

// fitMostRequestedScore is the used share of capacity, 0..100; requests
// above capacity (possible with the scoring defaults) count as full.
func fitMostRequestedScore(requested, capacity int64) int64 {
	if capacity == 0 {
		return 0
	}
	requested = min(requested, capacity)
	return requested * framework.MaxNodeScore / capacity
}

// fitRatioScore maps utilization (0..100, full when over capacity)
// through the shape.
func fitRatioScore(shape []fitShapePoint, requested, capacity int64) int64 {
	if capacity == 0 || requested > capacity {
		return fitBrokenLinear(shape, fitMaxUtilization)
	}
	return fitBrokenLinear(shape, requested*fitMaxUtilization/capacity)
}

// fitBrokenLinear interpolates linearly between the shape's points and is
// flat before the first and after the last.
func fitBrokenLinear(shape []fitShapePoint, p int64) int64 {
	for i := range shape {
		if p <= shape[i].utilization {
			if i == 0 {
				return shape[0].score
			}
			a, b := shape[i-1], shape[i]
			return a.score + (b.score-a.score)*(p-a.utilization)/(b.utilization-a.utilization)
		}
	}
	return shape[len(shape)-1].score
}

// fitAs converts a cluster event's objects, unwrapping a tombstone.
func fitAs[T any](oldObj, newObj interface{}) (T, T, error) {
	var o, n T
	if newObj != nil {
		v, ok := newObj.(T)
		if !ok {
			return o, n, fmt.Errorf("expected %T, got %T", n, newObj)
		}
		n = v
	}
	if oldObj != nil {
		if d, ok := oldObj.(cache.DeletedFinalStateUnknown); ok {
			oldObj = d.Obj
		}
		v, ok := oldObj.(T)
		if !ok {
			return o, n, fmt.Errorf("expected %T, got %T", o, oldObj)
		}
		o = v
	}
	return o, n, nil
}
