package job

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestMatchPodFailurePolicy(t *testing.T) {
	exitCodes := func(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, container *string, codes ...int32) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{ContainerName: container, Operator: op, Values: codes}}
	}
	onCondition := func(action batchv1.PodFailurePolicyAction, typ corev1.PodConditionType) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: action, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: typ, Status: corev1.ConditionTrue}}}
	}
	exited := func(containers map[string]int32) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Status: corev1.PodStatus{Phase: corev1.PodFailed}}
		for _, name := range []string{"main", "side"} {
			if code, ok := containers[name]; ok {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{Name: name,
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code}}})
			}
		}
		return p
	}
	disrupted := exited(map[string]int32{"main": 137})
	disrupted.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}
	in, notIn := batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn
	for _, tc := range []struct {
		name       string
		rules      []batchv1.PodFailurePolicyRule
		pod        *corev1.Pod
		wantAction batchv1.PodFailurePolicyAction
		wantCounts bool
		wantMsg    string
	}{
		{name: "no rules: counts", pod: exited(map[string]int32{"main": 1}), wantCounts: true},
		{name: "FailJob on an exit code", rules: []batchv1.PodFailurePolicyRule{exitCodes(batchv1.PodFailurePolicyActionFailJob, in, nil, 42)},
			pod: exited(map[string]int32{"main": 42}), wantAction: batchv1.PodFailurePolicyActionFailJob, wantCounts: true,
			wantMsg: "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0"},
		{name: "NotIn matches other codes", rules: []batchv1.PodFailurePolicyRule{exitCodes(batchv1.PodFailurePolicyActionIgnore, notIn, nil, 1, 2)},
			pod: exited(map[string]int32{"main": 3}), wantAction: batchv1.PodFailurePolicyActionIgnore},
		{name: "NotIn: exit code 0 never matches", rules: []batchv1.PodFailurePolicyRule{exitCodes(batchv1.PodFailurePolicyActionIgnore, notIn, nil, 1)},
			pod: exited(map[string]int32{"main": 0}), wantCounts: true},
		{name: "container name restricts the rule", rules: []batchv1.PodFailurePolicyRule{exitCodes(batchv1.PodFailurePolicyActionFailJob, in, ptr.To("side"), 42)},
			pod: exited(map[string]int32{"main": 42, "side": 1}), wantCounts: true},
		{name: "first matching rule wins", rules: []batchv1.PodFailurePolicyRule{
			exitCodes(batchv1.PodFailurePolicyActionCount, in, nil, 5),
			exitCodes(batchv1.PodFailurePolicyActionIgnore, in, nil, 1),
			exitCodes(batchv1.PodFailurePolicyActionFailJob, in, nil, 1),
		}, pod: exited(map[string]int32{"main": 1}), wantAction: batchv1.PodFailurePolicyActionIgnore},
		{name: "Ignore a disruption", rules: []batchv1.PodFailurePolicyRule{onCondition(batchv1.PodFailurePolicyActionIgnore, corev1.DisruptionTarget)},
			pod: disrupted, wantAction: batchv1.PodFailurePolicyActionIgnore},
		{name: "FailJob on a condition", rules: []batchv1.PodFailurePolicyRule{onCondition(batchv1.PodFailurePolicyActionFailJob, corev1.DisruptionTarget)},
			pod: disrupted, wantAction: batchv1.PodFailurePolicyActionFailJob, wantCounts: true,
			wantMsg: "Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0"},
		{name: "FailIndex counts", rules: []batchv1.PodFailurePolicyRule{exitCodes(batchv1.PodFailurePolicyActionFailIndex, in, nil, 1)},
			pod: exited(map[string]int32{"main": 1}), wantAction: batchv1.PodFailurePolicyActionFailIndex, wantCounts: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var policy *batchv1.PodFailurePolicy
			if tc.rules != nil {
				policy = &batchv1.PodFailurePolicy{Rules: tc.rules}
			}
			v := matchPodFailurePolicy(policy, tc.pod)
			if v.action != tc.wantAction || v.counts != tc.wantCounts || v.failJob != tc.wantMsg {
				t.Errorf("got %+v, want action %q counts %v message %q", v, tc.wantAction, tc.wantCounts, tc.wantMsg)
			}
		})
	}
}

func TestMatchSuccessPolicy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		rules     []batchv1.SuccessPolicyRule
		succeeded string
		wantMsg   string
	}{
		{name: "all named indexes", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0,2-3")}}, succeeded: "0-3", wantMsg: "Matched rules at index 0"},
		{name: "a named index missing", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0,2-3")}}, succeeded: "0-2"},
		{name: "enough of the named indexes", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0-4"), SucceededCount: ptr.To(int32(2))}}, succeeded: "3-4,7", wantMsg: "Matched rules at index 0"},
		{name: "a count of any", rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("9")}, {SucceededCount: ptr.To(int32(3))}}, succeeded: "1,5,8", wantMsg: "Matched rules at index 1"},
		{name: "nothing succeeded", rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To(int32(0))}}, succeeded: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, ok := matchSuccessPolicy(&batchv1.SuccessPolicy{Rules: tc.rules}, 10, parseIntervals(tc.succeeded, 10))
			if msg != tc.wantMsg || ok != (tc.wantMsg != "") {
				t.Errorf("got %q %v, want %q", msg, ok, tc.wantMsg)
			}
		})
	}
}

