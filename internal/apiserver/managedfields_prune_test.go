package apiserver

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestTrackUpdateSkipsCommonParts checks that tracking an update over
// copies with the unchanged parts blanked records the very entries the
// whole objects give, through a sequence of writes by several managers
// that add, change and take away each other's fields.
func TestTrackUpdateSkipsCommonParts(t *testing.T) {
	s := newApplyServer(t)
	pods := s.handlers[schema.GroupVersionResource{Version: "v1", Resource: "pods"}]
	configMaps := s.handlers[schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}]

	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid-1", Labels: map[string]string{"app": "a"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1",
			Env: []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: "2"}}}}},
	}
	steps := []struct {
		name, manager, sub string
		change             func(*corev1.Pod)
		pruned             bool // whether a part is skipped
	}{
		{"create", "ctrl", "", func(p *corev1.Pod) {}, false},
		{"status", "kubelet", "status", func(p *corev1.Pod) {
			p.Status.Phase = corev1.PodRunning
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: "Custom", Status: corev1.ConditionFalse}}
			p.Status.PodIP = "10.0.0.1"
		}, true},
		{"spec", "ctrl", "", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "img:2" }, true},
		{"remove another's env", "other", "", func(p *corev1.Pod) { p.Spec.Containers[0].Env = p.Spec.Containers[0].Env[:1] }, true},
		{"remove another's condition", "remover", "status", func(p *corev1.Pod) { p.Status.Conditions = p.Status.Conditions[:1] }, true},
		{"labels only", "labeler", "", func(p *corev1.Pod) { p.Labels["tier"] = "web" }, true},
		{"annotations and finalizers", "annotator", "", func(p *corev1.Pod) {
			p.Annotations = map[string]string{"note": "x"}
			p.Finalizers = []string{"example.com/keep"}
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: "uid-rs"}}
		}, true},
		{"remove another's label", "unlabeler", "", func(p *corev1.Pod) { delete(p.Labels, "tier") }, true},
		{"status with metadata kept", "kubelet", "status", func(p *corev1.Pod) { p.Status.PodIP = "10.0.0.3" }, true},
		{"no change", "idle", "", func(p *corev1.Pod) {}, true},
		{"status and spec", "both", "", func(p *corev1.Pod) {
			p.Spec.ActiveDeadlineSeconds = new(int64)
			p.Status.PodIP = "10.0.0.2"
		}, true}, // the metadata's labels and owners are the same

	}
	var live runtime.Object = &corev1.Pod{}
	for _, st := range steps {
		next := live.DeepCopyObject().(*corev1.Pod)
		if st.name == "create" {
			next = pod.DeepCopy()
		}
		st.change(next)
		_, _, pruned := withoutCommonParts(live, next, "v1")
		if pruned != st.pruned {
			t.Errorf("%s: parts skipped %v, want %v", st.name, pruned, st.pruned)
		}
		live = compareTracking(t, pods, st.name, live, next, st.manager, st.sub)
	}
	for _, e := range objectMeta(live).GetManagedFields() {
		if e.Manager == "labeler" {
			t.Errorf("labeler, whose only label another manager removed, still has an entry: %s", e.FieldsV1.Raw)
		}
	}
	if e := managerEntry(t, objectMeta(live), "ctrl", ""); owns(t, e, "spec", "containers", `k:{"name":"c"}`, "env", `k:{"name":"B"}`) {
		t.Errorf("ctrl still owns the env var another manager removed: %s", e.FieldsV1.Raw)
	}

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default", UID: "uid-2"}, Data: map[string]string{"k": "v"}}
	created := compareTracking(t, configMaps, "configmap create", &corev1.ConfigMap{}, cm, "maker", "")
	relabeled := created.DeepCopyObject().(*corev1.ConfigMap)
	relabeled.Labels = map[string]string{"x": "y"}
	compareTracking(t, configMaps, "configmap labels", created, relabeled, "labeler", "")
}

// compareTracking tracks next over live both ways, whole and with the
// common parts skipped, fails the test if the entries differ (times
// aside), and returns the tracked object.
func compareTracking(t *testing.T, h *resourceHandler, step string, live, next runtime.Object, manager, sub string) runtime.Object {
	t.Helper()
	fm, err := h.fieldManager(sub)
	if err != nil {
		t.Fatal(err)
	}
	wholeLive, wholeNext := live.DeepCopyObject(), next.DeepCopyObject()
	wholeLive.GetObjectKind().SetGroupVersionKind(h.gvk)
	wholeNext.GetObjectKind().SetGroupVersionKind(h.gvk)
	whole := fm.UpdateNoErrors(wholeLive, wholeNext, manager)
	got := h.trackUpdate(live.DeepCopyObject(), next.DeepCopyObject(), manager, sub)
	if w, g := withoutTimes(objectMeta(whole).GetManagedFields()), withoutTimes(objectMeta(got).GetManagedFields()); !reflect.DeepEqual(w, g) {
		t.Fatalf("%s: managedFields\n got %s\nwant %s", step, entriesString(g), entriesString(w))
	}
	got.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	return got
}

