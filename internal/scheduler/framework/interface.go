package framework

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
)

// MaxNodeScore and MinNodeScore bound a normalized score; the framework
// multiplies each plugin's score by its weight and sums.
const (
	MaxNodeScore int64 = 100
	MinNodeScore int64 = 0
)

// Plugin is anything with a name; it also implements one or more of the
// extension-point interfaces below. Plugins are built once per profile by
// a Factory and called concurrently only where noted.
type Plugin interface {
	Name() string
}

// Factory builds a plugin. args is the plugin's typed arguments from
// k8s.io/kube-scheduler/config/v1 (e.g. *configv1.NodeResourcesFitArgs)
// with defaults applied, or nil for plugins that take none.
type Factory func(ctx context.Context, args runtime.Object, h Handle) (Plugin, error)

// PreEnqueuePlugin gates a pod before it enters the active queue; a
// non-success status parks it until an event re-runs the check.
type PreEnqueuePlugin interface {
	Plugin
	PreEnqueue(ctx context.Context, pod *corev1.Pod) *Status
}

// QueueSortPlugin orders the active queue. Exactly one per profile.
type QueueSortPlugin interface {
	Plugin
	Less(a, b *QueuedPodInfo) bool
}

// EnqueueExtensions is implemented by plugins that can reject pods: it
// names the cluster events after which a pod they rejected may fit.
type EnqueueExtensions interface {
	Plugin
	EventsToRegister(ctx context.Context) ([]ClusterEventWithHint, error)
}

// PreFilterResult narrows the nodes to examine; nil NodeNames means all.
type PreFilterResult struct {
	NodeNames sets.Set[string]
}

// PreFilterPlugin computes per-pod state once per cycle, from the
// snapshot's node list. Returning Skip disables the plugin's Filter for
// this pod. Called single-threaded.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *corev1.Pod, nodes []*NodeInfo) (*PreFilterResult, *Status)
	// PreFilterExtensions returns nil when the plugin's state does not
	// depend on other pods.
	PreFilterExtensions() PreFilterExtensions
}

// PreFilterExtensions update a plugin's cycle state when the framework
// tries the pod with another pod added (nominated pods) or removed
// (preemption victims). state is a clone the caller owns.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, podToSchedule *corev1.Pod, podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, podToSchedule *corev1.Pod, podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status
}

// FilterPlugin decides whether a pod fits a node. Called concurrently for
// different nodes; must not write state.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeInfo *NodeInfo) *Status
}

// NodeToStatus records why each examined node was rejected. Nodes absent
// from the map were excluded before Filter (PreFilterResult) and count as
// UnschedulableAndUnresolvable.
type NodeToStatus map[string]*Status

// PostFilterResult is what a PostFilter (preemption) achieved.
type PostFilterResult struct {
	// NominatedNodeName is where the pod should go once victims leave.
	NominatedNodeName string
}

// PostFilterPlugin runs when no node fits (preemption).
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *corev1.Pod, filtered NodeToStatus) (*PostFilterResult, *Status)
}

// PreScorePlugin prepares scoring; Skip disables Score for this pod.
// nodes are the feasible nodes. Called single-threaded.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *corev1.Pod, nodes []*NodeInfo) *Status
}

// NodeScore is one node's score.
type NodeScore struct {
	Name  string
	Score int64
}

// ScorePlugin ranks feasible nodes. Score is called concurrently for
// different nodes. Scores must end in [MinNodeScore, MaxNodeScore] after
// NormalizeScore.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeInfo *NodeInfo) (int64, *Status)
	// ScoreExtensions returns nil when scores need no normalization.
	ScoreExtensions() ScoreExtensions
}

// BatchScorer is an optional fast path of a ScorePlugin: one call scores
// a range of nodes, so the plugin reads its cycle state and decides its
// per-pod work once per range instead of once per node. scores[i].Score
// must be set to exactly what Score would return for nodes[i] (the
// framework sets the names); a non-nil Status fails the cycle as a
// Score error would. It is called concurrently for disjoint ranges.
type BatchScorer interface {
	ScoreNodes(ctx context.Context, state *CycleState, pod *corev1.Pod, nodes []*NodeInfo, scores []NodeScore) *Status
}

// ScoreExtensions normalizes a plugin's scores across nodes, in place.
type ScoreExtensions interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *corev1.Pod, scores []NodeScore) *Status
}

// ReservePlugin holds resources for an assumed pod; Unreserve undoes
// Reserve when a later step fails and must be idempotent.
type ReservePlugin interface {
	Plugin
	Reserve(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string) *Status
	Unreserve(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string)
}

// PermitPlugin approves, rejects or delays (Wait, up to the timeout) the
// binding of a pod.
type PermitPlugin interface {
	Plugin
	Permit(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string) (*Status, time.Duration)
}

// PreBindPlugin runs before binding, in the binding goroutine.
type PreBindPlugin interface {
	Plugin
	PreBind(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string) *Status
}

