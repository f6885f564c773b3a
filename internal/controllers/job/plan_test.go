package job

import (
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

var testLimits = limits{backoffBase: 10 * time.Second, backoffMax: 10 * time.Minute}

// testJob is a defaulted job as the API server stores it.
func testJob(completions *int32, parallelism int32, mutate ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			Completions:    completions,
			Parallelism:    ptr.To(parallelism),
			BackoffLimit:   ptr.To(int32(6)),
			CompletionMode: ptr.To(batchv1.NonIndexedCompletion),
			Suspend:        ptr.To(false),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"batch.kubernetes.io/job-name": "j"}},
				Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}}},
			},
		},
	}
	for _, m := range mutate {
		m(j)
	}
	return j
}

func indexed(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion) }

// pod states
type podState int

const (
	pending podState = iota
	running
	readyPod
	succeeded
	failed
	terminating
)

var podSeq int

// testPod returns a pod of the job (with the tracking finalizer) in state
// s, with index ix (-1: none), created age before t0.
func testPod(s podState, ix int, age time.Duration) *corev1.Pod {
	podSeq++
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: fmt.Sprintf("p%d", podSeq), Namespace: "ns", UID: types.UID(fmt.Sprintf("uid-%d", podSeq)),
		CreationTimestamp: metav1.NewTime(t0.Add(-age)),
		Finalizers:        []string{batchv1.JobTrackingFinalizer},
	}}
	if ix >= 0 {
		p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(ix)}
	}
	switch s {
	case pending:
		p.Status.Phase = corev1.PodPending
	case running:
		p.Spec.NodeName = "n"
		p.Status.Phase = corev1.PodRunning
	case readyPod:
		p.Spec.NodeName = "n"
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-age / 2))}}
	case succeeded:
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(t0.Add(-age / 2))}}}}
	case failed:
		p.Status.Phase = corev1.PodFailed
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(t0.Add(-age / 2))}}}}
	case terminating:
		p.Status.Phase = corev1.PodRunning
		p.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	}
	return p
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func TestPlanManage(t *testing.T) {
	five := ptr.To(int32(5))
	for _, tc := range []struct {
		name    string
		job     *batchv1.Job
		pods    func() []*corev1.Pod
		backoff backoffRecord
		// want
		create  int
		indexes []int
		delete  int
		wait    time.Duration
	}{
		{name: "new job starts parallelism pods", job: testJob(five, 2), pods: none, create: 2},
		{name: "never more than the completions missing", job: testJob(five, 3),
			pods: func() []*corev1.Pod {
				return []*corev1.Pod{testPod(succeeded, -1, time.Minute), testPod(succeeded, -1, time.Minute), testPod(succeeded, -1, time.Minute), testPod(running, -1, time.Minute)}
			}, create: 1},
		{name: "at parallelism: nothing to do", job: testJob(five, 2),
			pods: func() []*corev1.Pod { return []*corev1.Pod{testPod(running, -1, 0), testPod(pending, -1, 0)} }},
		{name: "parallelism lowered deletes the excess", job: testJob(five, 1),
			pods: func() []*corev1.Pod {
				return []*corev1.Pod{testPod(running, -1, 0), testPod(pending, -1, 0), testPod(running, -1, 0)}
			}, delete: 2},
		{name: "suspended deletes every active pod", job: testJob(five, 2, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }),
			pods: func() []*corev1.Pod {
				return []*corev1.Pod{testPod(running, -1, 0), testPod(pending, -1, 0), testPod(succeeded, -1, 0)}
			}, delete: 2},
		{name: "a terminating pod is replaced at once by default", job: testJob(five, 2),
			pods: func() []*corev1.Pod { return []*corev1.Pod{testPod(running, -1, 0), testPod(terminating, -1, 0)} }, create: 1},
		{name: "podReplacementPolicy Failed waits for the terminating pod",
			job:  testJob(five, 2, func(j *batchv1.Job) { j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed) }),
			pods: func() []*corev1.Pod { return []*corev1.Pod{testPod(running, -1, 0), testPod(terminating, -1, 0)} }},
		{name: "work queue: parallelism pods until one succeeds", job: testJob(nil, 3),
			pods: func() []*corev1.Pod { return []*corev1.Pod{testPod(running, -1, 0)} }, create: 2},
		{name: "work queue: after a success nothing new starts", job: testJob(nil, 3),
			pods: func() []*corev1.Pod {
				return []*corev1.Pod{testPod(running, -1, 0), testPod(succeeded, -1, time.Minute)}
			}},
		{name: "a recent failure holds the replacement back", job: testJob(five, 1), pods: none,
			backoff: backoffRecord{failuresAfterLastSuccess: 2, lastFailure: t0.Add(-5 * time.Second)}, wait: 15 * time.Second},
		{name: "an old failure does not", job: testJob(five, 1), pods: none,
			backoff: backoffRecord{failuresAfterLastSuccess: 2, lastFailure: t0.Add(-time.Minute)}, create: 1},
		{name: "indexed: lowest missing indexes first", job: testJob(five, 3, indexed),
			pods:   func() []*corev1.Pod { return []*corev1.Pod{testPod(succeeded, 0, time.Minute), testPod(running, 2, 0)} },
			create: 2, indexes: []int{1, 3}},
		{name: "indexed: a duplicate index is deleted", job: testJob(five, 3, indexed),
			pods: func() []*corev1.Pod {
				return []*corev1.Pod{testPod(running, 0, time.Minute), testPod(pending, 0, 0), testPod(running, 1, 0), testPod(running, 7, 0)}
			}, delete: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newSyncState(tc.job, tc.pods(), nil, backoffRecord{}, t0)
			st.backoff = tc.backoff
			decide(st)
			plan := planManage(st, testLimits)
			if plan.create != tc.create || !slices.Equal(plan.indexes, tc.indexes) || len(plan.delete) != tc.delete || plan.wait != tc.wait {
				t.Errorf("plan: create %d %v, delete %v, wait %v; want create %d %v, delete %d, wait %v",
					plan.create, plan.indexes, names(plan.delete), plan.wait, tc.create, tc.indexes, tc.delete, tc.wait)
			}
		})
	}
}

