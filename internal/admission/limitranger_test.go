package admission

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var pvcsGVR = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}

func lrList(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func lrRange(items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "limits"}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func lrContainer(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Image: "nginx", Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

func TestLimitRangerDefaults(t *testing.T) {
	lr := lrRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer,
		Default: lrList("cpu", "500m", "memory", "256Mi"), DefaultRequest: lrList("cpu", "100m", "memory", "128Mi")})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{lrContainer("init", nil, nil)},
		Containers:     []corev1.Container{lrContainer("a", nil, lrList("memory", "1Gi"))},
	}}
	plugin := &LimitRanger{Objects: &objectSet{items: []runtime.Object{lr}}}
	if err := plugin.Admit(context.Background(), &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: pod}); err != nil {
		t.Fatal(err)
	}
	a, init := pod.Spec.Containers[0].Resources, pod.Spec.InitContainers[0].Resources
	checks := []struct {
		name      string
		got, want string
	}{
		{"cpu limit defaulted", a.Limits.Cpu().String(), "500m"},
		{"own memory limit kept", a.Limits.Memory().String(), "1Gi"},
		{"cpu request from defaultRequest", a.Requests.Cpu().String(), "100m"},
		{"memory request from defaultRequest", a.Requests.Memory().String(), "128Mi"},
		{"init container defaulted too", init.Limits.Cpu().String() + "/" + init.Requests.Memory().String(), "500m/128Mi"},
		{"annotation", pod.Annotations["kubernetes.io/limit-ranger"],
			"LimitRanger plugin set: cpu, memory request for container a; cpu limit for container a; " +
				"cpu, memory request for init container init; cpu, memory limit for init container init"},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if c.got != c.want {
				t.Errorf("got %q, want %q", c.got, c.want)
			}
		})
	}
	t.Run("no LimitRange leaves the pod alone", func(t *testing.T) {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{lrContainer("a", nil, nil)}}}
		plugin := &LimitRanger{Objects: &objectSet{}}
		if err := plugin.Admit(context.Background(), &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Object: pod}); err != nil {
			t.Fatal(err)
		}
		if pod.Annotations != nil || pod.Spec.Containers[0].Resources.Limits != nil {
			t.Errorf("pod changed: %v %v", pod.Annotations, pod.Spec.Containers[0].Resources)
		}
	})
}

