package controller

import (
	"fmt"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// depRecorder is a Dependents over two cached ReplicaSets, "a" and "b",
// and one adopter ("a" selects every orphan), that writes down each hook
// call as a string.
type depRecorder struct {
	calls []string
}

func (r *depRecorder) router(deleteOld bool) *Dependents[*appsv1.ReplicaSet, *corev1.Pod] {
	owners := map[string]*appsv1.ReplicaSet{
		"a": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "uid-a"}},
		"b": {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "b", UID: "uid-b"}},
	}
	rec := func(f string, args ...any) { r.calls = append(r.calls, fmt.Sprintf(f, args...)) }
	return &Dependents[*appsv1.ReplicaSet, *corev1.Pod]{
		OwnerKind: "ReplicaSet",
		GetOwner: func(namespace, name string) (*appsv1.ReplicaSet, error) {
			if o, ok := owners[name]; ok && namespace == "ns" {
				return o, nil
			}
			return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "replicasets"}, name)
		},
		Adopters: func(*corev1.Pod) []*appsv1.ReplicaSet { return []*appsv1.ReplicaSet{owners["a"]} },
		Enqueue:  func(key string) { rec("enqueue %s", key) },
		Created:  func(key string, _ *appsv1.ReplicaSet, p *corev1.Pod) { rec("created %s %s", key, p.Name) },
		Updated: func(key string, _ *appsv1.ReplicaSet, _, cur *corev1.Pod, moved bool) {
			rec("updated %s %s moved=%v", key, cur.Name, moved)
		},
		Released: func(key string, _ *appsv1.ReplicaSet, cur *corev1.Pod) { rec("released %s %s", key, cur.Name) },
		Deleted: func(key string, _ *appsv1.ReplicaSet, p *corev1.Pod, final bool) {
			rec("deleted %s %s final=%v", key, p.Name, final)
		},
		Orphan:             func(p *corev1.Pod, final bool) { rec("orphan %s final=%v", p.Name, final) },
		DeleteOldOnRelabel: deleteOld,
	}
}

// depPod is pod "p" at resourceVersion rv, controlled by the ReplicaSet
// with the given name and UID (none if name is empty).
func depPod(rv, owner string, uid types.UID, lbl string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv, Labels: map[string]string{"app": lbl}}}
	if owner != "" {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: uid, Controller: &yes}}
	}
	return p
}

func terminating(p *corev1.Pod) *corev1.Pod {
	now := metav1.Now()
	p.DeletionTimestamp = &now
	return p
}

func TestDependentsRouting(t *testing.T) {
	cases := []struct {
		name      string
		deleteOld bool
		// updateTerminating sets UpdateTerminating.
		updateTerminating bool
		event             func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod])
		want              []string
	}{
		{
			name:  "add owned pod is a creation",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) { d.OnAdd(depPod("1", "a", "uid-a", "x")) },
			want:  []string{"created ns/a p"},
		},
		{
			name: "add terminating pod is a deletion, not a creation",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnAdd(terminating(depPod("1", "a", "uid-a", "x")))
			},
			want: []string{"deleted ns/a p final=false"},
		},
		{
			name:  "add with a stale owner UID wakes nobody",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) { d.OnAdd(depPod("1", "a", "uid-old", "x")) },
			want:  nil,
		},
		{
			name: "add with another kind's reference wakes nobody",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				p := depPod("1", "a", "uid-a", "x")
				p.OwnerReferences[0].Kind = "StatefulSet"
				d.OnAdd(p)
			},
			want: nil,
		},
		{
			name:  "add orphan wakes its adopters",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) { d.OnAdd(depPod("1", "", "", "x")) },
			want:  []string{"orphan p final=false", "enqueue ns/a"},
		},
		{
			name: "resync is dropped",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnUpdate(depPod("1", "a", "uid-a", "x"), depPod("1", "a", "uid-a", "x"))
			},
			want: nil,
		},
		{
			name: "status change of an owned pod has not moved",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnUpdate(depPod("1", "a", "uid-a", "x"), depPod("2", "a", "uid-a", "x"))
			},
			want: []string{"updated ns/a p moved=false"},
		},
		{
			name: "relabelled owned pod has moved",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnUpdate(depPod("1", "a", "uid-a", "x"), depPod("2", "a", "uid-a", "y"))
			},
			want: []string{"updated ns/a p moved=true"},
		},
		{
			name: "controller change releases the old owner and updates the new",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnUpdate(depPod("1", "a", "uid-a", "x"), depPod("2", "b", "uid-b", "x"))
			},
			want: []string{"released ns/a p", "updated ns/b p moved=true"},
		},
		{
			name: "released pod becomes an orphan and its adopters wake",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnUpdate(depPod("1", "b", "uid-b", "x"), depPod("2", "", "", "x"))
			},
			want: []string{"released ns/b p", "orphan p final=false", "enqueue ns/a"},
		},
		{
			name: "orphan status change wakes no adopter",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnUpdate(depPod("1", "", "", "x"), depPod("2", "", "", "x"))
			},
			want: []string{"orphan p final=false"},
		},
		{
			name: "graceful deletion is a deletion",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnUpdate(depPod("1", "a", "uid-a", "x"), terminating(depPod("2", "a", "uid-a", "y")))
			},
			want: []string{"deleted ns/a p final=false"},
		},
		{
			name:      "graceful deletion with relabel deletes the old too when asked",
			deleteOld: true,
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnUpdate(depPod("1", "b", "uid-b", "x"), terminating(depPod("2", "a", "uid-a", "y")))
			},
			want: []string{"deleted ns/a p final=false", "deleted ns/b p final=false"},
		},
		{
			name:              "graceful deletion routed as an update when asked",
			updateTerminating: true,
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnUpdate(depPod("1", "b", "uid-b", "x"), terminating(depPod("2", "a", "uid-a", "x")))
			},
			want: []string{"released ns/b p", "updated ns/a p moved=true"},
		},
		{
			name:              "terminating on add is still a deletion with UpdateTerminating",
			updateTerminating: true,
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnAdd(terminating(depPod("1", "a", "uid-a", "x")))
			},
			want: []string{"deleted ns/a p final=false"},
		},
		{
			name: "final deletion through a tombstone",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.Handler().OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: depPod("1", "a", "uid-a", "x")})
			},
			want: []string{"deleted ns/a p final=true"},
		},
		{
			name: "deletion whose owner is gone is an orphan's",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.Handler().OnDelete(depPod("1", "gone", "uid-gone", "x"))
			},
			want: []string{"orphan p final=true"},
		},
		{
			name:  "not a pod is ignored",
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) { d.OnAdd(&corev1.Node{}) },
			want:  nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &depRecorder{}
			d := r.router(tc.deleteOld)
			d.UpdateTerminating = tc.updateTerminating
			tc.event(d)
			if !reflect.DeepEqual(r.calls, tc.want) {
				t.Fatalf("calls = %q, want %q", r.calls, tc.want)
			}
		})
	}
}