func TestIntervals(t *testing.T) {
	for _, tc := range []struct {
		in          string
		completions int
		add         []int
		want        string
		total       int
	}{
		{in: "", completions: 5, add: []int{0, 1, 2, 3, 4}, want: "0-4", total: 5},
		{in: "0,1", completions: 5, want: "0,1", total: 2},
		{in: "1,3-5,7", completions: 10, add: []int{2, 6}, want: "1-7", total: 7},
		{in: "1-3,5", completions: 3, want: "1,2", total: 2},      // shrunk below the list
		{in: "x,2,4-y,6", completions: 10, want: "2,6", total: 2}, // garbage skipped
		{in: "5,1", completions: 10, add: []int{0}, want: "0,1,5", total: 3},
	} {
		t.Run(tc.in, func(t *testing.T) {
			iv := parseIntervals(tc.in, tc.completions).withIndexes(tc.add)
			if iv.String() != tc.want || iv.total() != tc.total {
				t.Errorf("got %q (%d), want %q (%d)", iv.String(), iv.total(), tc.want, tc.total)
			}
			for ix := 0; ix < tc.completions; ix++ {
				if iv.has(ix) != parseIntervals(tc.want, tc.completions).has(ix) {
					t.Errorf("has(%d) = %v", ix, iv.has(ix))
				}
			}
		})
	}
	if got := parseIntervals("1,3-5", 10).has(4); !got {
		t.Error("3-5 does not have 4")
	}
}

func TestBackoffDelay(t *testing.T) {
	base, limit := 10*time.Second, 10*time.Minute
	for failures, want := range []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 320 * time.Second, 10 * time.Minute, 10 * time.Minute} {
		if got := backoffDelay(int32(failures), base, limit); got != want {
			t.Errorf("backoffDelay(%d) = %v, want %v", failures, got, want)
		}
	}
	if got := backoffDelay(1000, base, limit); got != limit {
		t.Errorf("backoffDelay(1000) = %v, want the cap", got)
	}
	if got := remainingBackoff(t0, 3, t0.Add(-15*time.Second), base, limit); got != 25*time.Second {
		t.Errorf("remaining after 15 s of 40 s = %v", got)
	}
	if got := remainingBackoff(t0, 1, t0.Add(-time.Minute), base, limit); got != 0 {
		t.Errorf("remaining after the delay = %v", got)
	}
}

func TestNextBackoffRecord(t *testing.T) {
	at := func(s podState, ago time.Duration) *corev1.Pod { return testPod(s, -1, 2*ago) } // finishes ago before t0
	for _, tc := range []struct {
		name          string
		old           backoffRecord
		succ, fail    []*corev1.Pod
		wantFailures  int32
		wantLastAgoes time.Duration // -1: zero time
	}{
		{name: "failures add up", old: backoffRecord{failuresAfterLastSuccess: 1, lastFailure: t0.Add(-time.Hour)},
			fail: []*corev1.Pod{at(failed, 3*time.Minute), at(failed, time.Minute)}, wantFailures: 3, wantLastAgoes: time.Minute},
		{name: "a success resets", old: backoffRecord{failuresAfterLastSuccess: 4, lastFailure: t0.Add(-time.Hour)},
			succ: []*corev1.Pod{at(succeeded, time.Minute)}, wantLastAgoes: -1},
		{name: "only failures after the last success count", old: backoffRecord{failuresAfterLastSuccess: 4},
			succ: []*corev1.Pod{at(succeeded, 2*time.Minute)}, fail: []*corev1.Pod{at(failed, 3*time.Minute), at(failed, time.Minute)},
			wantFailures: 1, wantLastAgoes: time.Minute},
		{name: "nothing new", old: backoffRecord{failuresAfterLastSuccess: 2, lastFailure: t0.Add(-time.Second)}, wantFailures: 2, wantLastAgoes: time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := nextBackoffRecord(tc.old, tc.succ, tc.fail)
			wantLast := time.Time{}
			if tc.wantLastAgoes >= 0 {
				wantLast = t0.Add(-tc.wantLastAgoes)
			}
			if got.failuresAfterLastSuccess != tc.wantFailures || !got.lastFailure.Equal(wantLast) {
				t.Errorf("got %d failures, last %v; want %d, %v", got.failuresAfterLastSuccess, got.lastFailure, tc.wantFailures, wantLast)
			}
		})
	}
}

func TestFirstPendingIndexes(t *testing.T) {
	job := testJob(ptr.To(int32(8)), 8, indexed, func(j *batchv1.Job) {
		j.Status.CompletedIndexes = "0,2"
		j.Spec.BackoffLimitPerIndex = ptr.To(int32(1))
		j.Status.FailedIndexes = ptr.To("5")
	})
	st := newSyncState(job, []*corev1.Pod{testPod(running, 3, 0), testPod(terminating, 4, 0)}, nil, backoffRecord{}, t0)
	decide(st)
	if got := firstPendingIndexes(st, 10, 8); !slices.Equal(got, []int{1, 4, 6, 7}) {
		t.Errorf("pending %v, want [1 4 6 7] (a terminating pod's index is free by default)", got)
	}
	job.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	if got := firstPendingIndexes(st, 2, 8); !slices.Equal(got, []int{1, 6}) {
		t.Errorf("pending %v, want [1 6] with podReplacementPolicy Failed", got)
	}
}
