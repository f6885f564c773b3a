package framework

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// TestPodRequestsIsTheLibrarys checks the scheduler's allocation-free
// PodRequests against component-helpers' resource.PodRequests, the
// definition upstream's scheduler and kubelet use, over the pod shapes
// that change the arithmetic.
func TestPodRequestsIsTheLibrarys(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	rl := func(cpu, mem string) corev1.ResourceList {
		out := corev1.ResourceList{}
		if cpu != "" {
			out[corev1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			out[corev1.ResourceMemory] = resource.MustParse(mem)
		}
		return out
	}
	c := func(cpu, mem string) corev1.Container {
		return corev1.Container{Name: cpu + mem, Resources: corev1.ResourceRequirements{Requests: rl(cpu, mem)}}
	}
	sidecar := func(cpu, mem string) corev1.Container {
		s := c(cpu, mem)
		s.RestartPolicy = &always
		return s
	}
	gpu := c("100m", "")
	gpu.Resources.Requests["example.com/gpu"] = resource.MustParse("2")
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
	}{
		{"no containers", corev1.PodSpec{}},
		{"one container", corev1.PodSpec{Containers: []corev1.Container{c("250m", "64Mi")}}},
		{"no requests", corev1.PodSpec{Containers: []corev1.Container{c("", ""), c("", "")}}},
		{"cpu only", corev1.PodSpec{Containers: []corev1.Container{c("1", "")}}},
		{"extended resource", corev1.PodSpec{Containers: []corev1.Container{gpu}}},
		{"init peak wins", corev1.PodSpec{InitContainers: []corev1.Container{c("2", "1Gi")}, Containers: []corev1.Container{c("500m", "128Mi")}}},
		{"sidecars before init", corev1.PodSpec{
			InitContainers: []corev1.Container{sidecar("300m", "100Mi"), c("1", "200Mi"), sidecar("200m", "")},
			Containers:     []corev1.Container{c("100m", "50Mi")}}},
		{"overhead", corev1.PodSpec{Containers: []corev1.Container{c("100m", "")}, Overhead: rl("50m", "10Mi")}},
		{"pod-level requests", corev1.PodSpec{Containers: []corev1.Container{c("100m", "100Mi"), c("", "")},
			Resources: &corev1.ResourceRequirements{Requests: rl("3", "")}}},
	} {
		pod := &corev1.Pod{Spec: tc.spec}
		for _, nonZero := range []bool{false, true} {
			opts := resourcehelper.PodResourcesOptions{}
			if nonZero {
				opts.NonMissingContainerRequests = corev1.ResourceList{
					corev1.ResourceCPU:    *resource.NewMilliQuantity(DefaultMilliCPURequest, resource.DecimalSI),
					corev1.ResourceMemory: *resource.NewQuantity(DefaultMemoryRequest, resource.BinarySI),
				}
			}
			name := tc.name
			if nonZero {
				name += ", non-zero"
			}
			t.Run(name, func(t *testing.T) {
				want := NewResource(resourcehelper.PodRequests(pod, opts))
				got := PodRequests(pod, nonZero)
				if got.MilliCPU != want.MilliCPU || got.Memory != want.Memory || got.EphemeralStorage != want.EphemeralStorage || len(got.Scalar) != len(want.Scalar) {
					t.Fatalf("PodRequests = %+v, component-helpers says %+v", got, want)
				}
				for k, v := range want.Scalar {
					if got.Scalar[k] != v {
						t.Errorf("%s = %d, component-helpers says %d", k, got.Scalar[k], v)
					}
				}
			})
		}
	}
}
