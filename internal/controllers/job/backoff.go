package job

import (
	"slices"
	"strconv"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Pod failure back-off: a failed pod is replaced only after a delay that
// doubles with each failure since the job's last success, so a job whose
// pods crash at once does not hammer the cluster. The delay is counted
// from the last failure's finish time, not from when the controller saw
// it.

// backoffRecord is what the controller remembers of a job's recent
// failures. It lives in memory only: a restarted controller starts with
// no delay, as upstream's does.
type backoffRecord struct {
	failuresAfterLastSuccess int32
	lastFailure              time.Time // zero when there is none
}

// nextBackoffRecord folds the pods that finished since the last sync
// into the record: a success resets the count, and only failures that
// finished after the latest success count.
func nextBackoffRecord(old backoffRecord, newSucceeded, newFailed []*corev1.Pod) backoffRecord {
	if len(newFailed) == 0 && len(newSucceeded) == 0 {
		return old
	}
	failedAt := finishTimes(newFailed)
	if len(newSucceeded) == 0 {
		return backoffRecord{
			failuresAfterLastSuccess: old.failuresAfterLastSuccess + int32(len(newFailed)),
			lastFailure:              failedAt[len(failedAt)-1],
		}
	}
	succeededAt := finishTimes(newSucceeded)
	lastSuccess := succeededAt[len(succeededAt)-1]
	var rec backoffRecord
	for i := len(failedAt) - 1; i >= 0 && failedAt[i].After(lastSuccess); i-- {
		if rec.lastFailure.IsZero() {
			rec.lastFailure = failedAt[i]
		}
		rec.failuresAfterLastSuccess++
	}
	return rec
}

func finishTimes(pods []*corev1.Pod) []time.Time {
	ts := make([]time.Time, len(pods))
	for i, p := range pods {
		ts[i] = finishedTime(p)
	}
	slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
	return ts
}

// finishedTime estimates when a pod ended: when its last container
// terminated; else when it stopped being ready; else, for a deleted pod,
// its deletion time less the grace period; else its creation.
func finishedTime(p *corev1.Pod) time.Time {
	var last time.Time
	allDone := len(p.Status.ContainerStatuses) > 0
	for _, cs := range p.Status.ContainerStatuses {
		t := cs.State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			allDone = false
			break
		}
		if t.FinishedAt.After(last) {
			last = t.FinishedAt.Time
		}
	}
	if allDone {
		return last
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		grace := int64(0)
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// backoffDelay is the delay after failures consecutive failures: base,
// doubling per further failure, capped at limit; zero for none.
func backoffDelay(failures int32, base, limit time.Duration) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := base
	for i := int32(1); i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// remainingBackoff is how long to wait at now before replacing a failed
// pod; zero when the delay has passed.
func remainingBackoff(now time.Time, failures int32, lastFailure time.Time, base, limit time.Duration) time.Duration {
	d := backoffDelay(failures, base, limit)
	if d == 0 {
		return 0
	}
	return max(d-now.Sub(lastFailure), 0)
}

// backoffStore holds the records by job key; safe for concurrent use.
type backoffStore struct {
	mu sync.Mutex
	m  map[string]backoffRecord
}

func newBackoffStore() *backoffStore { return &backoffStore{m: map[string]backoffRecord{}} }

func (s *backoffStore) get(key string) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[key]
}

func (s *backoffStore) set(key string, r backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r == (backoffRecord{}) {
		delete(s.m, key)
		return
	}
	s.m[key] = r
}

func (s *backoffStore) remove(key string) { s.set(key, backoffRecord{}) }

// Per-index back-off (spec.backoffLimitPerIndex) keeps its count on the
// pods themselves, in annotations copied from each failed pod to its
// replacement, so it survives a controller restart.

// indexFailureCount reads the failures of the pod's index counted so far.
func indexFailureCount(p *corev1.Pod) int32 {
	return annotationInt32(p, batchv1.JobIndexFailureCountAnnotation)
}

// indexAbsoluteFailureCount adds the failures an Ignore rule did not count.
func indexAbsoluteFailureCount(p *corev1.Pod) int32 {
	return indexFailureCount(p) + annotationInt32(p, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

// annotationInt32 reads a non-negative int32 annotation; anything else
// (absent, garbled, set by hand) reads as 0.
func annotationInt32(p *corev1.Pod, key string) int32 {
	v, ok := p.Annotations[key]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil || n < 0 {
		return 0
	}
	return int32(n)
}

// remainingIndexBackoff is how long index's replacement must wait after
// lastFailed, the index's latest failed pod (nil: no wait).
func remainingIndexBackoff(now time.Time, lastFailed *corev1.Pod, base, limit time.Duration) time.Duration {
	if lastFailed == nil {
		return 0
	}
	return remainingBackoff(now, indexAbsoluteFailureCount(lastFailed)+1, finishedTime(lastFailed), base, limit)
}
