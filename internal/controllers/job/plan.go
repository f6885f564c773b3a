package job

import (
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// The pure core: what one sync concludes from a job, its pods and the
// controller's memory. Nothing here does I/O; sync.go carries out the
// decisions.

// Condition messages and reasons, as upstream's controller writes them
// (clients and tests match on them).
const (
	msgBackoffLimit      = "Job has reached the specified backoff limit"
	msgDeadline          = "Job was active longer than specified deadline"
	msgMaxFailedIndexes  = "Job has exceeded the specified maximal number of failed indexes"
	msgFailedIndexes     = "Job has failed indexes"
	msgCompletions       = "Reached expected number of succeeded pods"
	reasonJobSuspended   = "JobSuspended"
	reasonJobResumed     = "JobResumed"
	msgJobSuspended      = "Job suspended"
	msgJobResumed        = "Job resumed"
	completionIndexEnv   = "JOB_COMPLETION_INDEX"
	maxUncountedPods     = 500 // keeps status.uncountedTerminatedPods under ~20 KB
	maxPodChangesPerSync = 500
)

// syncState is everything one sync knows about a job. job is the sync's
// own copy: its status is built up in place and written at the end.
type syncState struct {
	job  *batchv1.Job
	pods []*corev1.Pod // every pod the job owns, finished ones included
	now  time.Time

	active      []*corev1.Pod // running or pending, not being deleted
	ready       int32
	terminating int32
	// uncounted are the UIDs already listed in
	// status.uncountedTerminatedPods; expectedRm those whose finalizer
	// this controller removed and whose update it has not seen yet. Pods
	// in either are never counted again.
	uncountedSucceeded, uncountedFailed sets.Set[types.UID]
	expectedRm                          sets.Set[types.UID]

	newSucceeded, newFailed []*corev1.Pod // finished, not yet counted
	succeeded, failed       int32         // counters including both

	// Indexed jobs only.
	prevSucceededIdx, succeededIdx intervals
	failedIdx                      *intervals          // with backoffLimitPerIndex
	delayedDeletion                map[int]*corev1.Pod // failed pods kept until their index is recreated

	backoff backoffRecord
	// finished is the condition the job is heading for (FailureTarget,
	// SuccessCriteriaMet, or from there Failed / Complete); nil while it
	// runs on.
	finished *batchv1.JobCondition
}

// newSyncState counts the pods. job must be the caller's copy.
func newSyncState(job *batchv1.Job, pods []*corev1.Pod, expectedRm sets.Set[types.UID], prev backoffRecord, now time.Time) *syncState {
	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	u := job.Status.UncountedTerminatedPods
	st := &syncState{
		job: job, pods: pods, now: now,
		uncountedSucceeded: sets.New(u.Succeeded...),
		uncountedFailed:    sets.New(u.Failed...),
		expectedRm:         expectedRm,
	}
	for _, p := range pods {
		switch {
		case isActive(p):
			st.active = append(st.active, p)
			if isReady(p) {
				st.ready++
			}
		case isTerminating(p):
			st.terminating++
		}
	}
	st.newSucceeded = st.uncountedPods(st.uncountedSucceeded, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
	st.newFailed = st.uncountedPods(st.uncountedFailed, func(p *corev1.Pod) bool { return isPodFailed(p, job) })
	st.succeeded = job.Status.Succeeded + int32(len(st.newSucceeded)+st.uncountedSucceeded.Len())
	st.failed = job.Status.Failed + int32(st.uncountedFailed.Len())
	for _, p := range st.newFailed {
		if matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).counts {
			st.failed++
		}
	}
	st.backoff = nextBackoffRecord(prev, st.newSucceeded, st.newFailed)
	return st
}

// uncountedPods returns the pods that still carry the tracking finalizer,
// are not already in the status's uncounted list (skip), are not waiting
// for a finalizer removal to show, have a valid index (Indexed jobs) and
// pass keep: the finished pods no counter includes yet.
func (st *syncState) uncountedPods(skip sets.Set[types.UID], keep func(*corev1.Pod) bool) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range st.pods {
		if !hasTrackingFinalizer(p) || skip.Has(p.UID) || st.expectedRm.Has(p.UID) {
			continue
		}
		if isIndexed(st.job) && !validIndex(p, completions(st.job)) {
			continue
		}
		if keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// Limits the sync needs from the controller's configuration.
type limits struct {
	backoffBase, backoffMax time.Duration
}

// decide sets the start time and works out whether the job has reached
// an end (st.finished). It returns when to look again for
// activeDeadlineSeconds, zero if not needed.
func decide(st *syncState) (requeue time.Duration) {
	job := st.job
	if job.Status.StartTime == nil && !suspended(job) {
		t := metav1.NewTime(st.now)
		job.Status.StartTime = &t
	}
	// A job already judged keeps its verdict; the pod failure policy is
	// consulted only while no verdict stands.
	if c := trueCondition(job, batchv1.JobSuccessCriteriaMet); c != nil {
		st.finished = c
	} else if c := trueCondition(job, batchv1.JobFailureTarget); c != nil {
		st.finished = newCondition(batchv1.JobFailed, c.Reason, c.Message, st.now)
	} else if msg := failJobMessage(job, st.pods); msg != "" {
		st.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonPodFailurePolicy, msg, st.now)
	}
	if st.finished == nil {
		switch {
		case st.failed > *job.Spec.BackoffLimit || pastBackoffLimitOnFailure(job, st.pods):
			st.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonBackoffLimitExceeded, msgBackoffLimit, st.now)
		case pastActiveDeadline(job, st.now):
			st.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded, msgDeadline, st.now)
		case job.Spec.ActiveDeadlineSeconds != nil && !suspended(job):
			requeue = time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - st.now.Sub(job.Status.StartTime.Time)
		}
	}
	if !isIndexed(job) {
		return requeue
	}
	n := completions(job)
	st.prevSucceededIdx, st.succeededIdx = succeededIndexes(job, st.pods)
	st.succeeded = int32(st.succeededIdx.total())
	if job.Spec.BackoffLimitPerIndex != nil {
		failed := failedIndexes(job, st.pods)
		st.failedIdx = &failed
		if st.finished == nil {
			switch {
			case job.Spec.MaxFailedIndexes != nil && failed.total() > int(*job.Spec.MaxFailedIndexes):
				st.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonMaxFailedIndexesExceeded, msgMaxFailedIndexes, st.now)
			case failed.total() > 0 && failed.total()+st.succeededIdx.total() >= n:
				st.finished = newCondition(batchv1.JobFailureTarget, batchv1.JobReasonFailedIndexes, msgFailedIndexes, st.now)
			}
		}
		st.delayedDeletion = podsWithDelayedDeletion(st)
	}
	if st.finished == nil {
		if msg, ok := matchSuccessPolicy(job.Spec.SuccessPolicy, n, st.succeededIdx); ok {
			st.finished = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonSuccessPolicy, msg, st.now)
		}
	}
	return requeue
}

