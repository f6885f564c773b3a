package kubelet

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A steady pod of 5 running containers: what every resync and relist
// event costs in pure work.
//
//	go test ./internal/kubelet -run '^$' -bench 'Plan|Status' -benchmem
func steadyPod() (*corev1.Pod, podObserved) {
	names := []string{"a", "b", "c", "d", "e"}
	pod := testPod(corev1.RestartPolicyAlways, names...)
	obs := podObserved{Sandboxes: []observedSandbox{readySandbox(0)}}
	for i, n := range names {
		c := running(n, int32(i))
		c.ID = fmt.Sprintf("%s-%d", n, i)
		obs.Containers = append(obs.Containers, c, exited(n, int32(i)-1, 1, t0))
	}
	obs.sortNewestFirst()
	return pod, obs
}

func BenchmarkComputePlan(b *testing.B) {
	pod, obs := steadyPod()
	in := planInput{Pod: pod, Observed: obs, Now: t0, ImagePresent: map[string]bool{"busybox": true}}
	b.ReportAllocs()
	for b.Loop() {
		if p := computePlan(in); len(p.Actions) != 0 {
			b.Fatalf("actions %v", actionsOf(p))
		}
	}
}

func BenchmarkComputeStatus(b *testing.B) {
	pod, obs := steadyPod()
	in := statusInput{Pod: pod, Observed: obs, Now: t0, HostIPs: []string{"127.0.0.1"}, RuntimeName: "rudder"}
	b.ReportAllocs()
	for b.Loop() {
		st := computeStatus(in)
		_ = statusBytes(&st)
	}
}