func none() []*corev1.Pod { return nil }

func TestRemovalOrder(t *testing.T) {
	unscheduled := testPod(pending, -1, time.Hour)
	unscheduled.Name = "unscheduled"
	pend := testPod(pending, -1, time.Hour)
	pend.Spec.NodeName, pend.Name = "n", "pending"
	notReady := testPod(running, -1, time.Hour)
	notReady.Name = "not-ready"
	readyNew := testPod(readyPod, -1, time.Minute)
	readyNew.Name = "ready-recently"
	readyOld := testPod(readyPod, -1, time.Hour)
	readyOld.Name = "ready-long"
	got := podsForRemoval(testJob(nil, 1), []*corev1.Pod{readyOld, readyNew, notReady, pend, unscheduled}, 5)
	want := []string{"unscheduled", "pending", "not-ready", "ready-recently", "ready-long"}
	if !slices.Equal(names(got), want) {
		t.Errorf("removal order %v, want %v", names(got), want)
	}
}

func TestDecide(t *testing.T) {
	five := ptr.To(int32(5))
	for _, tc := range []struct {
		name        string
		job         *batchv1.Job
		pods        []*corev1.Pod
		wantType    batchv1.JobConditionType // "" for none
		wantReason  string
		wantRequeue time.Duration
	}{
		{name: "running on", job: testJob(five, 2), pods: []*corev1.Pod{testPod(running, -1, 0)}},
		{name: "failures within backoffLimit", job: testJob(five, 1, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To(int32(1)) }),
			pods: []*corev1.Pod{testPod(failed, -1, time.Minute)}},
		{name: "one failure past backoffLimit", job: testJob(five, 1, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To(int32(1)) }),
			pods:     []*corev1.Pod{testPod(failed, -1, time.Minute), testPod(failed, -1, time.Minute)},
			wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonBackoffLimitExceeded},
		{name: "failures already counted in the status count too", job: testJob(five, 1, func(j *batchv1.Job) {
			j.Spec.BackoffLimit = ptr.To(int32(1))
			j.Status.Failed = 1
		}), pods: []*corev1.Pod{testPod(failed, -1, time.Minute)},
			wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonBackoffLimitExceeded},
		{name: "restarts past backoffLimit with OnFailure", job: testJob(five, 1, func(j *batchv1.Job) {
			j.Spec.BackoffLimit = ptr.To(int32(2))
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}), pods: func() []*corev1.Pod {
			p := testPod(running, -1, 0)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 2}}
			return []*corev1.Pod{p}
		}(), wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonBackoffLimitExceeded},
		{name: "deadline ahead: look again then", job: testJob(five, 1, func(j *batchv1.Job) {
			j.Spec.ActiveDeadlineSeconds = ptr.To(int64(60))
			j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-20 * time.Second)))
		}), wantRequeue: 40 * time.Second},
		{name: "deadline passed", job: testJob(five, 1, func(j *batchv1.Job) {
			j.Spec.ActiveDeadlineSeconds = ptr.To(int64(60))
			j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-time.Minute)))
		}), wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonDeadlineExceeded},
		{name: "suspended: the deadline clock stands still", job: testJob(five, 1, func(j *batchv1.Job) {
			j.Spec.Suspend = ptr.To(true)
			j.Spec.ActiveDeadlineSeconds = ptr.To(int64(60))
			j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-time.Hour)))
		})},
		{name: "an interim FailureTarget turns into Failed", job: testJob(five, 1, func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobFailureTarget, "DeadlineExceeded", "m", t0)}
		}), wantType: batchv1.JobFailed, wantReason: "DeadlineExceeded"},
		{name: "SuccessCriteriaMet stands", job: testJob(five, 1, func(j *batchv1.Job) {
			j.Status.Conditions = []batchv1.JobCondition{*newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, "m", t0)}
		}), wantType: batchv1.JobSuccessCriteriaMet, wantReason: batchv1.JobReasonCompletionsReached},
		{name: "FailJob rule", job: testJob(five, 1, func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionFailJob,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
		}), pods: []*corev1.Pod{testPod(failed, -1, time.Minute)}, wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonPodFailurePolicy},
		{name: "indexed: more failed indexes than maxFailedIndexes", job: testJob(five, 5, indexed, func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex = ptr.To(int32(0))
			j.Spec.MaxFailedIndexes = ptr.To(int32(1))
		}), pods: []*corev1.Pod{testPod(failed, 0, time.Minute), testPod(failed, 3, time.Minute)},
			wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonMaxFailedIndexesExceeded},
		{name: "indexed: every index done, some failed", job: testJob(ptr.To(int32(2)), 2, indexed, func(j *batchv1.Job) {
			j.Spec.BackoffLimitPerIndex = ptr.To(int32(0))
		}), pods: []*corev1.Pod{testPod(failed, 0, time.Minute), testPod(succeeded, 1, time.Minute)},
			wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonFailedIndexes},
		{name: "indexed: success policy met", job: testJob(five, 5, indexed, func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
		}), pods: []*corev1.Pod{testPod(succeeded, 0, time.Minute), testPod(running, 1, 0)},
			wantType: batchv1.JobSuccessCriteriaMet, wantReason: batchv1.JobReasonSuccessPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := newSyncState(tc.job, tc.pods, nil, backoffRecord{}, t0)
			requeue := decide(st)
			var gotType batchv1.JobConditionType
			var gotReason string
			if st.finished != nil {
				gotType, gotReason = st.finished.Type, st.finished.Reason
			}
			if gotType != tc.wantType || gotReason != tc.wantReason || requeue != tc.wantRequeue {
				t.Errorf("finished %q/%q requeue %v, want %q/%q requeue %v", gotType, gotReason, requeue, tc.wantType, tc.wantReason, tc.wantRequeue)
			}
		})
	}
}

