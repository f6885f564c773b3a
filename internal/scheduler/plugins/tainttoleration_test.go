package plugins

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

func ttTaint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

func ttNode(name string, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}
}

func ttPod(tols ...corev1.Toleration) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "p"}, Spec: corev1.PodSpec{Tolerations: tols}}
}

func TestTolerationsTolerateTaint(t *testing.T) {
	taint := ttTaint("dedicated", "gpu", corev1.TaintEffectNoSchedule)
	tests := []struct {
		name string
		tol  corev1.Toleration
		want bool
	}{
		{name: "Equal with same key, value and effect", tol: corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, want: true},
		{name: "empty operator means Equal", tol: corev1.Toleration{Key: "dedicated", Value: "gpu"}, want: true},
		{name: "Equal with another value", tol: corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cpu"}},
		{name: "Exists ignores the value", tol: corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}, want: true},
		{name: "Exists with another key", tol: corev1.Toleration{Key: "other", Operator: corev1.TolerationOpExists}},
		{name: "empty key with Exists tolerates everything", tol: corev1.Toleration{Operator: corev1.TolerationOpExists}, want: true},
		{name: "empty effect matches every effect", tol: corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists}, want: true},
		{name: "another effect", tol: corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}},
		{name: "tolerationSeconds does not matter", tol: corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists, TolerationSeconds: ptr.To[int64](0)}, want: true},
		{name: "Gt is behind a disabled gate and tolerates nothing", tol: corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpGt, Value: "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := TolerationsTolerateTaint([]corev1.Toleration{tc.tol}, &taint); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
	if TolerationsTolerateTaint(nil, &taint) {
		t.Error("no tolerations tolerate nothing")
	}
}

func TestTaintTolerationFilter(t *testing.T) {
	tests := []struct {
		name string
		pod  *corev1.Pod
		node *corev1.Node
		fits bool
	}{
		{name: "no taints", pod: ttPod(), node: ttNode("n"), fits: true},
		{name: "untolerated NoSchedule", pod: ttPod(), node: ttNode("n", ttTaint("a", "b", corev1.TaintEffectNoSchedule))},
		{name: "untolerated NoExecute", pod: ttPod(), node: ttNode("n", ttTaint("a", "b", corev1.TaintEffectNoExecute))},
		{name: "PreferNoSchedule does not filter", pod: ttPod(), node: ttNode("n", ttTaint("a", "b", corev1.TaintEffectPreferNoSchedule)), fits: true},
		{
			name: "tolerated NoExecute with tolerationSeconds still fits",
			pod:  ttPod(corev1.Toleration{Key: "a", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}),
			node: ttNode("n", ttTaint("a", "b", corev1.TaintEffectNoExecute)),
			fits: true,
		},
		{
			name: "one of two taints untolerated",
			pod:  ttPod(corev1.Toleration{Key: "a", Value: "b", Effect: corev1.TaintEffectNoSchedule}),
			node: ttNode("n", ttTaint("a", "b", corev1.TaintEffectNoSchedule), ttTaint("c", "", corev1.TaintEffectNoSchedule)),
		},
		{
			name: "toleration for another effect does not help",
			pod:  ttPod(corev1.Toleration{Key: "a", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
			node: ttNode("n", ttTaint("a", "b", corev1.TaintEffectNoExecute)),
		},
		{
			name: "tolerate-everything toleration",
			pod:  ttPod(corev1.Toleration{Operator: corev1.TolerationOpExists}),
			node: ttNode("n", ttTaint("a", "b", corev1.TaintEffectNoExecute), ttTaint("c", "d", corev1.TaintEffectNoSchedule)),
			fits: true,
		},
	}
	pl := &TaintToleration{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := pl.Filter(context.Background(), framework.NewCycleState(), tc.pod, naNodeInfo(tc.node))
			if tc.fits {
				if !s.IsSuccess() {
					t.Fatalf("want fit, got %v", s)
				}
				return
			}
			if s.Code() != framework.UnschedulableAndUnresolvable || s.Message() != ErrReasonUntoleratedTaint {
				t.Fatalf("got %v, want UnschedulableAndUnresolvable: %s", s, ErrReasonUntoleratedTaint)
			}
		})
	}
}