func withoutTimes(entries []metav1.ManagedFieldsEntry) []metav1.ManagedFieldsEntry {
	out := make([]metav1.ManagedFieldsEntry, len(entries))
	for i, e := range entries {
		e.Time = nil
		out[i] = e
	}
	return out
}

func entriesString(entries []metav1.ManagedFieldsEntry) string {
	s := ""
	for _, e := range entries {
		s += e.Manager + "/" + e.Subresource + " " + string(e.FieldsV1.Raw) + "\n"
	}
	return s
}

// TestSemanticallyEqual checks the field-by-field comparison against
// apiequality's over the whole object.
func TestSemanticallyEqual(t *testing.T) {
	a := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n"}}
	cases := map[string]func(*corev1.Pod){
		"same":     func(*corev1.Pod) {},
		"metadata": func(p *corev1.Pod) { p.Labels = map[string]string{"a": "b"} },
		"spec":     func(p *corev1.Pod) { p.Spec.NodeName = "m" },
		"status":   func(p *corev1.Pod) { p.Status.Phase = corev1.PodRunning },
		"kind":     func(p *corev1.Pod) { p.Kind = "Pod" },
	}
	for name, change := range cases {
		b := a.DeepCopy()
		change(b)
		if got, want := semanticallyEqual(a, b), name == "same"; got != want {
			t.Errorf("%s: equal %v, want %v", name, got, want)
		}
	}
}

// BenchmarkTrackStatusUpdate measures tracking a kubelet's status write
// of a running pod, the most frequent write of a cluster at scale.
func BenchmarkTrackStatusUpdate(b *testing.B) {
	s := newApplyServer(b)
	h := s.handlers[schema.GroupVersionResource{Version: "v1", Resource: "pods"}]
	pod := benchPod("p", 1, "0")
	pod.UID = "uid-1"
	pod.Spec.NodeName = "node-1"
	h.res.Default(pod)
	live := h.trackUpdate(h.emptyObject(), pod, "ctrl", "").(*corev1.Pod)
	now := metav1.Now()
	next := live.DeepCopy()
	next.Status = corev1.PodStatus{Phase: corev1.PodRunning, HostIP: "10.0.0.1", PodIP: "10.1.0.1", StartTime: &now,
		HostIPs: []corev1.HostIP{{IP: "10.0.0.1"}}, PodIPs: []corev1.PodIP{{IP: "10.1.0.1"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "c0", Ready: true, Image: "registry.example/app:0", ImageID: "sha256:0",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}}
	for _, c := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady} {
		next.Status.Conditions = append(next.Status.Conditions, corev1.PodCondition{Type: c, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	b.ReportAllocs()
	defer reportCPU(b)()
	for i := 0; i < b.N; i++ {
		h.trackUpdate(live.DeepCopy(), next.DeepCopy(), "kubelet", "status")
	}
}

// TestWithoutCommonPartsLeavesWhole lists the writes tracked over the
// objects themselves: an unstructured object, whose one map holds its
// metadata too, even when nothing changed; a create; and an object with
// an entry of another version, which the field manager converts.
func TestWithoutCommonPartsLeavesWhole(t *testing.T) {
	entry := metav1.ManagedFieldsEntry{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}
	u := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w", "uid": "uid-1"},
		"spec":     map[string]interface{}{"size": int64(1)},
	}}
	u.SetManagedFields([]metav1.ManagedFieldsEntry{entry})
	if _, _, ok := withoutCommonParts(u, u.DeepCopy(), "example.com/v1"); ok {
		t.Error("an unstructured object was blanked")
	}
	live := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-1", Labels: map[string]string{"a": "b"}},
		Spec: corev1.PodSpec{NodeName: "n"}}
	if _, _, ok := withoutCommonParts(&corev1.Pod{}, live.DeepCopy(), "v1"); ok {
		t.Error("a create was blanked")
	}
	if _, _, ok := withoutCommonParts(live, live.DeepCopy(), "v1"); !ok {
		t.Error("an unchanged pod was not blanked")
	}
	other := entry
	other.APIVersion = "v2"
	peer := live.DeepCopy()
	peer.ManagedFields = []metav1.ManagedFieldsEntry{other}
	if _, _, ok := withoutCommonParts(peer, peer.DeepCopy(), "v1"); ok {
		t.Error("an object with an entry of another version was blanked")
	}
	l, n, _ := withoutCommonParts(live, live.DeepCopy(), "v1")
	if live.Spec.NodeName != "n" || live.Labels["a"] != "b" {
		t.Error("blanking changed the original")
	}
	if l.(*corev1.Pod).Spec.NodeName != "" || n.(*corev1.Pod).Labels != nil || n.(*corev1.Pod).Name != "p" || l.(*corev1.Pod).UID != "uid-1" {
		t.Errorf("copies: %+v %+v", l, n)
	}
}