func TestLimitRangerValidate(t *testing.T) {
	container := func(kind corev1.LimitType, f func(*corev1.LimitRangeItem)) *corev1.LimitRange {
		item := corev1.LimitRangeItem{Type: kind}
		f(&item)
		return lrRange(item)
	}
	maxCPU2 := container(corev1.LimitTypeContainer, func(i *corev1.LimitRangeItem) { i.Max = lrList("cpu", "2") })
	cases := []struct {
		name       string
		lr         *corev1.LimitRange
		containers []corev1.Container
		err        string
	}{
		{"within max", maxCPU2, []corev1.Container{lrContainer("a", lrList("cpu", "1"), lrList("cpu", "2"))}, ""},
		{"limit over max", maxCPU2, []corev1.Container{lrContainer("a", lrList("cpu", "1"), lrList("cpu", "4"))},
			`pods "p" is forbidden: maximum cpu usage per Container is 2, but limit is 4`},
		{"request over max", maxCPU2, []corev1.Container{lrContainer("a", lrList("cpu", "3"), lrList("cpu", "2"))},
			`pods "p" is forbidden: maximum cpu usage per Container is 2, but request is 3`},
		{"no limit under a max", maxCPU2, []corev1.Container{lrContainer("a", lrList("cpu", "1"), nil)},
			`pods "p" is forbidden: maximum cpu usage per Container is 2.  No limit is specified`},
		{"request under min", container(corev1.LimitTypeContainer, func(i *corev1.LimitRangeItem) { i.Min = lrList("memory", "64Mi") }),
			[]corev1.Container{lrContainer("a", lrList("memory", "32Mi"), nil)},
			`pods "p" is forbidden: minimum memory usage per Container is 64Mi, but request is 32Mi`},
		{"no request under a min", container(corev1.LimitTypeContainer, func(i *corev1.LimitRangeItem) { i.Min = lrList("memory", "64Mi") }),
			[]corev1.Container{lrContainer("a", nil, nil)},
			`pods "p" is forbidden: minimum memory usage per Container is 64Mi.  No request is specified`},
		{"ratio exceeded", container(corev1.LimitTypeContainer, func(i *corev1.LimitRangeItem) { i.MaxLimitRequestRatio = lrList("cpu", "2") }),
			[]corev1.Container{lrContainer("a", lrList("cpu", "100m"), lrList("cpu", "500m"))},
			`pods "p" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 5.000000`},
		{"ratio without a request", container(corev1.LimitTypeContainer, func(i *corev1.LimitRangeItem) { i.MaxLimitRequestRatio = lrList("cpu", "2") }),
			[]corev1.Container{lrContainer("a", nil, lrList("cpu", "500m"))},
			`pods "p" is forbidden: cpu max limit to request ratio per Container is 2, but no request is specified or request is 0`},
		{"init containers are judged too", maxCPU2,
			[]corev1.Container{lrContainer("a", lrList("cpu", "1"), lrList("cpu", "1"))},
			`pods "p" is forbidden: maximum cpu usage per Container is 2, but limit is 3`},
		{"pod total over the Pod max", container(corev1.LimitTypePod, func(i *corev1.LimitRangeItem) { i.Max = lrList("cpu", "1") }),
			[]corev1.Container{lrContainer("a", nil, lrList("cpu", "600m")), lrContainer("b", nil, lrList("cpu", "600m"))},
			`pods "p" is forbidden: maximum cpu usage per Pod is 1, but limit is 1200m`},
		{"every violation is reported",
			container(corev1.LimitTypeContainer, func(i *corev1.LimitRangeItem) { i.Max = lrList("cpu", "2", "memory", "1Gi") }),
			[]corev1.Container{lrContainer("a", nil, lrList("cpu", "4", "memory", "2Gi"))},
			`pods "p" is forbidden: [maximum cpu usage per Container is 2, but limit is 4, maximum memory usage per Container is 1Gi, but limit is 2Gi]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: tc.containers}}
			if tc.name == "init containers are judged too" {
				pod.Spec.InitContainers = []corev1.Container{lrContainer("i", lrList("cpu", "1"), lrList("cpu", "3"))}
			}
			plugin := &LimitRanger{Objects: &objectSet{items: []runtime.Object{tc.lr}}}
			err := plugin.Validate(context.Background(), &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: pod})
			lrExpect(t, err, tc.err)
		})
	}
	t.Run("pod updates are not judged", func(t *testing.T) {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{lrContainer("a", nil, lrList("cpu", "4"))}}}
		plugin := &LimitRanger{Objects: &objectSet{items: []runtime.Object{maxCPU2}}}
		lrExpect(t, plugin.Validate(context.Background(), &Attributes{Operation: Update, Resource: podsGVR, Namespace: "ns", Object: pod, OldObject: pod}), "")
	})
}

func TestLimitRangerClaims(t *testing.T) {
	lr := lrRange(corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: lrList("storage", "1Gi"), Max: lrList("storage", "10Gi")})
	cases := []struct {
		name     string
		op       Operation
		requests corev1.ResourceList
		err      string
	}{
		{"within bounds", Create, lrList("storage", "5Gi"), ""},
		{"under min", Create, lrList("storage", "500Mi"),
			`persistentvolumeclaims "c" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi`},
		{"over max on update", Update, lrList("storage", "20Gi"),
			`persistentvolumeclaims "c" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi`},
		{"no request", Create, nil,
			`persistentvolumeclaims "c" is forbidden: [minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified]`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"},
				Spec: corev1.PersistentVolumeClaimSpec{Resources: corev1.VolumeResourceRequirements{Requests: tc.requests}}}
			plugin := &LimitRanger{Objects: &objectSet{items: []runtime.Object{lr}}}
			lrExpect(t, plugin.Validate(context.Background(), &Attributes{Operation: tc.op, Resource: pvcsGVR, Namespace: "ns", Name: "c", Object: pvc,
				OldObject: pvc.DeepCopy()}), tc.err)
		})
	}
	t.Run("a claim being deleted is let go", func(t *testing.T) {
		now := metav1.Now()
		old := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", DeletionTimestamp: &now}}
		plugin := &LimitRanger{Objects: &objectSet{items: []runtime.Object{lr}}}
		lrExpect(t, plugin.Validate(context.Background(), &Attributes{Operation: Update, Resource: pvcsGVR, Namespace: "ns", Name: "c",
			Object: old.DeepCopy(), OldObject: old}), "")
	})
}

func lrExpect(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil || err.Error() != want || !apierrors.IsForbidden(err) {
		t.Fatalf("got %v, want 403 %q", err, want)
	}
}

// TestLimitRangerLiveLookup: an empty cached list is confirmed against
// storage once per TTL, so a LimitRange the cache has not seen yet still
// applies, and an empty namespace does not cost a read per pod.
func TestLimitRangerLiveLookup(t *testing.T) {
	lr := lrRange(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: lrList("cpu", "500m")})
	objs := &objectSet{items: []runtime.Object{lr}, cacheLag: true}
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	plugin := &LimitRanger{Objects: objs, Clock: clk}
	admit := func() *corev1.Pod {
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{lrContainer("a", nil, nil)}}}
		if err := plugin.Admit(context.Background(), &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Object: pod}); err != nil {
			t.Fatal(err)
		}
		return pod
	}
	steps := []struct {
		name       string
		advance    time.Duration
		wantFresh  int
		wantCPULim string
	}{
		{"first pod confirms against storage", 0, 1, "500m"},
		{"within the TTL the answer is remembered", 29 * time.Second, 1, "500m"},
		{"after the TTL it is confirmed again", 2 * time.Second, 2, "500m"},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clk.SetTime(clk.Now().Add(s.advance))
			pod := admit()
			if objs.freshLists != s.wantFresh {
				t.Errorf("fresh lists %d, want %d", objs.freshLists, s.wantFresh)
			}
			if got := pod.Spec.Containers[0].Resources.Limits.Cpu().String(); got != s.wantCPULim {
				t.Errorf("cpu limit %s, want %s", got, s.wantCPULim)
			}
		})
	}
	t.Run("a cached LimitRange needs no storage read", func(t *testing.T) {
		objs := &objectSet{items: []runtime.Object{lr}}
		plugin := &LimitRanger{Objects: objs}
		pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{lrContainer("a", nil, nil)}}}
		if err := plugin.Admit(context.Background(), &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Object: pod}); err != nil {
			t.Fatal(err)
		}
		if objs.freshLists != 0 {
			t.Errorf("fresh lists %d", objs.freshLists)
		}
	})
}

func TestLimitRangerPodTotals(t *testing.T) {
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	cases := []struct {
		name string
		pod  corev1.PodSpec
		want string
	}{
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{
			lrContainer("a", lrList("cpu", "100m"), nil), lrContainer("b", lrList("cpu", "200m"), nil)}}, "300m"},
		{"a bigger init container wins", corev1.PodSpec{
			InitContainers: []corev1.Container{lrContainer("i", lrList("cpu", "1"), nil)},
			Containers:     []corev1.Container{lrContainer("a", lrList("cpu", "100m"), nil)}}, "1"},
		{"sidecars run beside everything after them", corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "side", Image: "x", RestartPolicy: always, Resources: corev1.ResourceRequirements{Requests: lrList("cpu", "200m")}},
				lrContainer("i", lrList("cpu", "500m"), nil)},
			Containers: []corev1.Container{lrContainer("a", lrList("cpu", "100m"), nil)}}, "700m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := lrPodRequests(&corev1.Pod{Spec: tc.pod})
			if got.Cpu().String() != tc.want {
				t.Fatalf("cpu %s, want %s", got.Cpu(), tc.want)
			}
		})
	}
}
