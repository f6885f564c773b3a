package garbagecollector

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestJudge(t *testing.T) {
	ref := func(uid string, s ownerState) classifiedRef {
		return classifiedRef{ref: metav1.OwnerReference{UID: types.UID(uid)}, state: s}
	}
	dep := func(deletingDependents bool) dependentView {
		return dependentView{id: identity{uid: "d"}, deletingDependents: deletingDependents}
	}
	tests := []struct {
		name       string
		refs       []classifiedRef
		finalizers []string
		dependents []dependentView
		want       verdict
	}{
		{
			name: "owner exists: keep",
			refs: []classifiedRef{ref("a", ownerSolid)},
			want: verdict{action: keep},
		},
		{
			name: "one of two owners gone: drop its reference",
			refs: []classifiedRef{ref("a", ownerSolid), ref("b", ownerDangling)},
			want: verdict{action: dropRefs, drop: uids("b")},
		},
		{
			name: "owner remains, another waits in the foreground: drop the waiting reference",
			refs: []classifiedRef{ref("a", ownerWaiting), ref("b", ownerSolid)},
			want: verdict{action: dropRefs, drop: uids("a")},
		},
		{
			name: "all owners gone: background delete",
			refs: []classifiedRef{ref("a", ownerDangling), ref("b", ownerDangling)},
			want: verdict{action: deleteItem, policy: metav1.DeletePropagationBackground},
		},
		{
			name:       "all owners gone, orphan finalizer on the object: honoured",
			refs:       []classifiedRef{ref("a", ownerDangling)},
			finalizers: []string{"x", metav1.FinalizerOrphanDependents},
			want:       verdict{action: deleteItem, policy: metav1.DeletePropagationOrphan},
		},
		{
			name:       "all owners gone, foreground finalizer on the object: honoured",
			refs:       []classifiedRef{ref("a", ownerDangling)},
			finalizers: []string{metav1.FinalizerDeleteDependents},
			want:       verdict{action: deleteItem, policy: metav1.DeletePropagationForeground},
		},
		{
			name: "owner waits, no dependents of its own: background delete",
			refs: []classifiedRef{ref("a", ownerWaiting)},
			want: verdict{action: deleteItem, policy: metav1.DeletePropagationBackground},
		},
		{
			name:       "owner waits and the object has dependents: foreground delete",
			refs:       []classifiedRef{ref("a", ownerWaiting), ref("b", ownerDangling)},
			dependents: []dependentView{dep(false)},
			want:       verdict{action: deleteItem, policy: metav1.DeletePropagationForeground},
		},
		{
			name:       "owner waits and a dependent waits too: unblock, then foreground delete",
			refs:       []classifiedRef{ref("a", ownerWaiting)},
			dependents: []dependentView{dep(false), dep(true)},
			want:       verdict{action: deleteItem, policy: metav1.DeletePropagationForeground, unblockFirst: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := judge(tt.refs, tt.finalizers, tt.dependents)
			if got.action != tt.want.action || got.policy != tt.want.policy || got.unblockFirst != tt.want.unblockFirst || !slices.Equal(got.drop, tt.want.drop) {
				t.Errorf("judge = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPlanForeground(t *testing.T) {
	d := func(uid string, blocking, deletingDependents bool) dependentView {
		return dependentView{id: identity{uid: types.UID(uid)}, blocking: blocking, deletingDependents: deletingDependents}
	}
	tests := []struct {
		name        string
		deps        []dependentView
		wantDone    bool
		wantAttempt []types.UID
	}{
		{name: "no dependents", wantDone: true},
		{name: "only non-blocking dependents", deps: []dependentView{d("a", false, false)}, wantDone: true},
		{name: "blocking dependents are queued", deps: []dependentView{d("a", true, false), d("b", false, false), d("c", true, false)}, wantAttempt: uids("a", "c")},
		{name: "a blocking dependent deleting its own dependents is waited for", deps: []dependentView{d("a", true, true)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, attempt := planForeground(tt.deps)
			if done != tt.wantDone || !slices.Equal(attempt, tt.wantAttempt) {
				t.Errorf("planForeground = %v %v, want %v %v", done, attempt, tt.wantDone, tt.wantAttempt)
			}
		})
	}
}