// succeededIndexes returns the indexes the status already lists and
// those plus the indexes of succeeded pods not yet counted.
func succeededIndexes(job *batchv1.Job, pods []*corev1.Pod) (prev, all intervals) {
	n := completions(job)
	prev = parseIntervals(job.Status.CompletedIndexes, n)
	var ixs []int
	for _, p := range pods {
		if p.Status.Phase == corev1.PodSucceeded && hasTrackingFinalizer(p) && validIndex(p, n) {
			ixs = append(ixs, completionIndex(p))
		}
	}
	slices.Sort(ixs)
	return prev, prev.withIndexes(slices.Compact(ixs))
}

// failedIndexes returns the indexes failed for good: those the status
// lists plus those whose latest failure used up backoffLimitPerIndex (or
// matched a FailIndex rule).
func failedIndexes(job *batchv1.Job, pods []*corev1.Pod) intervals {
	n := completions(job)
	var prev intervals
	if job.Status.FailedIndexes != nil {
		prev = parseIntervals(*job.Status.FailedIndexes, n)
	}
	var ixs []int
	for _, p := range pods {
		if validIndex(p, n) && hasTrackingFinalizer(p) && indexFailed(job, p) {
			ixs = append(ixs, completionIndex(p))
		}
	}
	slices.Sort(ixs)
	return prev.withIndexes(slices.Compact(ixs))
}

func indexFailed(job *batchv1.Job, p *corev1.Pod) bool {
	if !isPodFailed(p, job) {
		return false
	}
	v := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
	if v.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	return v.counts && indexFailureCount(p) >= *job.Spec.BackoffLimitPerIndex
}

