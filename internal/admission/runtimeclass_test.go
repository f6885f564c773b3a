package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func rcClass(name string, overhead corev1.ResourceList, sched *nodev1.Scheduling) *nodev1.RuntimeClass {
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: name, Scheduling: sched}
	if overhead != nil {
		rc.Overhead = &nodev1.Overhead{PodFixed: overhead}
	}
	return rc
}

func rcList(cpu, mem string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
}

// rcDescribe prints what the plugin sets, for comparison.
func rcDescribe(s corev1.PodSpec) string {
	out := fmt.Sprintf("overhead=%s/%s selector=%v tolerations=", s.Overhead.Cpu(), s.Overhead.Memory(), s.NodeSelector)
	for _, t := range s.Tolerations {
		out += fmt.Sprintf("[%s %s %s %s %v]", t.Key, t.Operator, t.Value, t.Effect, ptr.Deref(t.TolerationSeconds, -1))
	}
	return out
}

func TestRuntimeClassAdmit(t *testing.T) {
	kata := rcClass("kata", rcList("250m", "120Mi"), &nodev1.Scheduling{
		NodeSelector: map[string]string{"runtime": "kata"},
		Tolerations:  []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
	})
	plain := rcClass("plain", nil, nil)
	classes := gvrObjects{rcRuntimeClassesGVR: {kata, plain}}
	cases := []struct {
		name string
		spec corev1.PodSpec
		want string // rcDescribe of the admitted pod
		err  string
	}{
		{name: "no class: nothing changes",
			want: "overhead=0/0 selector=map[] tolerations="},
		{name: "a class without overhead or scheduling", spec: corev1.PodSpec{RuntimeClassName: ptr.To("plain")},
			want: "overhead=0/0 selector=map[] tolerations="},
		{name: "overhead, selector and tolerations come from the class", spec: corev1.PodSpec{RuntimeClassName: ptr.To("kata")},
			want: "overhead=250m/120Mi selector=map[runtime:kata] tolerations=[sandbox Exists  NoSchedule -1]"},
		{name: "the pod's selector is merged with the class's",
			spec: corev1.PodSpec{RuntimeClassName: ptr.To("kata"), NodeSelector: map[string]string{"zone": "a", "runtime": "kata"}},
			want: "overhead=250m/120Mi selector=map[runtime:kata zone:a] tolerations=[sandbox Exists  NoSchedule -1]"},
		{name: "a selector conflict is refused",
			spec: corev1.PodSpec{RuntimeClassName: ptr.To("kata"), NodeSelector: map[string]string{"runtime": "runc"}},
			err:  `pods "p" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[runtime] = kata; pod.spec.nodeSelector[runtime] = runc`},
		{name: "the pod's own tolerations come first; covered ones go",
			spec: corev1.PodSpec{RuntimeClassName: ptr.To("kata"), Tolerations: []corev1.Toleration{
				{Key: "sandbox", Operator: corev1.TolerationOpEqual, Value: "yes", Effect: corev1.TaintEffectNoSchedule},
				{Key: "gpu", Operator: corev1.TolerationOpExists}}},
			want: "overhead=250m/120Mi selector=map[runtime:kata] tolerations=[gpu Exists   -1][sandbox Exists  NoSchedule -1]"},
		{name: "an overhead equal to the class's is accepted",
			spec: corev1.PodSpec{RuntimeClassName: ptr.To("kata"), Overhead: rcList("0.25", "120Mi")},
			want: "overhead=250m/120Mi selector=map[runtime:kata] tolerations=[sandbox Exists  NoSchedule -1]"},
		{name: "an overhead other than the class's is refused",
			spec: corev1.PodSpec{RuntimeClassName: ptr.To("kata"), Overhead: rcList("1", "1Gi")},
			err:  `pods "p" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
		{name: "a missing class is refused", spec: corev1.PodSpec{RuntimeClassName: ptr.To("gvisor")},
			err: `pods "p" is forbidden: pod rejected: RuntimeClass "gvisor" not found`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: tc.spec}
			p := RuntimeClass{Objects: classes}
			a := &Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", Name: "p", Object: pod}
			err := p.Admit(context.Background(), a)
			if err == nil {
				err = p.Validate(context.Background(), a)
			}
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := rcDescribe(pod.Spec); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			// The chain runs mutators again after a webhook changed the
			// object: a second pass must change nothing.
			if err := p.Admit(context.Background(), a); err != nil {
				t.Fatalf("second pass: %v", err)
			}
			if got := rcDescribe(pod.Spec); got != tc.want {
				t.Fatalf("second pass changed the pod:\ngot  %s\nwant %s", got, tc.want)
			}
		})
	}
	t.Run("the class's objects are not shared with the pod", func(t *testing.T) {
		pod := &corev1.Pod{Spec: corev1.PodSpec{RuntimeClassName: ptr.To("kata")}}
		if err := (RuntimeClass{Objects: classes}).Admit(context.Background(), &Attributes{Operation: Create, Resource: testPodsGVR, Object: pod}); err != nil {
			t.Fatal(err)
		}
		pod.Spec.NodeSelector["runtime"] = "changed"
		pod.Spec.Overhead[corev1.ResourceCPU] = resource.MustParse("9")
		if kata.Scheduling.NodeSelector["runtime"] != "kata" || kata.Overhead.PodFixed.Cpu().String() != "250m" {
			t.Fatal("admitting a pod changed the cached RuntimeClass")
		}
	})
}

func TestRuntimeClassValidateOverhead(t *testing.T) {
	classes := gvrObjects{rcRuntimeClassesGVR: {rcClass("kata", rcList("250m", "120Mi"), nil), rcClass("plain", nil, nil)}}
	cases := []struct {
		name string
		spec corev1.PodSpec
		err  string
	}{
		{name: "no overhead, no class", spec: corev1.PodSpec{}},
		{name: "overhead without a class", spec: corev1.PodSpec{Overhead: rcList("1", "1Gi")},
			err: `pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{name: "overhead with a class that defines none", spec: corev1.PodSpec{RuntimeClassName: ptr.To("plain"), Overhead: rcList("1", "1Gi")},
			err: `pods "p" is forbidden: pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead`},
		{name: "overhead changed after admit (by a later mutator)", spec: corev1.PodSpec{RuntimeClassName: ptr.To("kata"), Overhead: rcList("500m", "120Mi")},
			err: `pods "p" is forbidden: pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: tc.spec}
			err := RuntimeClass{Objects: classes}.Validate(context.Background(), &Attributes{Operation: Create, Resource: testPodsGVR, Namespace: "ns", Name: "p", Object: pod})
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.err {
				t.Fatalf("got %q, want %q", got, tc.err)
			}
		})
	}
}

func TestRuntimeClassMergeTolerations(t *testing.T) {
	exists := func(key string, effect corev1.TaintEffect) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: effect}
	}
	noExec := func(key string, secs int64) corev1.Toleration {
		return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To(secs)}
	}
	cases := []struct {
		name          string
		first, second []corev1.Toleration
		want          []corev1.Toleration
	}{
		{name: "disjoint lists are concatenated", first: []corev1.Toleration{exists("a", "")}, second: []corev1.Toleration{exists("b", "")},
			want: []corev1.Toleration{exists("a", ""), exists("b", "")}},
		{name: "duplicates keep the first", first: []corev1.Toleration{exists("a", "")}, second: []corev1.Toleration{exists("a", "")},
			want: []corev1.Toleration{exists("a", "")}},
		{name: "a later wider toleration replaces a narrower one", first: []corev1.Toleration{exists("a", corev1.TaintEffectNoSchedule)}, second: []corev1.Toleration{exists("a", "")},
			want: []corev1.Toleration{exists("a", "")}},
		{name: "an empty key with Exists covers everything", first: []corev1.Toleration{exists("a", ""), exists("b", corev1.TaintEffectNoExecute)}, second: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			want: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
		{name: "a shorter NoExecute stay is covered by a longer one", first: []corev1.Toleration{noExec("a", 30)}, second: []corev1.Toleration{noExec("a", 300)},
			want: []corev1.Toleration{noExec("a", 300)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := rcMergeTolerations(tc.first, tc.second)
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Fatalf("got  %s\nwant %s", rcDescribe(corev1.PodSpec{Tolerations: got}), rcDescribe(corev1.PodSpec{Tolerations: tc.want}))
			}
		})
	}
}
