package admission

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// objectSet is an ObjectSource over a fixed set of objects, our own
// interface. With cacheLag, plain lists see nothing, as a watch cache a
// moment behind a new object would; fresh lists and gets see everything.
type objectSet struct {
	items    []runtime.Object
	cacheLag bool
	err      error

	gets, lists, freshLists int
}

func objectGVR(o runtime.Object) schema.GroupVersionResource {
	switch o.(type) {
	case *corev1.ServiceAccount:
		return serviceAccountsGVR
	case *corev1.LimitRange:
		return limitRangesGVR
	case *schedulingv1.PriorityClass:
		return priorityClassesGVR
	}
	return schema.GroupVersionResource{}
}

func (s *objectSet) GetObject(_ context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	s.gets++
	if s.err != nil {
		return nil, s.err
	}
	for _, o := range s.items {
		m := o.(metav1.Object)
		if objectGVR(o) == gvr && m.GetNamespace() == namespace && m.GetName() == name {
			return o, nil
		}
	}
	return nil, nil
}

func (s *objectSet) ListObjects(_ context.Context, gvr schema.GroupVersionResource, namespace string, fresh bool) ([]runtime.Object, error) {
	if fresh {
		s.freshLists++
	} else {
		s.lists++
	}
	if s.err != nil {
		return nil, s.err
	}
	if s.cacheLag && !fresh {
		return nil, nil
	}
	var out []runtime.Object
	for _, o := range s.items {
		if objectGVR(o) == gvr && (namespace == "" || o.(metav1.Object).GetNamespace() == namespace) {
			out = append(out, o)
		}
	}
	return out, nil
}

func TestForbiddenForNamesTheObjectAsTheClientDid(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cases := []struct {
		name  string
		attrs Attributes
		want  string
	}{
		{"request name", Attributes{Resource: pods, Name: "web"}, `pods "web" is forbidden: no`},
		{"object name", Attributes{Resource: pods, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "obj"}}}, `pods "obj" is forbidden: no`},
		{"generateName prefix", Attributes{Resource: pods, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}}}, `pods "web-" is forbidden: no`},
		{"nothing to go by", Attributes{Resource: pods}, `pods "Unknown" is forbidden: no`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := forbiddenFor(&tc.attrs, errors.New("no")).Error(); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
