package endpointslice

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/serviceendpoints"
)

func TestFindPort(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Ports: []corev1.ContainerPort{
			{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP},
			{Name: "dns", ContainerPort: 5353, Protocol: corev1.ProtocolUDP},
		}}},
		InitContainers: []corev1.Container{
			{Ports: []corev1.ContainerPort{{Name: "init", ContainerPort: 1, Protocol: corev1.ProtocolTCP}}},
			{RestartPolicy: &always, Ports: []corev1.ContainerPort{{Name: "sidecar", ContainerPort: 2, Protocol: corev1.ProtocolTCP}}},
		},
	}}
	cases := []struct {
		name   string
		target intstr.IntOrString
		proto  corev1.Protocol
		port   int32
		ok     bool
	}{
		{"number", intstr.FromInt32(9000), corev1.ProtocolTCP, 9000, true},
		{"name", intstr.FromString("http"), corev1.ProtocolTCP, 8080, true},
		{"name with another protocol", intstr.FromString("dns"), corev1.ProtocolTCP, 0, false},
		{"name and protocol", intstr.FromString("dns"), corev1.ProtocolUDP, 5353, true},
		{"sidecar port", intstr.FromString("sidecar"), corev1.ProtocolTCP, 2, true},
		{"plain init container port does not count", intstr.FromString("init"), corev1.ProtocolTCP, 0, false},
		{"unknown name", intstr.FromString("nope"), corev1.ProtocolTCP, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			port, ok := serviceendpoints.FindPort(pod, &corev1.ServicePort{TargetPort: tc.target, Protocol: tc.proto})
			if port != tc.port || ok != tc.ok {
				t.Errorf("FindPort = %d, %v; want %d, %v", port, ok, tc.port, tc.ok)
			}
		})
	}
}

func TestServicesForPodEvent(t *testing.T) {
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range []*corev1.Service{
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "all-v1"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"v": "1"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "all-v2"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"v": "2"}}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "manual"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}},
	} {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	lister := corelisters.NewServiceLister(idx)
	pod := func(rv string, labels map[string]string, mut ...func(*corev1.Pod)) *corev1.Pod {
		p := testPod("a", "10.0.0.1")
		p.ResourceVersion, p.Labels = rv, labels
		for _, m := range mut {
			m(p)
		}
		return p
	}
	v1 := map[string]string{"app": "web", "v": "1"}
	v2 := map[string]string{"app": "web", "v": "2"}
	cases := []struct {
		name     string
		old, cur *corev1.Pod
		want     []string
	}{
		{"add", nil, pod("1", v1), []string{"ns/all-v1", "ns/web"}},
		{"delete", pod("1", v1), nil, []string{"ns/all-v1", "ns/web"}},
		{"resync", pod("1", v1), pod("1", v1, notReady), nil},
		{"irrelevant change", pod("1", v1), pod("2", v1, func(p *corev1.Pod) { p.Annotations = map[string]string{"x": "y"} }), nil},
		{"readiness changed", pod("1", v1), pod("2", v1, notReady), []string{"ns/all-v1", "ns/web"}},
		{"deletion started", pod("1", v1), pod("2", v1, terminating), []string{"ns/all-v1", "ns/web"}},
		{"IP changed", pod("1", v1), pod("2", v1, func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.9"}} }), []string{"ns/all-v1", "ns/web"}},
		{"labels only: services gained and lost", pod("1", v1), pod("2", v2), []string{"ns/all-v1", "ns/all-v2"}},
		{"labels and readiness: every service", pod("1", v1), pod("2", v2, notReady), []string{"ns/all-v1", "ns/all-v2", "ns/web"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := serviceendpoints.ServicesForPodEvent(lister, tc.old, tc.cur, slog.Default())
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTriggerTimes(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	svc := testService()
	svc.CreationTimestamp = metav1.NewTime(t0)
	readyAt := func(name string, at time.Time) *corev1.Pod {
		p := testPod(name, "10.0.0.1")
		p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at)
		return p
	}
	tt := serviceendpoints.NewTriggerTimes()
	steps := []struct {
		name string
		pods []*corev1.Pod
		want time.Time
	}{
		{"first sync: the Service's creation", []*corev1.Pod{readyAt("a", t0.Add(time.Second))}, t0},
		{"nothing changed: none", []*corev1.Pod{readyAt("a", t0.Add(time.Second))}, time.Time{}},
		{"two pods changed: the earlier", []*corev1.Pod{readyAt("a", t0.Add(5*time.Second)), readyAt("b", t0.Add(3*time.Second))}, t0.Add(3 * time.Second)},
		{"a pod gone only: none", []*corev1.Pod{readyAt("a", t0.Add(5*time.Second))}, time.Time{}},
	}
	for _, st := range steps {
		if got := tt.Compute(svc, st.pods); !got.Equal(st.want) {
			t.Errorf("%s: got %v, want %v", st.name, got, st.want)
		}
	}
	tt.Forget("ns", "web")
	if got := tt.Compute(svc, nil); !got.Equal(t0) {
		t.Errorf("after Forget: got %v, want the creation time", got)
	}
}