func TestDecideSetsStartTimeUnlessSuspended(t *testing.T) {
	st := newSyncState(testJob(nil, 1), nil, nil, backoffRecord{}, t0)
	decide(st)
	if st.job.Status.StartTime == nil || !st.job.Status.StartTime.Time.Equal(t0) {
		t.Errorf("start time %v, want %v", st.job.Status.StartTime, t0)
	}
	st = newSyncState(testJob(nil, 1, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }), nil, nil, backoffRecord{}, t0)
	decide(st)
	if st.job.Status.StartTime != nil {
		t.Errorf("a suspended job got start time %v", st.job.Status.StartTime)
	}
}

func TestNewSyncStateCounts(t *testing.T) {
	counted := testPod(succeeded, -1, time.Minute)
	counted.Finalizers = nil // counted by an earlier sync
	listed := testPod(failed, -1, time.Minute)
	pendingRemoval := testPod(succeeded, -1, time.Minute)
	fresh := testPod(succeeded, -1, time.Minute)
	job := testJob(ptr.To(int32(9)), 3, func(j *batchv1.Job) {
		j.Status.Succeeded = 1
		j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Failed: []types.UID{listed.UID}}
	})
	st := newSyncState(job, []*corev1.Pod{counted, listed, pendingRemoval, fresh, testPod(readyPod, -1, 0), testPod(terminating, -1, 0)},
		sets.New(pendingRemoval.UID), backoffRecord{}, t0)
	// The terminating pod counts as failed: deleted before it succeeded.
	if st.succeeded != 2 || st.failed != 2 || len(st.active) != 1 || st.ready != 1 || st.terminating != 1 {
		t.Errorf("succeeded %d failed %d active %d ready %d terminating %d; want 2 2 1 1 1",
			st.succeeded, st.failed, len(st.active), st.ready, st.terminating)
	}
	if !slices.Equal(names(st.newSucceeded), []string{fresh.Name}) || len(st.newFailed) != 1 {
		t.Errorf("new succeeded %v, new failed %v", names(st.newSucceeded), names(st.newFailed))
	}
}

