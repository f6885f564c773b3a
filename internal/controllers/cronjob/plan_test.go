package cronjob

import (
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func TestDecideRun(t *testing.T) {
	running := func(name string) func(*batchv1.CronJob) {
		return func(cj *batchv1.CronJob) {
			cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", Namespace: "ns", Name: name, UID: types.UID(name)})
		}
	}
	policy := func(p batchv1.ConcurrencyPolicy) func(*batchv1.CronJob) {
		return func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = p }
	}
	// Every minute since 10:00; the 10:05 run is due at 10:05:30.
	const created, now = "2026-03-01T10:00:00Z", "2026-03-01T10:05:30Z"
	last := lastScheduled(t, "2026-03-01T10:04:00Z")
	for _, tc := range []struct {
		name        string
		cj          *batchv1.CronJob
		now         string
		wantSkip    skipReason
		wantReplace bool
		wantMany    bool
	}{
		{name: "due: start", cj: testCronJob(t, "* * * * *", created, last), now: now},
		{name: "not due yet", cj: testCronJob(t, "* * * * *", created, lastScheduled(t, "2026-03-01T10:05:00Z")), now: now, wantSkip: skipNothingDue},
		{name: "Allow runs beside an active job", cj: testCronJob(t, "* * * * *", created, last, running("cj-old")), now: now},
		{name: "Forbid skips while a job runs", cj: testCronJob(t, "* * * * *", created, last, running("cj-old"), policy(batchv1.ForbidConcurrent)),
			now: now, wantSkip: skipForbidden},
		{name: "Forbid starts when none runs", cj: testCronJob(t, "* * * * *", created, last, policy(batchv1.ForbidConcurrent)), now: now},
		{name: "Replace replaces the active job", cj: testCronJob(t, "* * * * *", created, last, running("cj-old"), policy(batchv1.ReplaceConcurrent)),
			now: now, wantReplace: true},
		{name: "the job for this time is already active", cj: testCronJob(t, "* * * * *", created, last,
			running(fmt.Sprintf("cj-%d", mustTime(t, "2026-03-01T10:05:00Z").Unix()/60))), now: now, wantSkip: skipAlreadyStarted},
		{name: "late beyond startingDeadlineSeconds: nothing to start", now: "2026-03-01T10:05:40Z",
			cj: testCronJob(t, "* * * * *", created, last, func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To(int64(30)) }), wantSkip: skipNothingDue},
		{name: "late within startingDeadlineSeconds", now: "2026-03-01T10:05:20Z",
			cj: testCronJob(t, "* * * * *", created, last, func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To(int64(30)) })},
		{name: "over 100 missed: warn and run the latest", cj: testCronJob(t, "* * * * *", "2026-03-01T00:00:00Z", lastScheduled(t, "2026-03-01T08:00:00Z")),
			now: now, wantMany: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sched, err := parseSchedule(tc.cj)
			if err != nil {
				t.Fatal(err)
			}
			n := mustTime(t, tc.now)
			d := decideRun(tc.cj, n, sched)
			if d.err != nil {
				t.Fatal(d.err)
			}
			if d.skip != tc.wantSkip || d.replace != tc.wantReplace || d.manyMissed != tc.wantMany {
				t.Errorf("skip %d replace %v many %v; want %d %v %v", d.skip, d.replace, d.manyMissed, tc.wantSkip, tc.wantReplace, tc.wantMany)
			}
			if tc.wantSkip == skipNone && (d.scheduled == nil || !d.scheduled.Equal(mustTime(t, "2026-03-01T10:05:00Z"))) {
				t.Errorf("scheduled %v, want 10:05", d.scheduled)
			}
			if d.wakeAt.IsZero() || !d.wakeAt.After(n) {
				t.Errorf("wake at %v, want after %v", d.wakeAt, n)
			}
		})
	}
	t.Run("an impossible date is an error", func(t *testing.T) {
		cj := testCronJob(t, "0 0 31 2 *", created)
		sched, err := parseSchedule(cj)
		if err != nil {
			t.Fatal(err)
		}
		if d := decideRun(cj, mustTime(t, now), sched); d.err != nil || d.skip != skipNothingDue || !d.wakeAt.IsZero() {
			t.Errorf("decision %+v, want nothing due and no wake-up", d)
		}
	})
}

func TestHistoryToDelete(t *testing.T) {
	var seq int
	job := func(cond batchv1.JobConditionType, started int) *batchv1.Job {
		seq++
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("j%02d", seq)}}
		if started >= 0 {
			j.Status.StartTime = ptr.To(metav1.NewTime(mustTime(t, "2026-03-01T10:00:00Z").Add(time.Duration(started) * time.Minute)))
		}
		if cond != "" {
			j.Status.Conditions = []batchv1.JobCondition{{Type: cond, Status: corev1.ConditionTrue}}
		}
		return j
	}
	jobs := []*batchv1.Job{
		job(batchv1.JobComplete, 5),  // j01
		job(batchv1.JobComplete, 1),  // j02 oldest success
		job(batchv1.JobFailed, 3),    // j03
		job("", 0),                   // j04 running: never deleted
		job(batchv1.JobComplete, 9),  // j05
		job(batchv1.JobFailed, 2),    // j06 oldest failure
		job(batchv1.JobComplete, -1), // j07 never started: newest
		job(batchv1.JobFailed, 7),    // j08
	}
	names := func(js []*batchv1.Job) []string {
		var out []string
		for _, j := range js {
			out = append(out, j.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name             string
		success, failure *int32
		want             []string
	}{
		{name: "defaults 3 and 1", success: ptr.To(int32(3)), failure: ptr.To(int32(1)), want: []string{"j02", "j06", "j03"}},
		{name: "keep nothing", success: ptr.To(int32(0)), failure: ptr.To(int32(0)), want: []string{"j02", "j01", "j05", "j07", "j06", "j03", "j08"}},
		{name: "no limits keep everything", want: nil},
		{name: "under the limits", success: ptr.To(int32(10)), failure: ptr.To(int32(3)), want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cj := testCronJob(t, "* * * * *", "2026-03-01T00:00:00Z", func(cj *batchv1.CronJob) {
				cj.Spec.SuccessfulJobsHistoryLimit, cj.Spec.FailedJobsHistoryLimit = tc.success, tc.failure
			})
			if got := names(historyToDelete(cj, slices.Clone(jobs))); !slices.Equal(got, tc.want) {
				t.Errorf("delete %v, want %v", got, tc.want)
			}
		})
	}
}
