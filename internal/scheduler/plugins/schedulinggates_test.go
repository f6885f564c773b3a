package plugins

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

func TestSchedulingGates(t *testing.T) {
	gated := func(names ...string) *corev1.Pod {
		p := fitPod(nil)
		for _, n := range names {
			p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
		}
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		msg  string
	}{
		{name: "no gates", pod: gated()},
		{name: "one gate", pod: gated("example.com/quota"), msg: "waiting for scheduling gates: [example.com/quota]"},
		{name: "gates in spec order", pod: gated("gate1", "gate2"), msg: "waiting for scheduling gates: [gate1 gate2]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl, _ := NewSchedulingGates(context.Background(), nil, nil)
			got := pl.(*SchedulingGates).PreEnqueue(context.Background(), tc.pod)
			if tc.msg == "" {
				if !got.IsSuccess() {
					t.Errorf("PreEnqueue = %v, want success", got)
				}
				return
			}
			if got.Code() != framework.UnschedulableAndUnresolvable || got.Message() != tc.msg {
				t.Errorf("PreEnqueue = %v, want UnschedulableAndUnresolvable %q", got, tc.msg)
			}
		})
	}
}

func TestSchedulingGatesHint(t *testing.T) {
	pl, _ := NewSchedulingGates(context.Background(), nil, nil)
	p := pl.(*SchedulingGates)
	target := fitPod(nil)
	target.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "a"}, {Name: "b"}}
	oneLeft := target.DeepCopy()
	oneLeft.Spec.SchedulingGates = oneLeft.Spec.SchedulingGates[:1]
	none := target.DeepCopy()
	none.Spec.SchedulingGates = nil
	other := fitPod(nil)

	tests := []struct {
		name     string
		old, new *corev1.Pod
		want     framework.QueueingHint
	}{
		{name: "last gate removed", old: oneLeft, new: none, want: framework.Queue},
		{name: "a gate is still there", old: target, new: oneLeft, want: framework.QueueSkip},
		{name: "another pod", old: other, new: other, want: framework.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.hintGatesRemoved(target, tc.old, tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}
