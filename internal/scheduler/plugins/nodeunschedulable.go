package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// NodeUnschedulableName is the NodeUnschedulable plugin's name.
const NodeUnschedulableName = "NodeUnschedulable"

// NodeUnschedulableReason is the Filter reason for a cordoned node.
const NodeUnschedulableReason = "node(s) were unschedulable"

// NodeUnschedulable rejects cordoned nodes (spec.unschedulable) unless the
// pod tolerates the node.kubernetes.io/unschedulable:NoSchedule taint
// that cordoning implies; DaemonSet pods carry that toleration. Preempting
// pods cannot uncordon a node, hence UnschedulableAndUnresolvable.
type NodeUnschedulable struct{}

var (
	_ framework.FilterPlugin      = (*NodeUnschedulable)(nil)
	_ framework.EnqueueExtensions = (*NodeUnschedulable)(nil)
)

// NewNodeUnschedulable builds the plugin; it takes no arguments.
func NewNodeUnschedulable(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
	return &NodeUnschedulable{}, nil
}

func (p *NodeUnschedulable) Name() string { return NodeUnschedulableName }

// Filter rejects a cordoned node the pod does not tolerate.
func (p *NodeUnschedulable) Filter(_ context.Context, _ *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	if !ni.Unschedulable() {
		if ni.Node() == nil {
			return framework.AsStatus(fmt.Errorf("%s: node not found", NodeUnschedulableName))
		}
		return nil
	}
	if unschedTolerates(pod.Spec.Tolerations) {
		return nil
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, NodeUnschedulableReason)
}

// unschedTaint is the taint a cordoned node stands for.
var unschedTaint = corev1.Taint{Key: corev1.TaintNodeUnschedulable, Effect: corev1.TaintEffectNoSchedule}

// unschedTolerates reports whether a toleration matches the taint
// {node.kubernetes.io/unschedulable, value "", NoSchedule}.
func unschedTolerates(tols []corev1.Toleration) bool {
	return corev1helpers.TolerationsTolerateTaint(discardLog, tols, &unschedTaint, false)
}

// EventsToRegister: a node added or uncordoned, or the pod gaining the
// toleration.
func (p *NodeUnschedulable) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add | framework.UpdateNodeTaint}, QueueingHintFn: p.hintNode},
		{Event: framework.ClusterEvent{Resource: framework.PodResource, ActionType: framework.UpdatePodTolerations}, QueueingHintFn: p.hintPodTolerations},
	}, nil
}

// hintNode queues for a schedulable new node or a node being uncordoned.
func (p *NodeUnschedulable) hintNode(_ *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := fitAs[*corev1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newNode == nil || newNode.Spec.Unschedulable {
		return framework.QueueSkip, nil
	}
	if oldNode == nil || oldNode.Spec.Unschedulable {
		return framework.Queue, nil
	}
	return framework.QueueSkip, nil
}

// hintPodTolerations queues when the rejected pod itself now tolerates
// the unschedulable taint.
func (p *NodeUnschedulable) hintPodTolerations(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, newPod, err := fitAs[*corev1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newPod == nil || newPod.UID != pod.UID || !unschedTolerates(newPod.Spec.Tolerations) {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
