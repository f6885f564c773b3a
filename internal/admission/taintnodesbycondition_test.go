package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTaintNodesByCondition(t *testing.T) {
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	notReady := "node.kubernetes.io/not-ready:NoSchedule"
	cases := []struct {
		name string
		op   Operation
		sub  string
		have []corev1.Taint
		want []string
	}{
		{name: "new node tainted", op: Create, want: []string{notReady}},
		{name: "other taints kept", op: Create, have: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
			want: []string{"dedicated:NoSchedule", notReady}},
		{name: "already tainted once", op: Create, have: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule}},
			want: []string{notReady}},
		{name: "a NoExecute not-ready taint is another taint", op: Create, have: []corev1.Taint{{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}},
			want: []string{"node.kubernetes.io/not-ready:NoExecute", notReady}},
		{name: "updates untouched", op: Update},
		{name: "status untouched", op: Create, sub: "status"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			node := &corev1.Node{Spec: corev1.NodeSpec{Taints: tc.have}}
			if err := (TaintNodesByCondition{}).Admit(context.Background(), &Attributes{Operation: tc.op, Resource: nodes, Subresource: tc.sub, Object: node}); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, t := range node.Spec.Taints {
				got = append(got, t.Key+":"+string(t.Effect))
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("taints %v, want %v", got, tc.want)
			}
		})
	}
}