func TestPlanTracking(t *testing.T) {
	t.Run("finished pods are listed uncounted and lose their finalizer", func(t *testing.T) {
		ok, bad, run := testPod(succeeded, -1, time.Minute), testPod(failed, -1, time.Minute), testPod(running, -1, 0)
		st := newSyncState(testJob(ptr.To(int32(5)), 2), []*corev1.Pod{ok, bad, run}, nil, backoffRecord{}, t0)
		decide(st)
		plan := planTracking(st)
		u := st.job.Status.UncountedTerminatedPods
		if !plan.changed || !slices.Equal(u.Succeeded, []types.UID{ok.UID}) || !slices.Equal(u.Failed, []types.UID{bad.UID}) {
			t.Fatalf("uncounted %+v changed %v", u, plan.changed)
		}
		if !slices.Equal(names(plan.removeFinalizer), []string{ok.Name, bad.Name}) {
			t.Fatalf("remove finalizers of %v", names(plan.removeFinalizer))
		}
		// Step 3: once the finalizers are gone, the UIDs become counts.
		plan.withFinalizer.Delete(ok.UID, bad.UID)
		if !countUncounted(&st.job.Status, plan.withFinalizer) || st.job.Status.Succeeded != 1 || st.job.Status.Failed != 1 ||
			len(u.Succeeded)+len(u.Failed) != 0 {
			t.Fatalf("after counting: %+v", st.job.Status)
		}
	})
	t.Run("an Ignore rule frees the pod without counting it", func(t *testing.T) {
		bad := testPod(failed, -1, time.Minute)
		job := testJob(ptr.To(int32(5)), 2, func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
				OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1}}}}}
		})
		st := newSyncState(job, []*corev1.Pod{bad}, nil, backoffRecord{}, t0)
		decide(st)
		plan := planTracking(st)
		if len(st.job.Status.UncountedTerminatedPods.Failed) != 0 || len(plan.removeFinalizer) != 1 || st.failed != 0 {
			t.Fatalf("uncounted %+v, remove %v, failed %d", st.job.Status.UncountedTerminatedPods, names(plan.removeFinalizer), st.failed)
		}
	})
	t.Run("a failing job counts its running pods as failed and sets FailureTarget first", func(t *testing.T) {
		run := testPod(running, -1, 0)
		job := testJob(ptr.To(int32(5)), 2, func(j *batchv1.Job) {
			j.Spec.ActiveDeadlineSeconds = ptr.To(int64(1))
			j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-time.Minute)))
		})
		st := newSyncState(job, []*corev1.Pod{run}, nil, backoffRecord{}, t0)
		decide(st)
		planTracking(st)
		if !slices.Equal(st.job.Status.UncountedTerminatedPods.Failed, []types.UID{run.UID}) {
			t.Fatalf("uncounted %+v", st.job.Status.UncountedTerminatedPods)
		}
		if c := trueCondition(st.job, batchv1.JobFailureTarget); c == nil || c.Reason != batchv1.JobReasonDeadlineExceeded {
			t.Fatalf("conditions %+v, want FailureTarget", st.job.Status.Conditions)
		}
		if st.finished.Type != batchv1.JobFailed {
			t.Fatalf("next condition %s, want Failed", st.finished.Type)
		}
		// Failed waits until every pod is counted and none terminates.
		if enactFinished(st, 0) {
			t.Fatal("finished with a pod still uncounted")
		}
		countUncounted(&st.job.Status, sets.New[types.UID]())
		if enactFinished(st, 1) {
			t.Fatal("finished with a pod still terminating")
		}
		if !enactFinished(st, 0) || trueCondition(st.job, batchv1.JobFailed) == nil || st.job.Status.CompletionTime != nil {
			t.Fatalf("status %+v, want Failed without a completion time", st.job.Status)
		}
	})
	t.Run("indexed successes go to completedIndexes", func(t *testing.T) {
		pods := []*corev1.Pod{testPod(succeeded, 3, time.Minute), testPod(succeeded, 1, time.Minute), testPod(succeeded, 2, time.Minute), testPod(succeeded, 9, time.Minute)}
		job := testJob(ptr.To(int32(5)), 5, indexed, func(j *batchv1.Job) { j.Status.CompletedIndexes = "0" })
		st := newSyncState(job, pods, nil, backoffRecord{}, t0)
		decide(st)
		planTracking(st)
		if st.job.Status.CompletedIndexes != "0-3" || st.job.Status.Succeeded != 4 || len(st.job.Status.UncountedTerminatedPods.Succeeded) != 0 {
			t.Fatalf("status %+v, want completedIndexes 0-3 and 4 succeeded", st.job.Status)
		}
	})
	t.Run("complete: SuccessCriteriaMet then Complete with a completion time", func(t *testing.T) {
		job := testJob(ptr.To(int32(1)), 1)
		st := newSyncState(job, nil, nil, backoffRecord{}, t0)
		st.finished = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, msgCompletions, t0)
		planTracking(st)
		if !enactFinished(st, 0) {
			t.Fatal("not finished")
		}
		var types []batchv1.JobConditionType
		for _, c := range st.job.Status.Conditions {
			types = append(types, c.Type)
		}
		if !slices.Equal(types, []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete}) ||
			st.job.Status.CompletionTime == nil || !st.job.Status.CompletionTime.Time.Equal(t0) {
			t.Fatalf("conditions %v completion %v", types, st.job.Status.CompletionTime)
		}
	})
}

