package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const schedulingGroup = "scheduling.k8s.io"

func priorityClass(name string, value int32) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value}
}

func TestPriorityClassDefaults(t *testing.T) {
	pc := priorityClass("high", 1000)
	mustResource(t, schedulingGroup, "priorityclasses").Default(pc)
	if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("preemptionPolicy = %v, want PreemptLowerPriority", pc.PreemptionPolicy)
	}
	never := priorityClass("batch", 10)
	never.PreemptionPolicy = new(corev1.PreemptNever)
	mustResource(t, schedulingGroup, "priorityclasses").Default(never)
	if *never.PreemptionPolicy != corev1.PreemptNever {
		t.Errorf("explicit policy overwritten: %v", *never.PreemptionPolicy)
	}
}

func TestPriorityClassValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		pc     *schedulingv1.PriorityClass
		mutate func(*schedulingv1.PriorityClass)
		want   []string
		detail string
	}{
		{name: "user class", pc: priorityClass("high", 1_000_000_000)},
		{name: "negative value", pc: priorityClass("low", -5)},
		{name: "user class above a billion", pc: priorityClass("higher", 1_000_000_001),
			want: []string{"value: Forbidden"}, detail: "maximum allowed value of a user defined priority is 1000000000"},
		{name: "system prefix", pc: priorityClass("system-mine", 10),
			want:   []string{"metadata.name: Forbidden"},
			detail: "priority class names with 'system-' prefix are reserved for system use only. error: system-mine is not a known system priority class"},
		{name: "system class", pc: priorityClass("system-node-critical", 2_000_001_000)},
		{name: "system class with wrong value", pc: priorityClass("system-cluster-critical", 5),
			want: []string{"metadata.name: Forbidden"}, detail: "value of system-cluster-critical PriorityClass must be 2000000000"},
		{name: "system class as global default", pc: priorityClass("system-cluster-critical", 2_000_000_000),
			mutate: func(pc *schedulingv1.PriorityClass) { pc.GlobalDefault = true },
			want:   []string{"metadata.name: Forbidden"}, detail: "globalDefault of system-cluster-critical PriorityClass must be false"},
		{name: "never preempt", pc: priorityClass("batch", 1),
			mutate: func(pc *schedulingv1.PriorityClass) { pc.PreemptionPolicy = new(corev1.PreemptNever) }},
		{name: "unknown preemption policy", pc: priorityClass("batch", 1),
			mutate: func(pc *schedulingv1.PriorityClass) { pc.PreemptionPolicy = new(corev1.PreemptionPolicy("Sometimes")) },
			want:   []string{"preemptionPolicy: Unsupported value"}},
		{name: "empty preemption policy", pc: priorityClass("batch", 1),
			mutate: func(pc *schedulingv1.PriorityClass) { pc.PreemptionPolicy = new(corev1.PreemptionPolicy("")) },
			want:   []string{"preemptionPolicy: Required value"}},
		{name: "bad name", pc: priorityClass("High", 1), want: []string{"metadata.name: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.mutate != nil {
				tc.mutate(tc.pc)
			}
			errs := runCreate(mustResource(t, schedulingGroup, "priorityclasses"), tc.pc)
			expectErrs(t, errs, tc.want...)
			if tc.detail != "" {
				expectErrWith(t, errs, tc.want[0], tc.detail)
			}
		})
	}
}

func TestSystemPriorityClasses(t *testing.T) {
	r := mustResource(t, schedulingGroup, "priorityclasses")
	want := map[string]int32{"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
	got := SystemPriorityClasses()
	if len(got) != len(want) {
		t.Fatalf("%d classes, want %d", len(got), len(want))
	}
	for _, pc := range got {
		if v, ok := want[pc.Name]; !ok || v != pc.Value {
			t.Errorf("%s = %d, want %d", pc.Name, pc.Value, v)
		}
		if pc.GlobalDefault || pc.Description == "" {
			t.Errorf("%s: globalDefault %v, description %q", pc.Name, pc.GlobalDefault, pc.Description)
		}
		if gvk := pc.GroupVersionKind(); gvk != r.GroupVersionKind() {
			t.Errorf("%s: kind %v, want %v", pc.Name, gvk, r.GroupVersionKind())
		}
		expectErrs(t, runCreate(r, pc))
	}
	// Callers get copies: changing one must not change the next call's.
	got[0].Value = 1
	if SystemPriorityClasses()[0].Value == 1 {
		t.Error("SystemPriorityClasses shares its objects")
	}
}

func TestPriorityClassUpdate(t *testing.T) {
	r := mustResource(t, schedulingGroup, "priorityclasses")
	old := priorityClass("high", 1000)
	r.Default(old)
	markStored(&old.ObjectMeta)
	for _, tc := range []struct {
		name   string
		mutate func(*schedulingv1.PriorityClass)
		want   []string
	}{
		{name: "description and default", mutate: func(pc *schedulingv1.PriorityClass) {
			pc.Description, pc.GlobalDefault = "for the web tier", true
		}},
		{name: "value", mutate: func(pc *schedulingv1.PriorityClass) { pc.Value = 2000 }, want: []string{"value: Forbidden"}},
		{name: "preemption policy", mutate: func(pc *schedulingv1.PriorityClass) { pc.PreemptionPolicy = new(corev1.PreemptNever) },
			want: []string{"preemptionPolicy: Invalid value"}},
		// The default fills an omitted policy before the comparison.
		{name: "omitted preemption policy", mutate: func(pc *schedulingv1.PriorityClass) { pc.PreemptionPolicy = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pc := old.DeepCopy()
			tc.mutate(pc)
			expectErrs(t, runUpdate(r, pc, old), tc.want...)
		})
	}
}
