package cronjob

import (
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"
	// spec.timeZone must resolve the same on every host, including
	// minimal images without /usr/share/zoneinfo.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/cronschedule"
)

// The pure half: schedule arithmetic and the jobs a CronJob makes. The
// schedule is parsed by internal/cronschedule, as the API server's
// validation parses it, so what validation accepts is exactly what runs.

var cronJobKind = batchv1.SchemeGroupVersion.WithKind("CronJob")

// tooManyMissed is how many missed start times make the controller warn
// (TooManyMissedTimes): more than 80 hourly runs over a long weekend, less
// than "lots".
const tooManyMissed = 100

// nextScheduleDelta pads every wake-up, so a clock a little behind the
// schedule's does not wake the controller just before the minute.
const nextScheduleDelta = 100 * time.Millisecond

// scheduleSpec is the schedule as parsed: spec.timeZone becomes a TZ=
// prefix. A schedule that carries its own TZ= or CRON_TZ= is used as
// written (unsupported, and warned about, as upstream does).
func scheduleSpec(cj *batchv1.CronJob) (spec string, ownTZ bool) {
	if strings.Contains(cj.Spec.Schedule, "TZ") {
		return cj.Spec.Schedule, true
	}
	if tz := cj.Spec.TimeZone; tz != nil {
		if _, err := time.LoadLocation(*tz); err == nil {
			return fmt.Sprintf("TZ=%s %s", *tz, cj.Spec.Schedule), false
		}
	}
	return cj.Spec.Schedule, false
}

func parseSchedule(cj *batchv1.CronJob) (cron.Schedule, error) {
	spec, _ := scheduleSpec(cj)
	return cronschedule.Parse(spec)
}

type missedSchedules int

const (
	noneMissed missedSchedules = iota
	fewMissed
	manyMissed
)

var errNoGap = errors.New("time difference between two schedules is less than 1 second")

// mostRecentScheduleTime returns the time from which start times are
// looked for (the last scheduled time, else the CronJob's creation; with
// includeDeadline, no earlier than startingDeadlineSeconds ago), the most
// recent start time in (earliest, now] or nil, and how many were missed.
//
// Missed times are counted by arithmetic on the schedule's period, not by
// walking them: a CronJob whose controller was down for a year costs one
// step, not half a million.
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule, includeDeadline bool) (time.Time, *time.Time, missedSchedules, error) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if includeDeadline && cj.Spec.StartingDeadlineSeconds != nil {
		if d := now.Add(-time.Duration(*cj.Spec.StartingDeadlineSeconds) * time.Second); d.After(earliest) {
			earliest = d
		}
	}
	t1 := sched.Next(earliest)
	if t1.IsZero() || now.Before(t1) {
		return earliest, nil, noneMissed, nil
	}
	t2 := sched.Next(t1)
	if t2.IsZero() || now.Before(t2) {
		return earliest, &t1, noneMissed, nil
	}
	// A schedule that cannot be met (Feb 31) gives no period at all.
	period := int64(t2.Sub(t1).Round(time.Second).Seconds())
	if period < 1 {
		return earliest, nil, noneMissed, errNoGap
	}
	missed := int64(now.Sub(t1).Seconds())/period + 1
	// Jump close to now by whole periods, then let the schedule find the
	// exact last time: irregular schedules ("30 6-16/4 * * 1-5") have no
	// single period, so start one period early.
	var latest time.Time
	from := t1.Add(time.Duration((missed-2)*period) * time.Second)
	for t := sched.Next(from); !t.IsZero() && !t.After(now); t = sched.Next(t) {
		latest = t
	}
	kind := fewMissed
	if missed > tooManyMissed {
		kind = manyMissed
	}
	if latest.IsZero() {
		return earliest, nil, kind, nil
	}
	return earliest, &latest, kind, nil
}

// nextWakeup is when the controller should look at cj again: just after
// the first start time after the most recent one (startingDeadlineSeconds
// ignored, so a CronJob late by more than its deadline wakes for its next
// time). Zero when the schedule never fires again.
func nextWakeup(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) time.Time {
	earliest, recent, missed, err := mostRecentScheduleTime(cj, now, sched, false)
	from := now
	switch {
	case err != nil:
	case recent != nil:
		from = *recent
	case missed == noneMissed:
		from = earliest
	}
	next := sched.Next(from)
	if next.IsZero() {
		return time.Time{}
	}
	return next.Add(nextScheduleDelta)
}

// jobName is "<cronjob>-<scheduled time in minutes since the epoch>": the
// same for every attempt at one scheduled time, so the name itself stops
// a restarted controller from starting the run twice.
func jobName(cj *batchv1.CronJob, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj.Name, scheduled.Unix()/60)
}

// jobFromTemplate is the Job to create for the run scheduled at t: the
// template's labels, annotations and spec, the scheduled time (in the
// CronJob's time zone) in batch.kubernetes.io/cronjob-scheduled-timestamp,
// and the CronJob as controller.
func jobFromTemplate(cj *batchv1.CronJob, scheduled time.Time) (*batchv1.Job, error) {
	tz := ""
	if cj.Spec.TimeZone != nil {
		tz = *cj.Spec.TimeZone
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil, err
	}
	labels := maps.Clone(cj.Spec.JobTemplate.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	annotations := maps.Clone(cj.Spec.JobTemplate.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[batchv1.CronJobScheduledTimestampAnnotation] = scheduled.In(loc).Format(time.RFC3339)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:            jobName(cj, scheduled),
			Namespace:       cj.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, cronJobKind)},
		},
	}
	cj.Spec.JobTemplate.Spec.DeepCopyInto(&job.Spec)
	return job, nil
}
