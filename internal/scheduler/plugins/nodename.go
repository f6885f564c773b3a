package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// NodeNameName is the NodeName plugin's name.
const NodeNameName = "NodeName"

// NodeNameReason is the Filter reason for any node but the named one.
const NodeNameReason = "node(s) didn't match the requested node name"

// NodeName keeps a pod that names its node (spec.nodeName) to that node.
// PreFilter narrows the search to it, so the other nodes are never
// examined; Filter still rejects them, UnschedulableAndUnresolvable since
// no preemption can rename a node.
type NodeName struct{}

var (
	_ framework.PreFilterPlugin   = (*NodeName)(nil)
	_ framework.FilterPlugin      = (*NodeName)(nil)
	_ framework.EnqueueExtensions = (*NodeName)(nil)
)

// NewNodeName builds the plugin; it takes no arguments.
func NewNodeName(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
	return &NodeName{}, nil
}

func (p *NodeName) Name() string { return NodeNameName }

// PreFilter restricts the nodes to the named one, if any. A pod naming
// no node skips Filter, which would pass every node.
func (p *NodeName) PreFilter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	if pod.Spec.NodeName == "" {
		return nil, skipNodeName
	}
	return &framework.PreFilterResult{NodeNames: sets.New(pod.Spec.NodeName)}, nil
}

func (p *NodeName) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter rejects every node but the named one.
func (p *NodeName) Filter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	if pod.Spec.NodeName == "" {
		return nil
	}
	node := ni.Node()
	if node == nil {
		return framework.AsStatus(fmt.Errorf("%s: node not found", NodeNameName))
	}
	if node.Name != pod.Spec.NodeName {
		return framework.NewStatus(framework.UnschedulableAndUnresolvable, NodeNameReason)
	}
	return nil
}

// EventsToRegister: only the named node appearing can help.
func (p *NodeName) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add}, QueueingHintFn: p.hintNodeAdded},
	}, nil
}

func (p *NodeName) hintNodeAdded(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, node, err := fitAs[*corev1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if node == nil || (pod.Spec.NodeName != "" && node.Name != pod.Spec.NodeName) {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
