package job

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/controller"
)

// sync brings one job (key "namespace/name") a step closer to done: it
// counts its pods, decides whether it has finished, creates or deletes
// pods when the previous sync's changes have all been seen, and records
// the outcome in the status. See the package documentation for the
// order of events.
func (c *jobController) sync(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := splitKey(key)
	if err != nil || ns == "" || name == "" {
		return controller.Result{}, nil
	}
	shared, err := c.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if managedElsewhere(shared) {
		return controller.Result{}, nil
	}
	if finished(shared) {
		// The verdict is final; nothing more to count or run.
		c.backoff.remove(key)
		return controller.Result{}, nil
	}
	if c.stale.isStale(key, shared.ResourceVersion, c.clock.Now()) {
		// Our last status write is not in the cache yet; its update
		// event will bring the job back.
		return controller.Result{}, nil
	}
	job := shared.DeepCopy()
	if m := job.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		c.recorder.Event(job, corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return controller.Result{}, nil
	}
	if job.Spec.BackoffLimit == nil || job.Spec.Parallelism == nil {
		// The API server defaults both; a job without them was not
		// written through it and cannot be reasoned about.
		return controller.Result{}, nil
	}
	// Expectations are read before the pods: a pod that arrives in
	// between then only defers this sync's actions to the next one.
	satisfied := c.expectations.SatisfiedExpectations(key)
	pods, err := c.claimPods(ctx, job)
	if err != nil {
		return controller.Result{}, err
	}
	oldStatus := *job.Status.DeepCopy()
	st := newSyncState(job, pods, c.finalizers.pending(key), c.backoff.get(key), c.clock.Now())
	lim := limits{backoffBase: c.cfg.PodFailureBackoff, backoffMax: c.cfg.MaxPodFailureBackoff}
	var res controller.Result
	if d := decide(st); d > 0 {
		res.RequeueAfter = d
	}

	active, ready, terminating := int32(len(st.active)), st.ready, st.terminating
	suspendChanged := false
	var manageErr error
	if st.finished != nil {
		// The job failed or met its success policy: stop what runs,
		// keeping the finalizers so the stopped pods get counted. The
		// verdict becomes final only once every pod is accounted for.
		deleted, deletedReady, err := c.deletePods(ctx, key, job, st.active, false, false)
		if deleted != active || !satisfied {
			st.finished = nil
		}
		active -= deleted
		terminating += deleted
		ready -= deletedReady
		manageErr = err
	} else {
		managed := false
		if satisfied && job.DeletionTimestamp == nil {
			plan := planManage(st, lim)
			switch {
			case plan.wait > 0:
				// Back-off: look again when it has passed (at least a
				// batch period away).
				res.RequeueAfter = minPositive(res.RequeueAfter, max(plan.wait, c.cfg.SyncBatchPeriod))
			case len(plan.delete) > 0:
				deleted, deletedReady, err := c.deletePods(ctx, key, job, plan.delete, true, true)
				active -= deleted
				terminating += deleted
				ready -= deletedReady
				manageErr = err
			case plan.create > 0:
				created, err := c.createPods(ctx, key, job, plan.create, plan.indexes, st.delayedDeletion)
				active += int32(created)
				manageErr = err
			}
			managed = true
		}
		if jobComplete(job, st.succeeded, active) {
			st.finished = newCondition(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached, msgCompletions, st.now)
		} else if managed {
			suspendChanged = c.updateSuspended(st)
		}
	}

	job.Status.Active = active
	job.Status.Ready = &ready
	job.Status.Terminating = &terminating
	changed := suspendChanged || !equality.Semantic.DeepEqual(oldStatus.StartTime, job.Status.StartTime) ||
		active != oldStatus.Active || !int32PtrEqual(oldStatus.Ready, job.Status.Ready) ||
		!int32PtrEqual(oldStatus.Terminating, job.Status.Terminating)
	err = c.track(ctx, key, st, terminating, changed)
	if st.job.ResourceVersion != shared.ResourceVersion {
		c.stale.wrote(key, shared.ResourceVersion, c.clock.Now())
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("tracking status: %w", err)
	}
	return res, manageErr
}

// updateSuspended keeps the Suspended condition in step with
// spec.suspend. Resuming restarts the activeDeadlineSeconds clock: the
// deadline counts the time a job was allowed to run, not the time it sat
// suspended.
func (c *jobController) updateSuspended(st *syncState) bool {
	job := st.job
	if suspended(job) {
		if setCondition(job, batchv1.JobSuspended, corev1.ConditionTrue, reasonJobSuspended, msgJobSuspended, st.now) {
			c.recorder.Event(job, corev1.EventTypeNormal, "Suspended", msgJobSuspended)
			return true
		}
		return false
	}
	if setCondition(job, batchv1.JobSuspended, corev1.ConditionFalse, reasonJobResumed, msgJobResumed, st.now) {
		c.recorder.Event(job, corev1.EventTypeNormal, "Resumed", msgJobResumed)
		t := metav1.NewTime(st.now)
		job.Status.StartTime = &t
		return true
	}
	return false
}

// track counts finished pods (see tracking.go): it writes the uncounted
// pods to the status, removes their finalizers, moves them into the
// counters and, once nothing is left to count, sets the terminal
// condition. Each status write carries the job's resourceVersion, so a
// conflict with a newer job fails the sync and it starts over.
func (c *jobController) track(ctx context.Context, key string, st *syncState, terminating int32, changed bool) error {
	plan := planTracking(st)
	changed = changed || plan.changed
	if changed {
		if err := c.writeStatus(ctx, st); err != nil {
			return fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		// The back-off is remembered only once the failures it counts
		// are safely in the status.
		c.backoff.set(key, st.backoff)
		changed = false
	}
	var rmErr error
	if len(plan.removeFinalizer) > 0 {
		var done []bool
		done, rmErr = c.removeFinalizers(ctx, key, plan.removeFinalizer)
		for i, p := range plan.removeFinalizer {
			if done[i] {
				plan.withFinalizer.Delete(p.UID)
			}
		}
	}
	if countUncounted(&st.job.Status, plan.withFinalizer) {
		changed = true
	}
	if rmErr != nil {
		if changed {
			// Save what was counted before giving up.
			if err := c.writeStatus(ctx, st); err != nil {
				return fmt.Errorf("removing uncounted pods from status: %w", err)
			}
		}
		return rmErr
	}
	done := !plan.capped && enactFinished(st, terminating)
	if !changed && !done {
		return nil
	}
	if err := c.writeStatus(ctx, st); err != nil {
		return fmt.Errorf("removing uncounted pods from status: %w", err)
	}
	if done {
		c.recordFinished(st.job, st.finished)
	}
	return nil
}

func (c *jobController) writeStatus(ctx context.Context, st *syncState) error {
	updated, err := c.client.BatchV1().Jobs(st.job.Namespace).UpdateStatus(ctx, st.job, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	// Carry on from the written object (its new resourceVersion).
	st.job.ResourceVersion = updated.ResourceVersion
	return nil
}

func (c *jobController) recordFinished(job *batchv1.Job, cond *batchv1.JobCondition) {
	if cond.Type == batchv1.JobComplete {
		if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
			c.recorder.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
		}
		c.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
		return
	}
	c.recorder.Event(job, corev1.EventTypeWarning, cond.Reason, cond.Message)
}

func int32PtrEqual(a, b *int32) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

// minPositive is the smaller of two durations, ignoring zeros.
func minPositive(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}
