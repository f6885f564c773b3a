package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// SchedulingGatesName is the SchedulingGates plugin's name.
const SchedulingGatesName = "SchedulingGates"

// SchedulingGates holds back pods that still carry spec.schedulingGates:
// they stay out of the active queue, and out of scheduling attempts and
// metrics, until some controller removes the last gate.
type SchedulingGates struct{}

var (
	_ framework.PreEnqueuePlugin  = (*SchedulingGates)(nil)
	_ framework.EnqueueExtensions = (*SchedulingGates)(nil)
)

// NewSchedulingGates builds the plugin; it takes no arguments.
func NewSchedulingGates(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
	return &SchedulingGates{}, nil
}

func (p *SchedulingGates) Name() string { return SchedulingGatesName }

// PreEnqueue rejects a gated pod with the gates' names, e.g.
// "waiting for scheduling gates: [example.com/quota example.com/ready]".
func (p *SchedulingGates) PreEnqueue(_ context.Context, pod *corev1.Pod) *framework.Status {
	if len(pod.Spec.SchedulingGates) == 0 {
		return nil
	}
	names := make([]string, len(pod.Spec.SchedulingGates))
	for i, g := range pod.Spec.SchedulingGates {
		names[i] = g.Name
	}
	return framework.NewStatus(framework.UnschedulableAndUnresolvable, fmt.Sprintf("waiting for scheduling gates: %v", names))
}

// EventsToRegister: the pod's own gates going away.
func (p *SchedulingGates) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.PodResource, ActionType: framework.UpdatePodSchedulingGatesEliminated}, QueueingHintFn: p.hintGatesRemoved},
	}, nil
}

func (p *SchedulingGates) hintGatesRemoved(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	_, newPod, err := fitAs[*corev1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if newPod == nil || newPod.UID != pod.UID || len(newPod.Spec.SchedulingGates) > 0 {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
