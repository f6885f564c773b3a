package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// NodePortsName is the NodePorts plugin's name.
const NodePortsName = "NodePorts"

const (
	portsPreFilterKey framework.StateKey = "PreFilter" + NodePortsName

	// NodePortsReason is the Filter reason when a wanted host port is taken.
	NodePortsReason = "node(s) didn't have free ports for the requested pod ports"
)

// NodePorts rejects nodes where a host port the pod wants (same protocol
// and port, on the same IP or on the wildcard 0.0.0.0) is already taken.
// Only app containers and sidecars (restartable init containers) hold
// ports for the pod's lifetime, so only they count.
type NodePorts struct{}

var (
	_ framework.PreFilterPlugin   = (*NodePorts)(nil)
	_ framework.FilterPlugin      = (*NodePorts)(nil)
	_ framework.EnqueueExtensions = (*NodePorts)(nil)
)

// NewNodePorts builds the plugin; it takes no arguments.
func NewNodePorts(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
	return &NodePorts{}, nil
}

func (p *NodePorts) Name() string { return NodePortsName }

// portsState is the pod's host ports; it never changes after PreFilter.
type portsState []corev1.ContainerPort

func (s portsState) Clone() framework.StateData { return s }

// portsWanted returns the host ports pod holds while running.
func portsWanted(pod *corev1.Pod) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		out = portsAppendHost(out, c.Ports)
	}
	for i := range pod.Spec.Containers {
		out = portsAppendHost(out, pod.Spec.Containers[i].Ports)
	}
	return out
}

func portsAppendHost(out, ports []corev1.ContainerPort) []corev1.ContainerPort {
	for _, p := range ports {
		if p.HostPort > 0 {
			out = append(out, p)
		}
	}
	return out
}

// PreFilter collects the pod's host ports, or skips the plugin for the
// (usual) pod that has none.
func (p *NodePorts) PreFilter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, _ []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	want := portsWanted(pod)
	if len(want) == 0 {
		return nil, skipNodePorts
	}
	state.Write(portsPreFilterKey, portsState(want))
	return nil, nil
}

func (p *NodePorts) PreFilterExtensions() framework.PreFilterExtensions { return nil }

// Filter rejects the node if any wanted port conflicts.
func (p *NodePorts) Filter(_ context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo) *framework.Status {
	want, ok := state.Read(portsPreFilterKey).(portsState)
	if !ok {
		return framework.AsStatus(fmt.Errorf("%s: no PreFilter state for pod %s/%s", NodePortsName, pod.Namespace, pod.Name))
	}
	if !portsFit(want, ni.UsedPorts) {
		return framework.NewStatus(framework.Unschedulable, NodePortsReason)
	}
	return nil
}

func portsFit(want []corev1.ContainerPort, used framework.HostPortInfo) bool {
	for i := range want {
		if used.Conflicts(want[i].HostIP, string(want[i].Protocol), want[i].HostPort) {
			return false
		}
	}
	return true
}

// EventsToRegister: ports are immutable, so only a pod going away or a
// new node can free one.
func (p *NodePorts) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.PodResource, ActionType: framework.Delete}, QueueingHintFn: p.hintPodDeleted},
		{Event: framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add}},
	}, nil
}

// hintPodDeleted queues only when the deleted pod was on (or nominated
// to) a node and held a port this pod wants.
func (p *NodePorts) hintPodDeleted(pod *corev1.Pod, oldObj, _ interface{}) (framework.QueueingHint, error) {
	deleted, _, err := fitAs[*corev1.Pod](oldObj, nil)
	if err != nil {
		return framework.Queue, err
	}
	if deleted == nil || (deleted.Spec.NodeName == "" && deleted.Status.NominatedNodeName == "") {
		return framework.QueueSkip, nil
	}
	freed := portsWanted(deleted)
	if len(freed) == 0 {
		return framework.QueueSkip, nil
	}
	inUse := framework.HostPortInfo{}
	for _, fp := range freed {
		inUse.Add(fp.HostIP, string(fp.Protocol), fp.HostPort)
	}
	if portsFit(portsWanted(pod), inUse) {
		return framework.QueueSkip, nil
	}
	return framework.Queue, nil
}