// Hooks left nil enqueue the owner.
func TestDependentsDefaultHooksEnqueue(t *testing.T) {
	var got []string
	d := &Dependents[*appsv1.ReplicaSet, *corev1.Pod]{
		OwnerKind: "ReplicaSet",
		GetOwner: func(_, name string) (*appsv1.ReplicaSet, error) {
			return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}, nil
		},
		Enqueue: func(key string) { got = append(got, key) },
	}
	h := d.Handler()
	h.OnAdd(depPod("1", "a", "uid-a", "x"), false)
	h.OnUpdate(depPod("1", "a", "uid-a", "x"), depPod("2", "b", "uid-b", "x"))
	h.OnDelete(depPod("3", "b", "uid-b", "x"))
	h.OnAdd(depPod("1", "", "", "x"), false) // no Adopters: nobody
	want := []string{"ns/a", "ns/a", "ns/b", "ns/b"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("enqueued %q, want %q", got, want)
	}
	if _, key, ok := d.ControllerOf(depPod("1", "a", "uid-a", "x")); !ok || key != "ns/a" {
		t.Fatalf("ControllerOf = %q, %v; want ns/a", key, ok)
	}
}

func TestForgettingHandler(t *testing.T) {
	rs := func(uid types.UID) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: uid, ResourceVersion: string(uid)}}
	}
	cases := []struct {
		name       string
		event      func(h cache.ResourceEventHandler)
		wantForget []string
	}{
		{"add", func(h cache.ResourceEventHandler) { h.OnAdd(rs("1"), false) }, nil},
		{"update same object", func(h cache.ResourceEventHandler) { h.OnUpdate(rs("1"), rs("1")) }, nil},
		{"update to a new UID", func(h cache.ResourceEventHandler) { h.OnUpdate(rs("1"), rs("2")) }, []string{"ns/a"}},
		{"delete", func(h cache.ResourceEventHandler) { h.OnDelete(rs("1")) }, []string{"ns/a"}},
		{"delete tombstone", func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: rs("1")})
		}, []string{"ns/a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := New("forgetting_test", 1, ReconcilerFunc(nil))
			var forgot []string
			tc.event(c.ForgettingHandler(func(key string) { forgot = append(forgot, key) }))
			if !reflect.DeepEqual(forgot, tc.wantForget) {
				t.Errorf("forgot %q, want %q", forgot, tc.wantForget)
			}
			if c.Len() != 1 {
				t.Errorf("queue length %d, want the owner queued once", c.Len())
			}
		})
	}
}

// With Expectations set, the owner's record sees the creations and
// deletions of its dependents, terminating ones included.
func TestDependentsObserveExpectations(t *testing.T) {
	cases := []struct {
		name   string
		expect func(e *Expectations)
		event  func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod])
	}{
		{
			name:   "creation",
			expect: func(e *Expectations) { e.ExpectCreations("ns/a", 1) },
			event:  func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) { d.OnAdd(depPod("1", "a", "uid-a", "x")) },
		},
		{
			name:   "final deletion",
			expect: func(e *Expectations) { e.ExpectDeletions("ns/a", []string{"ns/p"}) },
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.Handler().OnDelete(depPod("1", "a", "uid-a", "x"))
			},
		},
		{
			name:   "graceful deletion",
			expect: func(e *Expectations) { e.ExpectDeletions("ns/a", []string{"ns/p"}) },
			event: func(d *Dependents[*appsv1.ReplicaSet, *corev1.Pod]) {
				d.OnUpdate(depPod("1", "a", "uid-a", "x"), terminating(depPod("2", "a", "uid-a", "x")))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &depRecorder{}
			d := r.router(false)
			d.Expectations = NewExpectations(nil)
			tc.expect(d.Expectations)
			if d.Expectations.SatisfiedExpectations("ns/a") {
				t.Fatal("expectations satisfied before the event")
			}
			tc.event(d)
			if !d.Expectations.SatisfiedExpectations("ns/a") {
				t.Fatalf("expectations not satisfied after the event; hooks called: %q", r.calls)
			}
		})
	}
}