// podsWithDelayedDeletion picks, per index still to be retried, the
// latest failed pod: its finalizer stays until the replacement exists,
// because the replacement's failure-count annotation is copied from it.
func podsWithDelayedDeletion(st *syncState) map[int]*corev1.Pod {
	n := completions(st.job)
	active := sets.New(indexesOf(st.active)...)
	out := map[int]*corev1.Pod{}
	for _, p := range st.pods {
		if !hasTrackingFinalizer(p) || st.expectedRm.Has(p.UID) || !validIndex(p, n) || !isPodFailed(p, st.job) {
			continue
		}
		ix := completionIndex(p)
		if st.succeededIdx.has(ix) || st.failedIdx.has(ix) || active.Has(ix) {
			continue
		}
		if prev, ok := out[ix]; ok &&
			(indexAbsoluteFailureCount(prev) > indexAbsoluteFailureCount(p) || finishedTime(p).Before(finishedTime(prev))) {
			continue
		}
		out[ix] = p
	}
	return out
}

// failJobMessage is the message of the first failed pod that matches a
// FailJob rule; "" when none does.
func failJobMessage(job *batchv1.Job, pods []*corev1.Pod) string {
	if job.Spec.PodFailurePolicy == nil {
		return ""
	}
	for _, p := range pods {
		if isPodFailed(p, job) {
			if v := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); v.failJob != "" {
				return v.failJob
			}
		}
	}
	return ""
}

// pastBackoffLimitOnFailure: with restartPolicy OnFailure failures show as
// container restarts, not failed pods; their sum is held to backoffLimit.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodPending {
			continue
		}
		for _, cs := range p.Status.InitContainerStatuses {
			restarts += cs.RestartCount
		}
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
	}
	if *job.Spec.BackoffLimit == 0 {
		return restarts > 0
	}
	return restarts >= *job.Spec.BackoffLimit
}

// pastActiveDeadline: the job has run activeDeadlineSeconds since it
// (last) started; a suspended job's clock is stopped.
func pastActiveDeadline(job *batchv1.Job, now time.Time) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || suspended(job) {
		return false
	}
	return now.Sub(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

// managePlan is what manageJob must do: delete pods, create pods, or wait
// out a back-off. At most one of delete and create is set.
type managePlan struct {
	// delete lists the pods to delete (their tracking finalizer removed
	// first, so they are never counted).
	delete []*corev1.Pod
	// create is the number of pods to create; for Indexed jobs, indexes
	// names their indexes (len(indexes) == create).
	create  int
	indexes []int
	// wait, when positive, is the back-off left before a failed pod may
	// be replaced: sync again then.
	wait time.Duration
}

// planManage decides how to bring the job's active pods to what it
// wants: none while suspended; else parallelism, but never more than the
// completions still missing, less (when only failed pods are replaced)
// those still terminating. Deleting wins over creating in one sync.
func planManage(st *syncState, lim limits) managePlan {
	job := st.job
	active := int32(len(st.active))
	if suspended(job) {
		return managePlan{delete: podsForRemoval(job, st.active, len(st.active))}
	}
	parallelism := *job.Spec.Parallelism
	var want int32
	if job.Spec.Completions == nil {
		// A work queue: once one pod succeeded, the rest are left to
		// finish and none is added.
		want = parallelism
		if st.succeeded > 0 {
			want = active
		}
	} else {
		want = max(min(*job.Spec.Completions-st.succeeded, parallelism), 0)
	}
	if rm := podsForRemoval(job, st.active, int(max(active-want, 0))); len(rm) > 0 {
		if len(rm) > maxPodChangesPerSync {
			rm = rm[:maxPodChangesPerSync]
		}
		return managePlan{delete: rm}
	}
	var terminating int32
	if onlyReplaceFailedPods(job) {
		terminating = st.terminating
	}
	diff := want - terminating - active
	if diff <= 0 {
		return managePlan{}
	}
	if job.Spec.BackoffLimitPerIndex == nil {
		if wait := remainingBackoff(st.now, st.backoff.failuresAfterLastSuccess, st.backoff.lastFailure, lim.backoffBase, lim.backoffMax); wait > 0 {
			return managePlan{wait: wait}
		}
	}
	diff = min(diff, maxPodChangesPerSync)
	if !isIndexed(job) {
		return managePlan{create: int(diff)}
	}
	ixs := firstPendingIndexes(st, int(diff), completions(job))
	if job.Spec.BackoffLimitPerIndex != nil {
		// Each index waits out its own back-off; create those that are
		// due, or wait for the first that will be.
		var due []int
		var wait time.Duration
		for _, ix := range ixs {
			d := remainingIndexBackoff(st.now, st.delayedDeletion[ix], lim.backoffBase, lim.backoffMax)
			switch {
			case d == 0:
				due = append(due, ix)
			case wait == 0 || d < wait:
				wait = d
			}
		}
		if len(due) == 0 {
			return managePlan{wait: wait}
		}
		ixs = due
	}
	return managePlan{create: len(ixs), indexes: ixs}
}

// podsForRemoval picks at least n of an active list to delete: for an
// Indexed job, first every pod with a missing, out-of-range or duplicate
// index; then the least valuable (see removalOrder).
func podsForRemoval(job *batchv1.Job, active []*corev1.Pod, n int) []*corev1.Pod {
	var rm, rest []*corev1.Pod
	if isIndexed(job) {
		rm, rest = duplicateIndexPods(slices.Clone(active), completions(job))
	} else {
		rest = slices.Clone(active)
	}
	if len(rm) < n {
		slices.SortStableFunc(rest, removalOrder)
		rm = append(rm, rest[:n-len(rm)]...)
	}
	return rm
}

// removalOrder sorts the pods cheapest to lose first: not yet scheduled,
// then pending before unknown before running, not ready before ready,
// ready more recently, more container restarts, created more recently.
func removalOrder(a, b *corev1.Pod) int {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return boolFirst(a.Spec.NodeName == "")
	}
	if ra, rb := phaseRank(a.Status.Phase), phaseRank(b.Status.Phase); ra != rb {
		return ra - rb
	}
	if isReady(a) != isReady(b) {
		return boolFirst(!isReady(a))
	}
	if isReady(a) {
		ta, tb := readySince(a), readySince(b)
		if !ta.Equal(tb) {
			return -ta.Compare(tb) // ready more recently goes first
		}
	}
	if ca, cb := restarts(a), restarts(b); ca != cb {
		return int(cb - ca)
	}
	return -a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
}