func TestPodFromTemplate(t *testing.T) {
	job := testJob(ptr.To(int32(3)), 3, indexed, func(j *batchv1.Job) {
		j.Spec.BackoffLimitPerIndex = ptr.To(int32(2))
		j.Spec.Template.Spec.Subdomain = "sub"
	})
	prev := testPod(failed, 2, time.Minute)
	prev.Annotations[batchv1.JobIndexFailureCountAnnotation] = "1"
	p := podFromTemplate(job, 2, prev)
	if p.GenerateName != "j-2-" || p.Spec.Hostname != "j-2" || p.Spec.Subdomain != "sub" ||
		p.Annotations[batchv1.JobCompletionIndexAnnotation] != "2" || p.Labels[batchv1.JobCompletionIndexAnnotation] != "2" ||
		p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "2" {
		t.Errorf("pod meta %+v spec hostname %q", p.ObjectMeta, p.Spec.Hostname)
	}
	if !slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) || !metav1.IsControlledBy(p, job) {
		t.Errorf("finalizers %v owners %v", p.Finalizers, p.OwnerReferences)
	}
	env := p.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env %+v", env)
	}
	if job.Spec.Template.Labels[batchv1.JobCompletionIndexAnnotation] != "" || len(job.Spec.Template.Spec.Containers[0].Env) != 0 {
		t.Error("the job's template was modified")
	}
	plain := podFromTemplate(testJob(nil, 1), unknownIndex, nil)
	if plain.GenerateName != "j-" || plain.Spec.Hostname != "" || len(plain.Spec.Containers[0].Env) != 0 {
		t.Errorf("non-indexed pod %+v", plain.ObjectMeta)
	}
	long := "a234567890123456789012345678901234567890123456789012345678"
	if got := indexedNamePrefix(long, 12); len(got) > maxGeneratedNameLength || got[len(got)-4:] != "-12-" {
		t.Errorf("indexedNamePrefix = %q (%d chars)", got, len(got))
	}
}
