package plugins

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// portsHP is a host port ip/protocol/port.
func portsHP(ip string, proto corev1.Protocol, port int32) corev1.ContainerPort {
	return corev1.ContainerPort{HostIP: ip, Protocol: proto, HostPort: port, ContainerPort: port}
}

func TestNodePortsFilter(t *testing.T) {
	node := fitNode("n", fitRL("pods", "10"))
	withPorts := func(ports ...corev1.ContainerPort) *corev1.Pod {
		p := fitPod(corev1.ResourceList{})
		p.Spec.Containers[0].Ports = ports
		return p
	}
	sidecarPod := func(sidecar bool, port corev1.ContainerPort) *corev1.Pod {
		p := fitWithInit(fitPod(corev1.ResourceList{}), sidecar, nil)
		p.Spec.InitContainers[0].Ports = []corev1.ContainerPort{port}
		return p
	}

	tests := []struct {
		name     string
		pod      *corev1.Pod
		existing []*corev1.Pod
		skip     bool
		fits     bool
	}{
		{name: "no ports skips the plugin", pod: withPorts(), skip: true},
		{name: "container port without host port skips", pod: withPorts(corev1.ContainerPort{ContainerPort: 80}), skip: true},
		{name: "free port", pod: withPorts(portsHP("127.0.0.1", "UDP", 8080)), existing: []*corev1.Pod{withPorts(portsHP("127.0.0.1", "UDP", 9090))}, fits: true},
		{name: "same udp port", pod: withPorts(portsHP("127.0.0.1", "UDP", 8080)), existing: []*corev1.Pod{withPorts(portsHP("127.0.0.1", "UDP", 8080))}},
		{name: "same tcp port", pod: withPorts(portsHP("127.0.0.1", "TCP", 8080)), existing: []*corev1.Pod{withPorts(portsHP("127.0.0.1", "TCP", 8080))}},
		{name: "different protocol", pod: withPorts(portsHP("127.0.0.1", "TCP", 8080)), existing: []*corev1.Pod{withPorts(portsHP("127.0.0.1", "UDP", 8080))}, fits: true},
		{name: "different host ip", pod: withPorts(portsHP("127.0.0.2", "TCP", 8080)), existing: []*corev1.Pod{withPorts(portsHP("127.0.0.1", "TCP", 8080))}, fits: true},
		{name: "empty protocol is tcp", pod: withPorts(portsHP("127.0.0.1", "", 8080)), existing: []*corev1.Pod{withPorts(portsHP("127.0.0.1", "TCP", 8080))}},
		{name: "wanted 0.0.0.0 conflicts with a specific ip", pod: withPorts(portsHP("0.0.0.0", "TCP", 8001)), existing: []*corev1.Pod{withPorts(portsHP("127.0.0.1", "TCP", 8001))}},
		{name: "used 0.0.0.0 conflicts with a specific ip", pod: withPorts(portsHP("127.0.0.1", "TCP", 8001)), existing: []*corev1.Pod{withPorts(portsHP("0.0.0.0", "TCP", 8001))}},
		{name: "empty host ip is 0.0.0.0", pod: withPorts(portsHP("", "TCP", 8001)), existing: []*corev1.Pod{withPorts(portsHP("10.0.0.1", "TCP", 8001))}},
		{name: "0.0.0.0 on another protocol is free", pod: withPorts(portsHP("0.0.0.0", "UDP", 8001)), existing: []*corev1.Pod{withPorts(portsHP("127.0.0.1", "TCP", 8001))}, fits: true},
		{name: "one conflict among several ports", pod: withPorts(portsHP("", "TCP", 1), portsHP("", "TCP", 2), portsHP("", "UDP", 3)), existing: []*corev1.Pod{withPorts(portsHP("", "UDP", 3))}},
		{name: "sidecar host port counts", pod: sidecarPod(true, portsHP("", "TCP", 7000)), existing: []*corev1.Pod{withPorts(portsHP("", "TCP", 7000))}},
		{name: "regular init container host port does not", pod: sidecarPod(false, portsHP("", "TCP", 7000)), skip: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl, _ := NewNodePorts(context.Background(), nil, nil)
			p := pl.(*NodePorts)
			state := framework.NewCycleState()
			_, s := p.PreFilter(context.Background(), state, tc.pod, nil)
			if s.IsSkip() != tc.skip {
				t.Fatalf("PreFilter = %v, want skip=%v", s, tc.skip)
			}
			if tc.skip {
				return
			}
			got := p.Filter(context.Background(), state, tc.pod, fitNodeInfo(node, tc.existing...))
			if tc.fits {
				if !got.IsSuccess() {
					t.Errorf("Filter = %v, want success", got)
				}
				return
			}
			if got.Code() != framework.Unschedulable || got.Message() != NodePortsReason {
				t.Errorf("Filter = %v, want Unschedulable %q", got, NodePortsReason)
			}
		})
	}
}

func TestNodePortsHint(t *testing.T) {
	pl, _ := NewNodePorts(context.Background(), nil, nil)
	p := pl.(*NodePorts)
	withPorts := func(node string, ports ...corev1.ContainerPort) *corev1.Pod {
		q := fitPod(corev1.ResourceList{})
		q.Spec.NodeName = node
		q.Spec.Containers[0].Ports = ports
		return q
	}
	target := withPorts("", portsHP("", "TCP", 8080))
	tests := []struct {
		name    string
		deleted *corev1.Pod
		want    framework.QueueingHint
	}{
		{name: "assigned pod holding the port", deleted: withPorts("n", portsHP("127.0.0.1", "TCP", 8080)), want: framework.Queue},
		{name: "assigned pod holding another port", deleted: withPorts("n", portsHP("", "TCP", 9090)), want: framework.QueueSkip},
		{name: "assigned pod without host ports", deleted: withPorts("n"), want: framework.QueueSkip},
		{name: "pending pod holding the port", deleted: withPorts("", portsHP("", "TCP", 8080)), want: framework.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.hintPodDeleted(target, tc.deleted, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}
