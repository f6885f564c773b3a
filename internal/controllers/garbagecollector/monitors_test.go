package garbagecollector

import (
	"errors"
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDeletableResources(t *testing.T) {
	all := metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: all},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: all},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: all},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: metav1.Verbs{"create"}},
			{Name: "componentstatuses", Kind: "ComponentStatus", Verbs: metav1.Verbs{"get", "list"}},
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: all},
		}},
	}
	cfg := Config{}
	cfg.defaults()
	got := deletableResources(lists, cfg.ignored)
	want := resourceSet{
		{Version: "v1", Resource: "pods"}:                          "Pod",
		{Group: "example.com", Version: "v1", Resource: "widgets"}: "Widget",
	}
	if !maps.Equal(got, want) {
		t.Errorf("deletableResources = %v, want %v", got, want)
	}
}

func TestKeepFailedGroups(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	gadgets := schema.GroupVersionResource{Group: "gadgets.io", Version: "v1", Resource: "gadgets"}
	prev := resourceSet{pods: "Pod", widgets: "Widget", gadgets: "Gadget"}
	// example.com failed to answer; gadgets.io answered without gadgets
	// (its definition was deleted).
	cur := resourceSet{pods: "Pod"}
	keepFailedGroups(prev, cur, map[schema.GroupVersion]error{widgets.GroupVersion(): errors.New("503")})
	want := resourceSet{pods: "Pod", widgets: "Widget"}
	if !maps.Equal(cur, want) {
		t.Errorf("after a partial discovery failure: %v, want %v", cur, want)
	}
}

func TestStripMetadata(t *testing.T) {
	in := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		Name: "a", Namespace: "ns", UID: "u", ResourceVersion: "7",
		Labels:          map[string]string{"big": "label"},
		Annotations:     map[string]string{"kubectl.kubernetes.io/last-applied-configuration": "{...}"},
		ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
		Finalizers:      []string{"example.com/x", metav1.FinalizerDeleteDependents},
		OwnerReferences: []metav1.OwnerReference{{UID: "o"}},
	}}
	out, err := stripMetadata(in)
	if err != nil {
		t.Fatal(err)
	}
	m := out.(*metav1.PartialObjectMetadata)
	if m.Labels != nil || m.Annotations != nil || m.ManagedFields != nil {
		t.Errorf("kept fields the graph never reads: %+v", m.ObjectMeta)
	}
	if m.Name != "a" || m.Namespace != "ns" || m.UID != "u" || len(m.OwnerReferences) != 1 ||
		len(m.Finalizers) != 1 || m.Finalizers[0] != metav1.FinalizerDeleteDependents {
		t.Errorf("lost fields the graph reads: %+v", m.ObjectMeta)
	}
}
