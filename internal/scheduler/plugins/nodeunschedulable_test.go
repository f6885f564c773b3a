package plugins

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

func TestNodeUnschedulableFilter(t *testing.T) {
	cordoned := fitNode("cordoned", fitRL("pods", "10"))
	cordoned.Spec.Unschedulable = true
	open := fitNode("open", fitRL("pods", "10"))
	tolerating := func(tols ...corev1.Toleration) *corev1.Pod {
		p := fitPod(nil)
		p.Spec.Tolerations = tols
		return p
	}
	key := corev1.TaintNodeUnschedulable

	tests := []struct {
		name string
		pod  *corev1.Pod
		node *corev1.Node
		fits bool
	}{
		{name: "schedulable node", pod: fitPod(nil), node: open, fits: true},
		{name: "cordoned node", pod: fitPod(nil), node: cordoned},
		{name: "toleration Exists on the key", pod: tolerating(corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}), node: cordoned, fits: true},
		{name: "toleration Exists on every key", pod: tolerating(corev1.Toleration{Operator: corev1.TolerationOpExists}), node: cordoned, fits: true},
		{name: "toleration Equal with the empty value", pod: tolerating(corev1.Toleration{Key: key, Effect: corev1.TaintEffectNoSchedule}), node: cordoned, fits: true},
		{name: "toleration Equal with another value", pod: tolerating(corev1.Toleration{Key: key, Value: "yes"}), node: cordoned},
		{name: "toleration for NoExecute only", pod: tolerating(corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}), node: cordoned},
		{name: "toleration for another key", pod: tolerating(corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}), node: cordoned},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl, _ := NewNodeUnschedulable(context.Background(), nil, nil)
			got := pl.(*NodeUnschedulable).Filter(context.Background(), framework.NewCycleState(), tc.pod, fitNodeInfo(tc.node))
			if tc.fits {
				if !got.IsSuccess() {
					t.Errorf("Filter = %v, want success", got)
				}
				return
			}
			if got.Code() != framework.UnschedulableAndUnresolvable || got.Message() != NodeUnschedulableReason {
				t.Errorf("Filter = %v, want UnschedulableAndUnresolvable %q", got, NodeUnschedulableReason)
			}
		})
	}
}

func TestNodeUnschedulableHints(t *testing.T) {
	pl, _ := NewNodeUnschedulable(context.Background(), nil, nil)
	p := pl.(*NodeUnschedulable)
	cordoned := fitNode("n", nil)
	cordoned.Spec.Unschedulable = true
	open := fitNode("n", nil)
	target := fitPod(nil)
	tolerant := target.DeepCopy()
	tolerant.Spec.Tolerations = []corev1.Toleration{{Key: corev1.TaintNodeUnschedulable, Operator: corev1.TolerationOpExists}}
	other := fitPod(nil)
	other.Spec.Tolerations = tolerant.Spec.Tolerations

	tests := []struct {
		name     string
		fn       framework.QueueingHintFn
		old, new interface{}
		want     framework.QueueingHint
	}{
		{name: "schedulable node added", fn: p.hintNode, new: open, want: framework.Queue},
		{name: "cordoned node added", fn: p.hintNode, new: cordoned, want: framework.QueueSkip},
		{name: "node uncordoned", fn: p.hintNode, old: cordoned, new: open, want: framework.Queue},
		{name: "node cordoned", fn: p.hintNode, old: open, new: cordoned, want: framework.QueueSkip},
		{name: "open node changed otherwise", fn: p.hintNode, old: open, new: open, want: framework.QueueSkip},
		{name: "pod gained the toleration", fn: p.hintPodTolerations, old: target, new: tolerant, want: framework.Queue},
		{name: "another pod gained it", fn: p.hintPodTolerations, old: other, new: other, want: framework.QueueSkip},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn(target, tc.old, tc.new)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}