func phaseRank(p corev1.PodPhase) int {
	switch p {
	case corev1.PodPending:
		return 0
	case corev1.PodUnknown:
		return 1
	case corev1.PodRunning:
		return 2
	}
	return 0
}

func boolFirst(aFirst bool) int {
	if aFirst {
		return -1
	}
	return 1
}

func readySince(p *corev1.Pod) time.Time {
	if c := readyCondition(p); c != nil {
		return c.LastTransitionTime.Time
	}
	return time.Time{}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n = max(n, cs.RestartCount)
	}
	return n
}

// jobComplete: every completion is reached (for a work queue, one pod
// succeeded) and nothing runs any more.
func jobComplete(job *batchv1.Job, succeeded, active int32) bool {
	if job.Spec.Completions == nil {
		return succeeded > 0 && active == 0
	}
	return succeeded >= *job.Spec.Completions && active == 0
}

// Small predicates shared by the core and the I/O half.

func isActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

func isTerminating(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

func terminatingPods(pods []*corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range pods {
		if isTerminating(p) {
			out = append(out, p)
		}
	}
	return out
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// isPodFailed: the pod failed, or — unless the job replaces only failed
// pods — was deleted before it succeeded (a pod deleted by someone else
// never reaches Failed, yet the attempt is lost).
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

// onlyReplaceFailedPods: podReplacementPolicy Failed (always so with a pod
// failure policy) — a terminating pod is neither replaced nor counted
// until it has actually failed.
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	return job.Spec.PodFailurePolicy != nil ||
		(job.Spec.PodReplacementPolicy != nil && *job.Spec.PodReplacementPolicy == batchv1.Failed)
}

func hasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer)
}

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

// completions of an Indexed job (validation requires it to be set).
func completions(job *batchv1.Job) int {
	if job.Spec.Completions == nil {
		return 0
	}
	return int(*job.Spec.Completions)
}

func suspended(job *batchv1.Job) bool { return job.Spec.Suspend != nil && *job.Spec.Suspend }

// finished reports whether the job has its terminal Complete or Failed
// condition.
func finished(job *batchv1.Job) bool {
	return trueCondition(job, batchv1.JobComplete) != nil || trueCondition(job, batchv1.JobFailed) != nil
}

func trueCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range job.Status.Conditions {
		if c := &job.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

func newCondition(t batchv1.JobConditionType, reason, message string, now time.Time) *batchv1.JobCondition {
	ts := metav1.NewTime(now)
	return &batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message, LastProbeTime: ts, LastTransitionTime: ts}
}

// setCondition adds or updates the condition of type t; it never adds one
// whose status is False (nothing to report). It says whether anything
// changed.
func setCondition(job *batchv1.Job, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) bool {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Type != t {
			continue
		}
		if c.Status == status && c.Reason == reason && c.Message == message {
			return false
		}
		*c = *newCondition(t, reason, message, now)
		c.Status = status
		return true
	}
	if status == corev1.ConditionFalse {
		return false
	}
	c := newCondition(t, reason, message, now)
	c.Status = status
	job.Status.Conditions = append(job.Status.Conditions, *c)
	return true
}
