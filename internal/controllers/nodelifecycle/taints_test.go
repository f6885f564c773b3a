package nodelifecycle

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// taintStrings renders taints as "key:effect" for comparison.
func taintStrings(ts []corev1.Taint) []string {
	var out []string
	for _, t := range ts {
		out = append(out, fmt.Sprintf("%s:%s", t.Key, t.Effect))
	}
	return out
}

func nodeWith(conds map[corev1.NodeConditionType]corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "7"}}
	for _, typ := range []corev1.NodeConditionType{corev1.NodeMemoryPressure, corev1.NodeDiskPressure, corev1.NodePIDPressure,
		corev1.NodeNetworkUnavailable, corev1.NodeReady} {
		if s, ok := conds[typ]; ok {
			n.Status.Conditions = append(n.Status.Conditions, corev1.NodeCondition{Type: typ, Status: s})
		}
	}
	n.Spec.Taints = taints
	return n
}

func noSched(key string) corev1.Taint {
	return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule}
}

func TestNoScheduleTaints(t *testing.T) {
	ready := map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionTrue}
	foreign := corev1.Taint{Key: "example.com/gpu", Effect: corev1.TaintEffectNoSchedule}
	tests := []struct {
		name          string
		node          *corev1.Node
		unschedulable bool
		want          []string
		changed       bool
	}{
		{name: "healthy: nothing", node: nodeWith(ready)},
		{
			name: "not ready", node: nodeWith(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionFalse}),
			want: []string{"node.kubernetes.io/not-ready:NoSchedule"}, changed: true,
		},
		{
			name: "unknown swaps not-ready for unreachable, keeps others' and NoExecute taints",
			node: nodeWith(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionUnknown},
				noSched(corev1.TaintNodeNotReady), foreign, unreachableNoExecute),
			want:    []string{"example.com/gpu:NoSchedule", "node.kubernetes.io/unreachable:NoExecute", "node.kubernetes.io/unreachable:NoSchedule"},
			changed: true,
		},
		{
			name: "every pressure and the network",
			node: nodeWith(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionTrue,
				corev1.NodeMemoryPressure: corev1.ConditionTrue, corev1.NodeDiskPressure: corev1.ConditionTrue,
				corev1.NodePIDPressure: corev1.ConditionTrue, corev1.NodeNetworkUnavailable: corev1.ConditionTrue}),
			want: []string{"node.kubernetes.io/memory-pressure:NoSchedule", "node.kubernetes.io/disk-pressure:NoSchedule",
				"node.kubernetes.io/pid-pressure:NoSchedule", "node.kubernetes.io/network-unavailable:NoSchedule"},
			changed: true,
		},
		{
			name: "pressure Unknown is no pressure",
			node: nodeWith(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionTrue,
				corev1.NodeMemoryPressure: corev1.ConditionUnknown}),
		},
		{
			name: "unschedulable", node: nodeWith(ready), unschedulable: true,
			want: []string{"node.kubernetes.io/unschedulable:NoSchedule"}, changed: true,
		},
		{
			name: "recovered: owned taints go, others stay",
			node: nodeWith(ready, noSched(corev1.TaintNodeUnschedulable), noSched(corev1.TaintNodeUnreachable), foreign),
			want: []string{"example.com/gpu:NoSchedule"}, changed: true,
		},
		{
			name: "already right: no change",
			node: nodeWith(map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: corev1.ConditionFalse}, noSched(corev1.TaintNodeNotReady)),
			want: []string{"node.kubernetes.io/not-ready:NoSchedule"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.node.Spec.Unschedulable = tt.unschedulable
			got, changed := noScheduleTaints(tt.node, at(5))
			if s := taintStrings(got); !slices.Equal(s, tt.want) {
				t.Errorf("taints = %v, want %v", s, tt.want)
			}
			if changed != tt.changed {
				t.Errorf("changed = %v, want %v", changed, tt.changed)
			}
			for _, ta := range got {
				if noScheduleKeys[ta.Key] && ta.Effect == corev1.TaintEffectNoSchedule && !hasTaint(tt.node, ta) &&
					(ta.TimeAdded == nil || !ta.TimeAdded.Time.Equal(at(5))) {
					t.Errorf("new taint %s has timeAdded %v", ta.Key, ta.TimeAdded)
				}
			}
		})
	}
}

