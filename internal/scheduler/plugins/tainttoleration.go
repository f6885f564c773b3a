package plugins

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// TaintTolerationName is the plugin's name in profiles.
const TaintTolerationName = "TaintToleration"

// ErrReasonUntoleratedTaint is the Filter reason. Upstream used to print
// the taint ("untolerated taint {key: value}"); since kubernetes#134740
// (late 2025, cherry-picked to 1.34) it does not, as taint values may be
// sensitive and end up in pod status, and logs the taint instead. We do
// the same.
const ErrReasonUntoleratedTaint = "node(s) had untolerated taint(s)"

const ttPreScoreKey framework.StateKey = "PreScore" + TaintTolerationName

// TaintToleration keeps pods off nodes whose NoSchedule or NoExecute
// taints they do not tolerate, and prefers nodes with fewer
// PreferNoSchedule taints the pod does not tolerate.
//
// A toleration tolerates a taint when its effect is empty or equal, its key
// is empty or equal, and its operator is Exists, or Equal (or empty) with
// an equal value. tolerationSeconds only matters for eviction, never here.
// The numeric operators Lt/Gt tolerate nothing: they sit behind the alpha
// TaintTolerationComparisonOperators gate, off by default upstream.
type TaintToleration struct{}

var (
	_ framework.FilterPlugin      = (*TaintToleration)(nil)
	_ framework.PreScorePlugin    = (*TaintToleration)(nil)
	_ framework.BatchScorer       = (*TaintToleration)(nil)
	_ framework.ScorePlugin       = (*TaintToleration)(nil)
	_ framework.ScoreExtensions   = (*TaintToleration)(nil)
	_ framework.EnqueueExtensions = (*TaintToleration)(nil)
)

// NewTaintToleration builds the plugin; it takes no arguments.
func NewTaintToleration(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
	return &TaintToleration{}, nil
}

func (pl *TaintToleration) Name() string { return TaintTolerationName }

// TolerationsTolerateTaint reports whether any of tolerations tolerates
// taint (whatever the taint's effect), by the API's own matching.
func TolerationsTolerateTaint(tolerations []corev1.Toleration, taint *corev1.Taint) bool {
	return corev1helpers.TolerationsTolerateTaint(discardLog, tolerations, taint, false)
}

// discardLog is the logger component-helpers asks for: it logs only for
// the comparison toleration operators, which are off.
var discardLog = logr.Discard()

// ttFindUntolerated returns the first NoSchedule or NoExecute taint that
// no toleration tolerates.
func ttFindUntolerated(taints []corev1.Taint, tolerations []corev1.Toleration) (*corev1.Taint, bool) {
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !TolerationsTolerateTaint(tolerations, t) {
			return t, true
		}
	}
	return nil, false
}

// EventsToRegister: a new node or changed taints may now be tolerated, and
// so may the pod itself after it gains tolerations.
func (pl *TaintToleration) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add | framework.UpdateNodeTaint}, QueueingHintFn: ttHintNode},
		{Event: framework.ClusterEvent{Resource: framework.PodResource, ActionType: framework.UpdatePodTolerations}, QueueingHintFn: ttHintPod},
	}, nil
}

// ttHintNode queues the pod when the node goes from having an untolerated
// taint (or not existing) to having none.
func ttHintNode(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := naAsPair[*corev1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil {
		return framework.QueueSkip, nil
	}
	was := true
	if oldNode != nil {
		_, was = ttFindUntolerated(oldNode.Spec.Taints, pod.Spec.Tolerations)
	}
	_, is := ttFindUntolerated(newNode.Spec.Taints, pod.Spec.Tolerations)
	if was && !is {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// ttHintPod queues the pod when its own tolerations changed; other pods'
// tolerations cannot matter.
func ttHintPod(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, newPod, err := naAsPair[*corev1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newPod != nil && newPod.UID == pod.UID {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// Filter rejects a node with an untolerated NoSchedule/NoExecute taint.
func (pl *TaintToleration) Filter(ctx context.Context, _ *framework.CycleState, pod *corev1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	node := nodeInfo.Node()
	if node == nil {
		return framework.AsStatus(errors.New("node not found"))
	}
	taint, bad := ttFindUntolerated(nodeInfo.Taints(), pod.Spec.Tolerations)
	if !bad {
		return nil
	}
	if slog.Default().Enabled(ctx, slog.LevelDebug) {
		slog.DebugContext(ctx, "node had untolerated taint", "node", node.Name, "pod", pod.Namespace+"/"+pod.Name, "taint", taint.ToString())
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, ErrReasonUntoleratedTaint)
}

// ttPreScoreState holds the tolerations that can tolerate a
// PreferNoSchedule taint (effect empty or PreferNoSchedule).
type ttPreScoreState struct {
	tolerations []corev1.Toleration
}

func (s *ttPreScoreState) Clone() framework.StateData { return s }

func (pl *TaintToleration) PreScore(_ context.Context, state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) *framework.Status {
	s := &ttPreScoreState{}
	for _, t := range pod.Spec.Tolerations {
		if t.Effect == "" || t.Effect == corev1.TaintEffectPreferNoSchedule {
			s.tolerations = append(s.tolerations, t)
		}
	}
	state.Write(ttPreScoreKey, s)
	return nil
}

// Score counts the node's PreferNoSchedule taints the pod does not
// tolerate; NormalizeScore turns fewer into higher.
func (pl *TaintToleration) Score(_ context.Context, state *framework.CycleState, _ *corev1.Pod, nodeInfo *framework.NodeInfo) (int64, *framework.Status) {
	node := nodeInfo.Node()
	if node == nil {
		return 0, framework.AsStatus(errors.New("node not found"))
	}
	s, ok := state.Read(ttPreScoreKey).(*ttPreScoreState)
	if !ok {
		return 0, framework.AsStatus(fmt.Errorf("reading %q from cycle state: not found", ttPreScoreKey))
	}
	return ttCountIntolerable(nodeInfo.Taints(), s.tolerations), nil
}

// ScoreNodes is Score over a range of nodes, reading the state once.
func (pl *TaintToleration) ScoreNodes(_ context.Context, state *framework.CycleState, _ *corev1.Pod, nodes []*framework.NodeInfo, scores []framework.NodeScore) *framework.Status {
	s, ok := state.Read(ttPreScoreKey).(*ttPreScoreState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("reading %q from cycle state: not found", ttPreScoreKey))
	}
	for i, ni := range nodes {
		if ni.Node() == nil {
			return framework.AsStatus(errors.New("node not found"))
		}
		scores[i].Score = ttCountIntolerable(ni.Taints(), s.tolerations)
	}
	return nil
}

// ttCountIntolerable counts the PreferNoSchedule taints none of the
// tolerations tolerates.
func ttCountIntolerable(taints []corev1.Taint, tolerations []corev1.Toleration) int64 {
	var n int64
	for i := range taints {
		t := &taints[i]
		if t.Effect == corev1.TaintEffectPreferNoSchedule && !TolerationsTolerateTaint(tolerations, t) {
			n++
		}
	}
	return n
}

func (pl *TaintToleration) ScoreExtensions() framework.ScoreExtensions { return pl }

func (pl *TaintToleration) NormalizeScore(_ context.Context, _ *framework.CycleState, _ *corev1.Pod, scores []framework.NodeScore) *framework.Status {
	naDefaultNormalize(scores, true)
	return nil
}