func TestTaintTolerationScore(t *testing.T) {
	prefer := func(k string) corev1.Taint { return ttTaint(k, "v", corev1.TaintEffectPreferNoSchedule) }
	tests := []struct {
		name  string
		pod   *corev1.Pod
		nodes []*corev1.Node
		want  []int64
	}{
		{
			// intolerable counts 0, 1, 2: normalized 100 - 100*n/2.
			name:  "fewer intolerable PreferNoSchedule taints score higher",
			pod:   ttPod(),
			nodes: []*corev1.Node{ttNode("a"), ttNode("b", prefer("x")), ttNode("c", prefer("x"), prefer("y"))},
			want:  []int64{100, 50, 0},
		},
		{
			name: "tolerated and non-prefer taints do not count",
			pod:  ttPod(corev1.Toleration{Key: "x", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectPreferNoSchedule}),
			nodes: []*corev1.Node{
				ttNode("a", prefer("x"), ttTaint("z", "", corev1.TaintEffectNoSchedule)),
				ttNode("b", prefer("y")),
			},
			want: []int64{100, 0},
		},
		{
			name:  "a NoSchedule toleration does not cover PreferNoSchedule",
			pod:   ttPod(corev1.Toleration{Key: "x", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}),
			nodes: []*corev1.Node{ttNode("a", prefer("x")), ttNode("b")},
			want:  []int64{0, 100},
		},
		{
			name:  "no intolerable taints anywhere",
			pod:   ttPod(),
			nodes: []*corev1.Node{ttNode("a"), ttNode("b")},
			want:  []int64{100, 100},
		},
	}
	pl := &TaintToleration{}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			state := framework.NewCycleState()
			if s := pl.PreScore(ctx, state, tc.pod, nil); !s.IsSuccess() {
				t.Fatal(s)
			}
			scores := make([]framework.NodeScore, len(tc.nodes))
			for i, n := range tc.nodes {
				v, s := pl.Score(ctx, state, tc.pod, naNodeInfo(n))
				if !s.IsSuccess() {
					t.Fatal(s)
				}
				scores[i] = framework.NodeScore{Name: n.Name, Score: v}
			}
			pl.NormalizeScore(ctx, state, tc.pod, scores)
			for i := range scores {
				if scores[i].Score != tc.want[i] {
					t.Fatalf("scores = %v, want %v", scores, tc.want)
				}
			}
		})
	}
}

func TestTaintTolerationQueueingHints(t *testing.T) {
	pod := ttPod(corev1.Toleration{Key: "a", Operator: corev1.TolerationOpExists})
	tests := []struct {
		name     string
		fn       framework.QueueingHintFn
		old, new interface{}
		want     framework.QueueingHint
	}{
		{name: "new node without taints", fn: ttHintNode, new: ttNode("n"), want: framework.Queue},
		{name: "new node with an untolerated taint", fn: ttHintNode, new: ttNode("n", ttTaint("b", "", corev1.TaintEffectNoSchedule)), want: framework.QueueSkip},
		{
			name: "untolerated taint removed", fn: ttHintNode,
			old: ttNode("n", ttTaint("b", "", corev1.TaintEffectNoSchedule)), new: ttNode("n"), want: framework.Queue,
		},
		{
			name: "tolerated taint added", fn: ttHintNode,
			old: ttNode("n"), new: ttNode("n", ttTaint("a", "", corev1.TaintEffectNoSchedule)), want: framework.QueueSkip,
		},
		{name: "the pod's own tolerations changed", fn: ttHintPod, old: ttPod(), new: pod, want: framework.Queue},
		{
			name: "another pod's tolerations changed", fn: ttHintPod,
			old: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "q"}}, new: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "q"}}, want: framework.QueueSkip,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.fn(pod, tc.old, tc.new)
			if err != nil || got != tc.want {
				t.Fatalf("hint = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}