func TestNoExecuteFor(t *testing.T) {
	st := func(s corev1.ConditionStatus) map[corev1.NodeConditionType]corev1.ConditionStatus {
		return map[corev1.NodeConditionType]corev1.ConditionStatus{corev1.NodeReady: s}
	}
	tests := []struct {
		name   string
		node   *corev1.Node
		action noExecuteAction
		want   string
	}{
		{"ready, untainted", nodeWith(st(corev1.ConditionTrue)), noExecuteKeep, ""},
		{"ready, tainted: remove", nodeWith(st(corev1.ConditionTrue), unreachableNoExecute), noExecuteRemove, ""},
		{"ready, NoSchedule only: keep", nodeWith(st(corev1.ConditionTrue), noSched(corev1.TaintNodeNotReady)), noExecuteKeep, ""},
		{"not ready: queue", nodeWith(st(corev1.ConditionFalse)), noExecuteQueue, corev1.TaintNodeNotReady},
		{"unknown: queue", nodeWith(st(corev1.ConditionUnknown)), noExecuteQueue, corev1.TaintNodeUnreachable},
		{"unknown, already tainted", nodeWith(st(corev1.ConditionUnknown), unreachableNoExecute), noExecuteKeep, corev1.TaintNodeUnreachable},
		{"unknown with not-ready: swap", nodeWith(st(corev1.ConditionUnknown), notReadyNoExecute), noExecuteSwap, corev1.TaintNodeUnreachable},
		{"not ready with unreachable: swap", nodeWith(st(corev1.ConditionFalse), unreachableNoExecute), noExecuteSwap, corev1.TaintNodeNotReady},
		{"no Ready condition: nothing to say", nodeWith(nil, unreachableNoExecute), noExecuteKeep, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, w := noExecuteFor(tt.node)
			if a != tt.action || w.Key != tt.want {
				t.Errorf("= %v %q, want %v %q", a, w.Key, tt.action, tt.want)
			}
			if tt.want != "" && w.Effect != corev1.TaintEffectNoExecute {
				t.Errorf("effect %s", w.Effect)
			}
		})
	}
}

func TestSwapTaints(t *testing.T) {
	old := metav1.NewTime(at(1))
	foreign := corev1.Taint{Key: "k", Value: "v", Effect: corev1.TaintEffectNoExecute}
	nr := notReadyNoExecute
	nr.TimeAdded = &old
	got := swapTaints([]corev1.Taint{foreign, nr, noSched(corev1.TaintNodeNotReady)},
		[]corev1.Taint{unreachableNoExecute}, []corev1.Taint{notReadyNoExecute, unreachableNoExecute}, at(9))
	want := []string{"k:NoExecute", "node.kubernetes.io/not-ready:NoSchedule", "node.kubernetes.io/unreachable:NoExecute"}
	if s := taintStrings(got); !slices.Equal(s, want) {
		t.Fatalf("taints = %v, want %v", s, want)
	}
	if got[2].TimeAdded == nil || !got[2].TimeAdded.Time.Equal(at(9)) {
		t.Errorf("timeAdded = %v", got[2].TimeAdded)
	}

	t.Run("patch carries the resourceVersion and the whole list", func(t *testing.T) {
		b, err := taintsPatch(nodeWith(nil), nil)
		if err != nil {
			t.Fatal(err)
		}
		var p struct {
			Metadata struct{ ResourceVersion string }
			Spec     struct{ Taints []corev1.Taint }
		}
		if err := json.Unmarshal(b, &p); err != nil || p.Metadata.ResourceVersion != "7" || p.Spec.Taints == nil {
			t.Errorf("patch %s: %v", b, err)
		}
	})
}