// BindPlugin binds; Skip passes to the next bind plugin.
type BindPlugin interface {
	Plugin
	Bind(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string) *Status
}

// PostBindPlugin is told of a successful bind.
type PostBindPlugin interface {
	Plugin
	PostBind(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeName string)
}

// Handle is what the framework gives plugins.
type Handle interface {
	// Snapshot is the cluster as of the current cycle. Valid only during
	// a cycle's PreFilter..Score calls; do not keep node infos across
	// cycles.
	Snapshot() *Snapshot
	ClientSet() kubernetes.Interface
	// SharedInformerFactory serves listers of other resources (PVCs, PVs,
	// storage classes, CSI nodes, namespaces, PDBs, priority classes).
	// Plugins must request their informers from their factory function,
	// before the scheduler starts the factory.
	SharedInformerFactory() informers.SharedInformerFactory
	EventRecorder() events.EventRecorder
	Parallelizer() Parallelizer
	// NominatedPodsForNode returns pods nominated to run on the node
	// (after preemption), highest priority first.
	NominatedPodsForNode(nodeName string) []*PodInfo
	// RunPreFilterExtensionAddPod/RemovePod call every PreFilter plugin's
	// extension that is active in state.
	RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *corev1.Pod, podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *corev1.Pod, podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status
	// RunFilterPluginsWithNominatedPods runs the Filter plugins as if the
	// nominated pods of equal or higher priority were already on the node.
	RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *corev1.Pod, nodeInfo *NodeInfo) *Status
}

// Parallelizer runs work across nodes.
type Parallelizer interface {
	// Until calls fn(i) for i in [0, n) on up to the parallelism's
	// goroutines and returns when all are done or ctx ends.
	Until(ctx context.Context, n int, fn func(i int))
	// UntilChunks calls fn(lo, hi) for consecutive ranges of at most
	// chunk items covering [0, n), handed out in increasing order, so a
	// caller can keep per-range counters instead of sharing one per item.
	// It returns when all are done, ctx ends or a call of fn returns false
	// (ranges not yet handed out are then never called; those already
	// running finish first).
	UntilChunks(ctx context.Context, n, chunk int, fn func(lo, hi int) bool)
}

// ActionType is a bit set of changes to a resource.
type ActionType int64

const (
	Add ActionType = 1 << iota
	Delete
	UpdateNodeAllocatable
	UpdateNodeLabel
	UpdateNodeTaint
	UpdateNodeCondition
	UpdateNodeAnnotation
	UpdatePodLabel
	UpdatePodScaleDown
	UpdatePodTolerations
	UpdatePodSchedulingGatesEliminated
	UpdatePodGeneratedResourceClaim

	// Update is any update; All is any action.
	Update = UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdateNodeCondition | UpdateNodeAnnotation |
		UpdatePodLabel | UpdatePodScaleDown | UpdatePodTolerations | UpdatePodSchedulingGatesEliminated | UpdatePodGeneratedResourceClaim
	All = Add | Delete | Update
)

// Resource kinds in cluster events.
type EventResource string

const (
	PodResource                   EventResource = "Pod"
	AssignedPodResource           EventResource = "AssignedPod"
	UnschedulablePodResource      EventResource = "UnschedulablePod"
	NodeResource                  EventResource = "Node"
	PersistentVolumeResource      EventResource = "PersistentVolume"
	PersistentVolumeClaimResource EventResource = "PersistentVolumeClaim"
	StorageClassResource          EventResource = "StorageClass"
	CSINodeResource               EventResource = "CSINode"
	CSIDriverResource             EventResource = "CSIDriver"
	NamespaceResource             EventResource = "Namespace"
	WildCardResource              EventResource = "*"
)

// ClusterEvent is a change in the cluster that may make pods schedulable.
type ClusterEvent struct {
	Resource   EventResource
	ActionType ActionType
	Label      string
}

// Match reports whether e (an event that happened) is covered by c (an
// event a plugin registered). The scheduler reports pod events as
// AssignedPod or UnschedulablePod; a plugin registering Pod gets both.
func (c ClusterEvent) Match(e ClusterEvent) bool {
	if c.ActionType&e.ActionType == 0 {
		return false
	}
	switch c.Resource {
	case WildCardResource, e.Resource:
		return true
	case PodResource:
		// "Pod" covers pods both bound and pending.
		return e.Resource == AssignedPodResource || e.Resource == UnschedulablePodResource
	}
	return false
}

// QueueingHint tells the queue whether an event may make a pod schedulable.
type QueueingHint int

const (
	QueueSkip QueueingHint = iota
	Queue
)

// QueueingHintFn decides for one rejected pod and one event; oldObj/newObj
// are the event's objects (nil for add/delete's missing side).
type QueueingHintFn func(pod *corev1.Pod, oldObj, newObj interface{}) (QueueingHint, error)

// ClusterEventWithHint pairs an event with an optional hint; a nil hint
// means always Queue.
type ClusterEventWithHint struct {
	Event          ClusterEvent
	QueueingHintFn QueueingHintFn
}
