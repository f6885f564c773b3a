package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func runtimeClass(mutate func(*nodev1.RuntimeClass)) *nodev1.RuntimeClass {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}
	mutate(rc)
	return rc
}

func TestRuntimeClassValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*nodev1.RuntimeClass)
		want   []string
	}{
		{name: "valid", mutate: func(*nodev1.RuntimeClass) {}},
		{name: "no handler", mutate: func(rc *nodev1.RuntimeClass) { rc.Handler = "" }, want: []string{"handler: Invalid value"}},
		{name: "handler not a DNS label", mutate: func(rc *nodev1.RuntimeClass) { rc.Handler = "run.sc" }, want: []string{"handler: Invalid value"}},
		{name: "overhead", mutate: func(rc *nodev1.RuntimeClass) {
			rc.Overhead = &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")}}
		}},
		{name: "negative overhead", mutate: func(rc *nodev1.RuntimeClass) {
			rc.Overhead = &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("-1")}}
		}, want: []string{"overhead.limits[cpu]: Invalid value"}},
		{name: "scheduling", mutate: func(rc *nodev1.RuntimeClass) {
			rc.Scheduling = &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "gvisor"},
				Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}
		}},
		{name: "bad node selector", mutate: func(rc *nodev1.RuntimeClass) {
			rc.Scheduling = &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "g visor"}}
		}, want: []string{"scheduling.nodeSelector: Invalid value"}},
		{name: "bad toleration", mutate: func(rc *nodev1.RuntimeClass) {
			rc.Scheduling = &nodev1.Scheduling{Tolerations: []corev1.Toleration{{Key: "a", Operator: "Maybe"}}}
		}, want: []string{"scheduling.tolerations[0].operator: Unsupported value"}},
		// RuntimeClass metadata gets the generic checks only, without core's
		// finalizer-name rule.
		{name: "unqualified finalizer", mutate: func(rc *nodev1.RuntimeClass) { rc.Finalizers = []string{"mine"} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(mustResource(t, "node.k8s.io", "runtimeclasses"), runtimeClass(tc.mutate)), tc.want...)
		})
	}
}

func TestRuntimeClassUpdate(t *testing.T) {
	r := mustResource(t, "node.k8s.io", "runtimeclasses")
	old := runtimeClass(func(*nodev1.RuntimeClass) {})
	markStored(&old.ObjectMeta)

	sched := old.DeepCopy()
	sched.Scheduling = &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "gvisor"}}
	expectErrs(t, runUpdate(r, sched, old))

	handler := old.DeepCopy()
	handler.Handler = "kata"
	errs := runUpdate(r, handler, old)
	expectErrs(t, errs, "handler: Invalid value")
	expectErrWith(t, errs, "handler: Invalid value", "field is immutable")
}
