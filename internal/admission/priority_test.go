package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func prioClass(name string, value int32, globalDefault bool, policy corev1.PreemptionPolicy) *schedulingv1.PriorityClass {
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: globalDefault}
	if policy != "" {
		pc.PreemptionPolicy = &policy
	}
	return pc
}

func TestPriorityAdmitPods(t *testing.T) {
	high := prioClass("high", 1000, false, corev1.PreemptLowerPriority)
	polite := prioClass("polite", 500, false, corev1.PreemptNever)
	cases := []struct {
		name    string
		classes []runtime.Object
		pod     corev1.PodSpec
		// want* are the resolved fields; err an exact message.
		wantClass    string
		wantPriority int32
		wantPolicy   corev1.PreemptionPolicy
		err          string
	}{
		{name: "no class and no default: 0 and PreemptLowerPriority",
			wantPriority: 0, wantPolicy: corev1.PreemptLowerPriority},
		{name: "named class resolves", classes: []runtime.Object{high, polite}, pod: corev1.PodSpec{PriorityClassName: "high"},
			wantClass: "high", wantPriority: 1000, wantPolicy: corev1.PreemptLowerPriority},
		{name: "the class's preemption policy is copied", classes: []runtime.Object{polite}, pod: corev1.PodSpec{PriorityClassName: "polite"},
			wantClass: "polite", wantPriority: 500, wantPolicy: corev1.PreemptNever},
		{name: "unknown class refused", classes: []runtime.Object{high}, pod: corev1.PodSpec{PriorityClassName: "nope"},
			err: `pods "p" is forbidden: no PriorityClass with name nope was found`},
		{name: "the global default applies to a pod naming none",
			classes:   []runtime.Object{high, prioClass("batch", 10, true, corev1.PreemptNever)},
			wantClass: "batch", wantPriority: 10, wantPolicy: corev1.PreemptNever},
		{name: "of two defaults the lower wins",
			classes:   []runtime.Object{prioClass("d1", 20, true, ""), prioClass("d2", 5, true, "")},
			wantClass: "d2", wantPriority: 5},
		{name: "a stated priority equal to the class's is fine", classes: []runtime.Object{high},
			pod:       corev1.PodSpec{PriorityClassName: "high", Priority: ptr.To[int32](1000)},
			wantClass: "high", wantPriority: 1000, wantPolicy: corev1.PreemptLowerPriority},
		{name: "a stated priority other than the class's is refused", classes: []runtime.Object{high},
			pod: corev1.PodSpec{PriorityClassName: "high", Priority: ptr.To[int32](7)},
			err: `pods "p" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name`},
		{name: "a stated priority without a class is refused",
			pod: corev1.PodSpec{Priority: ptr.To[int32](7)},
			err: `pods "p" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name`},
		{name: "a stated policy other than the class's is refused", classes: []runtime.Object{polite},
			pod: corev1.PodSpec{PriorityClassName: "polite", PreemptionPolicy: ptr.To(corev1.PreemptLowerPriority)},
			err: `pods "p" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name`},
		{name: "system classes are allowed outside kube-system",
			classes:   []runtime.Object{prioClass("system-node-critical", 2000001000, false, corev1.PreemptLowerPriority)},
			pod:       corev1.PodSpec{PriorityClassName: "system-node-critical"},
			wantClass: "system-node-critical", wantPriority: 2000001000, wantPolicy: corev1.PreemptLowerPriority},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: tc.pod}
			plugin := Priority{Objects: &objectSet{items: tc.classes}}
			err := plugin.Admit(context.Background(), &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: pod})
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || !apierrors.IsForbidden(err) {
					t.Fatalf("got %v, want 403 %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			s := pod.Spec
			var policy corev1.PreemptionPolicy
			if s.PreemptionPolicy != nil {
				policy = *s.PreemptionPolicy
			}
			if s.PriorityClassName != tc.wantClass || s.Priority == nil || *s.Priority != tc.wantPriority || policy != tc.wantPolicy {
				t.Fatalf("class %q priority %v policy %q, want %q %d %q", s.PriorityClassName, s.Priority, policy, tc.wantClass, tc.wantPriority, tc.wantPolicy)
			}
		})
	}
}

func TestPriorityKeepsFieldsOnUpdate(t *testing.T) {
	old := &corev1.Pod{Spec: corev1.PodSpec{Priority: ptr.To[int32](1000), PreemptionPolicy: ptr.To(corev1.PreemptNever)}}
	pod := &corev1.Pod{}
	plugin := Priority{Objects: &objectSet{}}
	if err := plugin.Admit(context.Background(), &Attributes{Operation: Update, Resource: podsGVR, Object: pod, OldObject: old}); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.Priority == nil || *pod.Spec.Priority != 1000 || pod.Spec.PreemptionPolicy == nil || *pod.Spec.PreemptionPolicy != corev1.PreemptNever {
		t.Fatalf("priority %v policy %v", pod.Spec.Priority, pod.Spec.PreemptionPolicy)
	}
	if pod.Spec.Priority == old.Spec.Priority {
		t.Error("the stored pod's pointer was shared")
	}
}

func TestPriorityClassOneGlobalDefault(t *testing.T) {
	existing := prioClass("batch", 10, true, "")
	cases := []struct {
		name string
		op   Operation
		pc   *schedulingv1.PriorityClass
		err  string
	}{
		{"a second default refused", Create, prioClass("other", 5, true, ""),
			`priorityclasses.scheduling.k8s.io "other" is forbidden: PriorityClass batch is already marked as default. Only one default can exist`},
		{"marking another class default refused", Update, prioClass("high", 1000, true, ""),
			`priorityclasses.scheduling.k8s.io "high" is forbidden: PriorityClass batch is already marked as default. Only one default can exist`},
		{"the default itself may be updated", Update, prioClass("batch", 10, true, ""), ""},
		{"a non-default class is fine", Create, prioClass("low", 1, false, ""), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := &objectSet{items: []runtime.Object{existing}, cacheLag: true}
			plugin := Priority{Objects: objs}
			err := plugin.Validate(context.Background(), &Attributes{Operation: tc.op, Resource: priorityClassesGVR, Name: tc.pc.Name, Object: tc.pc})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err {
				t.Fatalf("got %q, want %q", got, tc.err)
			}
			if tc.pc.GlobalDefault && objs.freshLists == 0 {
				t.Error("a new default must be checked against a fresh list, not a lagging cache")
			}
		})
	}
}
