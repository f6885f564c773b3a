package job

import (
	"slices"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Tracking finished pods with a finalizer.
//
// Every pod a job creates carries the batch.kubernetes.io/job-tracking
// finalizer, so it cannot vanish (pod GC, an eviction, a user's delete)
// before the job has counted it. Counting is a two-step commit that
// survives a controller crash at any point:
//
//  1. the finished pod's UID is written to status.uncountedTerminatedPods
//     (succeeded or failed);
//  2. the pod's finalizer is removed;
//  3. UIDs whose pod no longer has the finalizer move from the uncounted
//     lists into status.succeeded / status.failed.
//
// A pod is counted when it still has the finalizer and is not listed;
// a listed pod is never counted twice; and a pod without the finalizer
// was counted already. Indexed jobs count successes by index
// (status.completedIndexes), so they need no UID list for those.

// trackingPlan is what planTracking decided: finalizers to remove, the
// UIDs still holding one, and whether the status changed.
type trackingPlan struct {
	removeFinalizer []*corev1.Pod
	withFinalizer   sets.Set[types.UID]
	changed         bool
	// capped: the uncounted lists reached maxUncountedPods; the rest wait
	// for the next sync, and the job must not be declared finished yet.
	capped bool
}

// planTracking records finished pods in the status's uncounted lists (or
// completed indexes), picks the finalizers that may go, sets the failed
// and completed index lists, and adds the interim FailureTarget or
// SuccessCriteriaMet condition; st.finished then becomes the terminal
// condition (Failed or Complete) to set once everything is counted.
func planTracking(st *syncState) trackingPlan {
	job := st.job
	status := &job.Status
	uncounted := status.UncountedTerminatedPods
	indexed := isIndexed(job)
	n := completions(job)
	pods := st.pods
	if indexed {
		// Completed indexes go in in order.
		pods = slices.Clone(pods)
		slices.SortStableFunc(pods, func(a, b *corev1.Pod) int { return completionIndex(a) - completionIndex(b) })
	}
	plan := trackingPlan{withFinalizer: sets.New[types.UID]()}
	for _, p := range pods {
		if hasTrackingFinalizer(p) && !st.expectedRm.Has(p.UID) {
			plan.withFinalizer.Insert(p.UID)
		}
	}
	if countUncounted(status, plan.withFinalizer) {
		plan.changed = true
	}
	var newIdx []int
	terminalFailure := st.finished != nil && st.finished.Type != batchv1.JobSuccessCriteriaMet
	for _, p := range pods {
		if !hasTrackingFinalizer(p) || st.expectedRm.Has(p.UID) {
			continue // counted by an earlier sync
		}
		failed := isPodFailed(p, job)
		if !canRemoveFinalizer(st, p, failed) {
			continue
		}
		plan.removeFinalizer = append(plan.removeFinalizer, p)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !st.uncountedFailed.Has(p.UID):
			if indexed {
				if ix := completionIndex(p); validIndex(p, n) && !st.prevSucceededIdx.has(ix) {
					newIdx = append(newIdx, ix)
					plan.changed = true
				}
			} else if !st.uncountedSucceeded.Has(p.UID) {
				uncounted.Succeeded = append(uncounted.Succeeded, p.UID)
				st.uncountedSucceeded.Insert(p.UID)
				plan.changed = true
			}
		case failed || terminalFailure:
			// Once the job has failed, every pod still running is a
			// failure too.
			if st.uncountedFailed.Has(p.UID) || (indexed && !validIndex(p, n)) {
				break
			}
			if matchPodFailurePolicy(job.Spec.PodFailurePolicy, p).counts {
				uncounted.Failed = append(uncounted.Failed, p.UID)
				st.uncountedFailed.Insert(p.UID)
				plan.changed = true
			}
		}
		if len(newIdx)+len(uncounted.Succeeded)+len(uncounted.Failed) >= maxUncountedPods {
			plan.capped = true
			break
		}
	}
	if indexed {
		st.succeededIdx = st.succeededIdx.withIndexes(newIdx)
		if s := st.succeededIdx.String(); s != status.CompletedIndexes {
			status.CompletedIndexes = s
			plan.changed = true
		}
		status.Succeeded = int32(st.succeededIdx.total())
		var failedStr *string
		if st.failedIdx != nil {
			s := st.failedIdx.String()
			failedStr = &s
		}
		if !equalStringPtr(status.FailedIndexes, failedStr) {
			status.FailedIndexes = failedStr
			plan.changed = true
		}
	}
	switch {
	case st.finished == nil:
	case st.finished.Type == batchv1.JobFailureTarget:
		// The interim condition is written before any finalizer goes, so
		// the verdict outlives the pods that caused it.
		job.Status.Conditions = append(job.Status.Conditions, *st.finished)
		plan.changed = true
		st.finished = newCondition(batchv1.JobFailed, st.finished.Reason, st.finished.Message, st.now)
	case st.finished.Type == batchv1.JobSuccessCriteriaMet:
		if trueCondition(job, batchv1.JobSuccessCriteriaMet) == nil {
			job.Status.Conditions = append(job.Status.Conditions, *st.finished)
			plan.changed = true
		}
		st.finished = newCondition(batchv1.JobComplete, st.finished.Reason, st.finished.Message, st.now)
	}
	return plan
}

