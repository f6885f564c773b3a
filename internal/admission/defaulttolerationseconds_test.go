package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

// dtsFormat renders tolerations as key:effect=seconds, "-" for none.
func dtsFormat(ts []corev1.Toleration) []string {
	var out []string
	for _, t := range ts {
		s := "-"
		if t.TolerationSeconds != nil {
			s = fmt.Sprint(*t.TolerationSeconds)
		}
		out = append(out, fmt.Sprintf("%s:%s:%s=%s", t.Key, t.Operator, t.Effect, s))
	}
	return out
}

func TestDefaultTolerationSeconds(t *testing.T) {
	const (
		notReady    = "node.kubernetes.io/not-ready:Exists:NoExecute=300"
		unreachable = "node.kubernetes.io/unreachable:Exists:NoExecute=300"
	)
	cases := []struct {
		name   string
		plugin DefaultTolerationSeconds
		op     Operation
		sub    string
		have   []corev1.Toleration
		want   []string
	}{
		{name: "both added to a pod with none", want: []string{notReady, unreachable}},
		{name: "configured seconds", plugin: DefaultTolerationSeconds{NotReadySeconds: ptr.To[int64](60), UnreachableSeconds: ptr.To[int64](0)},
			want: []string{"node.kubernetes.io/not-ready:Exists:NoExecute=60", "node.kubernetes.io/unreachable:Exists:NoExecute=0"}},
		{name: "an own not-ready toleration is kept",
			have: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](10)}},
			want: []string{"node.kubernetes.io/not-ready:Exists:NoExecute=10", unreachable}},
		{name: "an own toleration without effect counts",
			have: []corev1.Toleration{{Key: corev1.TaintNodeUnreachable, Operator: corev1.TolerationOpExists}},
			want: []string{"node.kubernetes.io/unreachable:Exists:=-", notReady}},
		{name: "a NoSchedule toleration does not count",
			have: []corev1.Toleration{{Key: corev1.TaintNodeNotReady, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			want: []string{"node.kubernetes.io/not-ready:Exists:NoSchedule=-", notReady, unreachable}},
		{name: "tolerate everything needs nothing more",
			have: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			want: []string{":Exists:=-"}},
		{name: "updates too", op: Update, want: []string{notReady, unreachable}},
		{name: "subresources are not touched", sub: "status"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.op
			if op == "" {
				op = Create
			}
			pod := &corev1.Pod{Spec: corev1.PodSpec{Tolerations: tc.have}}
			if err := tc.plugin.Admit(context.Background(), &Attributes{Operation: op, Resource: podsGVR, Subresource: tc.sub, Object: pod}); err != nil {
				t.Fatal(err)
			}
			if got := dtsFormat(pod.Spec.Tolerations); fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("tolerations %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("other resources are not touched", func(t *testing.T) {
		node := &corev1.Node{}
		if err := (DefaultTolerationSeconds{}).Admit(context.Background(), &Attributes{Operation: Create,
			Resource: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Object: node}); err != nil {
			t.Fatal(err)
		}
	})
}
