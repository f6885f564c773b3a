package plugins

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

func TestNodeResourcesBalancedAllocationScore(t *testing.T) {
	const ext = "example.com/aaa"
	small := fitNode("small", fitRL("cpu", "4000m", "memory", "10000", "pods", "10"))
	big := fitNode("big", fitRL("cpu", "6000m", "memory", "10000", "pods", "10"))
	withExt := fitNode("ext", fitRL("cpu", "4000m", "memory", "10000", "pods", "10", ext, "4"))
	pod := fitPod(fitRL("cpu", "1000m", "memory", "2000"), fitRL("cpu", "2000m", "memory", "3000"))
	threeRes := &configv1.NodeResourcesBalancedAllocationArgs{Resources: []configv1.ResourceSpec{{Name: "cpu"}, {Name: "memory"}, {Name: ext}}}

	tests := []struct {
		name string
		args *configv1.NodeResourcesBalancedAllocationArgs
		pod  *corev1.Pod
		ni   *framework.NodeInfo
		want int64
	}{
		// fractions 0.75 and 0.5: std = 0.125 → 87.5 → 87
		{name: "cpu and memory unbalanced", pod: pod, ni: fitNodeInfo(small), want: 87},
		{name: "cpu and memory balanced", pod: pod, ni: fitNodeInfo(big), want: 100},
		// existing pod without requests adds nothing (real requests, no
		// defaults); the pod's 1000m of cpu alone: fractions .25 and 0 → 87
		{name: "real requests, not the scoring defaults",
			pod: fitPod(fitRL("cpu", "1000m")), ni: fitNodeInfo(small, fitPod(nil)), want: 87},
		// fractions .75, .5, .25: mean .5, std sqrt(.125/3) = .2041 → 79
		{name: "three resources use the full standard deviation",
			args: threeRes,
			pod:  fitPod(fitRL("cpu", "3000m", "memory", "5000", ext, "1")), ni: fitNodeInfo(withExt), want: 79},
		{name: "extended resource the pod does not request is left out",
			args: threeRes, pod: pod, ni: fitNodeInfo(withExt), want: 87},
		{name: "extended resource the node lacks is left out",
			args: threeRes, pod: fitPod(fitRL("cpu", "3000m", "memory", "5000", ext, "1")), ni: fitNodeInfo(small), want: 87},
		// cpu 8000/4000 caps at 1, memory .5: std .25 → 75
		{name: "fraction is capped at 1", pod: fitPod(fitRL("cpu", "8000m", "memory", "5000")), ni: fitNodeInfo(small), want: 75},
		{name: "one resource has no deviation",
			args: &configv1.NodeResourcesBalancedAllocationArgs{Resources: []configv1.ResourceSpec{{Name: "cpu"}}},
			pod:  pod, ni: fitNodeInfo(small), want: 100},
		// existing 1000m/5000 + pod 1000m/0: fractions .5, .5
		{name: "existing pods count",
			pod: fitPod(fitRL("cpu", "1000m")), ni: fitNodeInfo(small, fitPod(fitRL("cpu", "1000m", "memory", "5000"))), want: 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var args runtime.Object
			if tc.args != nil {
				args = tc.args
			}
			pl, err := NewNodeResourcesBalancedAllocation(context.Background(), args, nil)
			if err != nil {
				t.Fatal(err)
			}
			p := pl.(*NodeResourcesBalancedAllocation)
			state := framework.NewCycleState()
			if s := p.PreScore(context.Background(), state, tc.pod, nil); !s.IsSuccess() {
				t.Fatalf("PreScore: %v", s)
			}
			got, s := p.Score(context.Background(), state, tc.pod, tc.ni)
			if !s.IsSuccess() {
				t.Fatal(s)
			}
			if got != tc.want {
				t.Errorf("score = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestNodeResourcesBalancedAllocationSkipsBestEffort(t *testing.T) {
	pl, _ := NewNodeResourcesBalancedAllocation(context.Background(), nil, nil)
	p := pl.(*NodeResourcesBalancedAllocation)
	tests := []struct {
		name string
		pod  *corev1.Pod
		skip bool
	}{
		{name: "no requests", pod: fitPod(nil), skip: true},
		{name: "only an unscored resource", pod: fitPod(fitRL("ephemeral-storage", "1Gi")), skip: true},
		{name: "cpu request", pod: fitPod(fitRL("cpu", "1m")), skip: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := p.PreScore(context.Background(), framework.NewCycleState(), tc.pod, nil)
			if s.IsSkip() != tc.skip {
				t.Errorf("PreScore = %v, want skip=%v", s, tc.skip)
			}
		})
	}
}

func TestNodeResourcesBalancedAllocationArgs(t *testing.T) {
	if _, err := NewNodeResourcesBalancedAllocation(context.Background(), &configv1.NodeResourcesFitArgs{}, nil); err == nil {
		t.Error("wrong args type accepted")
	}
	dup := &configv1.NodeResourcesBalancedAllocationArgs{Resources: []configv1.ResourceSpec{{Name: "cpu"}, {Name: "cpu"}}}
	if _, err := NewNodeResourcesBalancedAllocation(context.Background(), dup, nil); err == nil {
		t.Error("duplicate resource accepted")
	}
}