// canRemoveFinalizer: the pod's fate is sealed — it succeeded, or the job
// is finishing or being deleted, or it failed (unless, with
// backoffLimitPerIndex, it is the failed pod its index's replacement
// still has to copy its failure count from).
func canRemoveFinalizer(st *syncState, p *corev1.Pod, failed bool) bool {
	if st.job.DeletionTimestamp != nil || st.finished != nil || p.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if !failed {
		return false
	}
	if st.job.Spec.BackoffLimitPerIndex != nil {
		if keep, ok := st.delayedDeletion[completionIndex(p)]; ok && keep.UID == p.UID {
			return false
		}
	}
	return true
}

// countUncounted moves the uncounted UIDs whose pod no longer holds the
// finalizer into the succeeded and failed counters (step 3). It reports
// whether the status changed.
func countUncounted(status *batchv1.JobStatus, withFinalizer sets.Set[types.UID]) bool {
	u := status.UncountedTerminatedPods
	changed := false
	keep := func(uids []types.UID, counter *int32) []types.UID {
		var still []types.UID
		for _, uid := range uids {
			if withFinalizer.Has(uid) {
				still = append(still, uid)
			}
		}
		if len(still) != len(uids) {
			*counter += int32(len(uids) - len(still))
			changed = true
		}
		return still
	}
	u.Succeeded = keep(u.Succeeded, &status.Succeeded)
	u.Failed = keep(u.Failed, &status.Failed)
	return changed
}

// enactFinished sets the terminal condition once every finished pod is
// counted and none is still terminating (a job is not Failed while its
// pods may still be running). It reports whether it did.
func enactFinished(st *syncState, terminating int32) bool {
	if st.finished == nil {
		return false
	}
	u := st.job.Status.UncountedTerminatedPods
	if len(u.Succeeded)+len(u.Failed) > 0 || terminating > 0 {
		return false
	}
	c := st.finished
	setCondition(st.job, c.Type, c.Status, c.Reason, c.Message, st.now)
	if c.Type == batchv1.JobComplete {
		t := c.LastTransitionTime
		st.job.Status.CompletionTime = &t
	}
	return true
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// finalizerExpectations remembers, per job key, the pods whose tracking
// finalizer this controller removed and whose update it has not seen yet:
// until the informer shows the removal, the cached pod still looks
// uncounted and must not be counted a second time.
type finalizerExpectations struct {
	mu sync.Mutex
	m  map[string]sets.Set[types.UID]
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{m: map[string]sets.Set[types.UID]{}}
}

func (e *finalizerExpectations) expect(key string, uids []types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s := e.m[key]
	if s == nil {
		s = sets.New[types.UID]()
		e.m[key] = s
	}
	s.Insert(uids...)
}

func (e *finalizerExpectations) observed(key string, uid types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s := e.m[key]; s != nil {
		s.Delete(uid)
		if s.Len() == 0 {
			delete(e.m, key)
		}
	}
}

// pending returns a copy of key's expected removals.
func (e *finalizerExpectations) pending(key string) sets.Set[types.UID] {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.m[key].Clone()
}

func (e *finalizerExpectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.m, key)
}

// staleJobs remembers, per job key, the resourceVersion the cache held
// when this controller last wrote the job's status. Until the informer
// delivers a newer version, the cached job predates the write: its
// counters are behind the pods (whose finalizers the write let go), and
// a sync acting on it would create pods for completions already counted.
// Such a sync waits for the job's update event instead. An entry older
// than ExpectationsTimeout is ignored, in case that event was lost.
type staleJobs struct {
	mu sync.Mutex
	m  map[string]staleEntry
}

type staleEntry struct {
	rv string
	at time.Time
}

func newStaleJobs() *staleJobs { return &staleJobs{m: map[string]staleEntry{}} }

// wrote records that the status of the job cached at rv was written.
func (s *staleJobs) wrote(key, rv string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = staleEntry{rv: rv, at: now}
}

// isStale reports whether the cached job at rv is older than this
// controller's last write, forgetting the record once it is not.
func (s *staleJobs) isStale(key, rv string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.m[key]
	if !ok {
		return false
	}
	if e.rv == rv && now.Sub(e.at) < controller.ExpectationsTimeout {
		return true
	}
	delete(s.m, key)
	return false
}

func (s *staleJobs) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}
