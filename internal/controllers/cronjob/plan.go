package cronjob

import (
	"slices"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
)

// Why a sync starts no job.
type skipReason int

const (
	skipNone skipReason = iota
	// skipNothingDue: no start time has passed since the last one.
	skipNothingDue
	// skipTooLate: the start time is more than startingDeadlineSeconds
	// ago.
	skipTooLate
	// skipAlreadyStarted: the job for this time exists or was recorded.
	skipAlreadyStarted
	// skipForbidden: concurrencyPolicy Forbid and a job still runs.
	skipForbidden
)

// runDecision is what decideRun concluded about starting a job now.
type runDecision struct {
	skip skipReason
	// scheduled is the start time to run (or skipped).
	scheduled *time.Time
	// replace: concurrencyPolicy Replace, so the active jobs go first.
	replace bool
	// manyMissed: more than 100 start times were missed; warn.
	manyMissed bool
	// wakeAt is when to look again if nothing starts now.
	wakeAt time.Time
	// err: the schedule cannot be met at all (Feb 31).
	err error
}

// decideRun applies the schedule, startingDeadlineSeconds and
// concurrencyPolicy to cj (whose status.active is already reconciled) at
// now. Only the most recent missed start time is ever run: a controller
// back after an outage starts one job, not one per missed time.
func decideRun(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) runDecision {
	_, scheduled, missed, err := mostRecentScheduleTime(cj, now, sched, true)
	d := runDecision{wakeAt: nextWakeup(cj, now, sched), manyMissed: missed == manyMissed && scheduled != nil}
	if err != nil {
		return runDecision{err: err}
	}
	if scheduled == nil {
		d.skip = skipNothingDue
		return d
	}
	d.scheduled = scheduled
	if s := cj.Spec.StartingDeadlineSeconds; s != nil && scheduled.Add(time.Duration(*s)*time.Second).Before(now) {
		d.skip = skipTooLate
		return d
	}
	name := jobName(cj, *scheduled)
	alreadyStarted := cj.Status.LastScheduleTime != nil && cj.Status.LastScheduleTime.Time.Equal(*scheduled)
	for _, ref := range cj.Status.Active {
		if ref.Name == name && ref.Namespace == cj.Namespace {
			alreadyStarted = true
		}
	}
	if alreadyStarted {
		d.skip = skipAlreadyStarted
		return d
	}
	switch cj.Spec.ConcurrencyPolicy {
	case batchv1.ForbidConcurrent:
		if len(cj.Status.Active) > 0 {
			d.skip = skipForbidden
		}
	case batchv1.ReplaceConcurrent:
		d.replace = len(cj.Status.Active) > 0
	}
	return d
}

// historyToDelete returns the finished jobs beyond the history limits,
// oldest first (by start time, then name; never-started jobs count as
// newest). A nil limit keeps everything.
func historyToDelete(cj *batchv1.CronJob, jobs []*batchv1.Job) []*batchv1.Job {
	var succeeded, failed []*batchv1.Job
	for _, j := range jobs {
		switch done, t := finishedStatus(j); {
		case done && t == batchv1.JobComplete:
			succeeded = append(succeeded, j)
		case done && t == batchv1.JobFailed:
			failed = append(failed, j)
		}
	}
	var out []*batchv1.Job
	for _, g := range []struct {
		jobs  []*batchv1.Job
		limit *int32
	}{{succeeded, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if g.limit == nil || len(g.jobs) <= int(*g.limit) {
			continue
		}
		slices.SortStableFunc(g.jobs, byStartTime)
		out = append(out, g.jobs[:len(g.jobs)-int(*g.limit)]...)
	}
	return out
}

func byStartTime(a, b *batchv1.Job) int {
	sa, sb := a.Status.StartTime, b.Status.StartTime
	switch {
	case sa == nil && sb != nil:
		return 1
	case sa != nil && sb == nil:
		return -1
	case sa != nil && !sa.Equal(sb):
		return sa.Time.Compare(sb.Time)
	}
	switch {
	case a.Name < b.Name:
		return -1
	case a.Name > b.Name:
		return 1
	}
	return 0
}

// finishedStatus reports whether the job has finished, and how (Complete
// or Failed).
func finishedStatus(j *batchv1.Job) (bool, batchv1.JobConditionType) {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true, c.Type
		}
	}
	return false, ""
}

func inActive(cj *batchv1.CronJob, uid types.UID) bool {
	for _, ref := range cj.Status.Active {
		if ref.UID == uid {
			return true
		}
	}
	return false
}

func removeActive(cj *batchv1.CronJob, uid types.UID) {
	cj.Status.Active = slices.DeleteFunc(cj.Status.Active, func(ref corev1.ObjectReference) bool { return ref.UID == uid })
}

func isNotFound(err error) bool      { return apierrors.IsNotFound(err) }
func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

func isNamespaceTerminating(err error) bool {
	return err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}
