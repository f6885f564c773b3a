package cronjob

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// testCronJob is created at created (RFC 3339) with schedule.
func testCronJob(t *testing.T, schedule, created string, mutate ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: "cj", Namespace: "ns", UID: "cj-uid", CreationTimestamp: metav1.NewTime(mustTime(t, created))},
		Spec: batchv1.CronJobSpec{
			Schedule:          schedule,
			ConcurrencyPolicy: batchv1.AllowConcurrent,
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "report"}, Annotations: map[string]string{"team": "a"}},
				Spec:       batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever}}},
			},
		},
	}
	for _, m := range mutate {
		m(cj)
	}
	return cj
}

func lastScheduled(t *testing.T, s string) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) { cj.Status.LastScheduleTime = &metav1.Time{Time: mustTime(t, s)} }
}

func TestMostRecentScheduleTime(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cj         *batchv1.CronJob
		now        string
		deadline   bool
		wantRecent string // "" for none
		wantMissed missedSchedules
		wantWake   string
	}{
		{name: "nothing due yet", cj: testCronJob(t, "*/5 * * * *", "2026-03-01T10:00:30Z"), now: "2026-03-01T10:02:00Z",
			wantWake: "2026-03-01T10:05:00.1Z"},
		{name: "one start due", cj: testCronJob(t, "*/5 * * * *", "2026-03-01T10:00:30Z"), now: "2026-03-01T10:07:00Z",
			wantRecent: "2026-03-01T10:05:00Z", wantWake: "2026-03-01T10:10:00.1Z"},
		{name: "several missed: only the latest", cj: testCronJob(t, "*/5 * * * *", "2026-03-01T09:00:00Z", lastScheduled(t, "2026-03-01T10:05:00Z")),
			now: "2026-03-01T10:31:00Z", wantRecent: "2026-03-01T10:30:00Z", wantMissed: fewMissed, wantWake: "2026-03-01T10:35:00.1Z"},
		{name: "over 100 missed", cj: testCronJob(t, "* * * * *", "2026-03-01T00:00:00Z", lastScheduled(t, "2026-03-01T07:00:00Z")),
			now: "2026-03-01T10:00:30Z", wantRecent: "2026-03-01T10:00:00Z", wantMissed: manyMissed, wantWake: "2026-03-01T10:01:00.1Z"},
		{name: "startingDeadlineSeconds hides older times", deadline: true,
			cj:  testCronJob(t, "*/5 * * * *", "2026-03-01T09:00:00Z", lastScheduled(t, "2026-03-01T09:00:00Z"), func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To(int64(60)) }),
			now: "2026-03-01T10:07:00Z", wantWake: "2026-03-01T10:10:00.1Z"},
		{name: "within startingDeadlineSeconds", deadline: true,
			cj:  testCronJob(t, "*/5 * * * *", "2026-03-01T09:00:00Z", lastScheduled(t, "2026-03-01T09:00:00Z"), func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To(int64(200)) }),
			now: "2026-03-01T10:07:00Z", wantRecent: "2026-03-01T10:05:00Z", wantWake: "2026-03-01T10:10:00.1Z"},
		{name: "irregular schedule", cj: testCronJob(t, "30 6-16/4 * * 1-5", "2026-03-02T00:00:00Z"), now: "2026-03-04T15:00:00Z",
			wantRecent: "2026-03-04T14:30:00Z", wantMissed: fewMissed, wantWake: "2026-03-05T06:30:00.1Z"},
		{name: "in the CronJob's time zone", cj: testCronJob(t, "0 9 * * *", "2026-03-01T01:00:00Z", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Asia/Tokyo") }),
			now: "2026-03-02T00:00:30Z", wantRecent: "2026-03-02T00:00:00Z", wantWake: "2026-03-03T00:00:00.1Z"},
		{name: "@every", cj: testCronJob(t, "@every 90s", "2026-03-01T10:00:00Z"), now: "2026-03-01T10:02:00Z",
			wantRecent: "2026-03-01T10:01:30Z", wantWake: "2026-03-01T10:03:00.1Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sched, err := parseSchedule(tc.cj)
			if err != nil {
				t.Fatal(err)
			}
			now := mustTime(t, tc.now)
			_, recent, missed, err := mostRecentScheduleTime(tc.cj, now, sched, tc.deadline)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if recent != nil {
				got = recent.UTC().Format(time.RFC3339)
			}
			if got != tc.wantRecent || missed != tc.wantMissed {
				t.Errorf("recent %q missed %d, want %q %d", got, missed, tc.wantRecent, tc.wantMissed)
			}
			if tc.wantRecent != "" {
				tc.cj.Status.LastScheduleTime = &metav1.Time{Time: *recent} // as after the run
			}
			if wake := nextWakeup(tc.cj, now, sched); !wake.Equal(mustTime(t, tc.wantWake)) {
				t.Errorf("wake at %s, want %s", wake.UTC().Format(time.RFC3339Nano), tc.wantWake)
			}
		})
	}
}

func TestScheduleAcrossDaylightSaving(t *testing.T) {
	ny := func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("America/New_York") }
	// Walks the start times after from.
	starts := func(cj *batchv1.CronJob, from time.Time, n int) []string {
		sched, err := parseSchedule(cj)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for t := sched.Next(from); len(out) < n; t = sched.Next(t) {
			out = append(out, t.UTC().Format(time.RFC3339))
		}
		return out
	}
	t.Run("spring forward skips the missing hour", func(t *testing.T) {
		// 2026-03-08 02:30 does not exist in New York.
		got := starts(testCronJob(t, "30 2 * * *", "2026-03-01T00:00:00Z", ny), mustTime(t, "2026-03-07T12:00:00Z"), 2)
		want := []string{"2026-03-09T06:30:00Z", "2026-03-10T06:30:00Z"}
		if !slices.Equal(got, want) {
			t.Errorf("starts %v, want %v", got, want)
		}
	})
	t.Run("fall back runs the repeated hour twice", func(t *testing.T) {
		// 2026-11-01 01:30 happens at 05:30 UTC (EDT) and 06:30 UTC (EST).
		got := starts(testCronJob(t, "30 1 * * *", "2026-10-01T00:00:00Z", ny), mustTime(t, "2026-10-31T12:00:00Z"), 3)
		want := []string{"2026-11-01T05:30:00Z", "2026-11-01T06:30:00Z", "2026-11-02T06:30:00Z"}
		if !slices.Equal(got, want) {
			t.Errorf("starts %v, want %v", got, want)
		}
	})
	t.Run("a daily job keeps its local hour across the change", func(t *testing.T) {
		got := starts(testCronJob(t, "0 9 * * *", "2026-03-01T00:00:00Z", ny), mustTime(t, "2026-03-07T00:00:00Z"), 2)
		want := []string{"2026-03-07T14:00:00Z", "2026-03-08T13:00:00Z"}
		if !slices.Equal(got, want) {
			t.Errorf("starts %v, want %v", got, want)
		}
	})
}

func TestJobFromTemplate(t *testing.T) {
	cj := testCronJob(t, "0 9 * * *", "2026-03-01T00:00:00Z", func(cj *batchv1.CronJob) { cj.Spec.TimeZone = ptr.To("Asia/Tokyo") })
	at := mustTime(t, "2026-03-02T00:00:00Z")
	job, err := jobFromTemplate(cj, at)
	if err != nil {
		t.Fatal(err)
	}
	if want := "cj-29540160"; job.Name != want { // 2026-03-02T00:00Z in minutes since the epoch
		t.Errorf("name %q, want %q", job.Name, want)
	}
	if got := job.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-03-02T09:00:00+09:00" {
		t.Errorf("scheduled-timestamp %q, want the time in Tokyo", got)
	}
	if job.Labels["app"] != "report" || job.Annotations["team"] != "a" || !metav1.IsControlledBy(job, cj) ||
		job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("job %+v not made from the template", job.ObjectMeta)
	}
	job.Labels["x"] = "y"
	if _, ok := cj.Spec.JobTemplate.Labels["x"]; ok {
		t.Error("the job shares the template's labels map")
	}
	utc, _ := jobFromTemplate(testCronJob(t, "* * * * *", "2026-03-01T00:00:00Z"), at)
	if got := utc.Annotations[batchv1.CronJobScheduledTimestampAnnotation]; got != "2026-03-02T00:00:00Z" {
		t.Errorf("scheduled-timestamp without a time zone %q, want UTC", got)
	}
}

func TestWakeups(t *testing.T) {
	start := mustTime(t, "2026-03-01T10:00:00Z")
	clk := testclock.NewFakeClock(start)
	var mu sync.Mutex
	var fired []string
	ch := make(chan struct{}, 10)
	w := newWakeups(clk, func(k string) {
		mu.Lock()
		fired = append(fired, k)
		mu.Unlock()
		ch <- struct{}{}
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- w.Run(ctx) }()
	defer func() { cancel(); <-done }()

	w.set("b", start.Add(2*time.Minute))
	w.set("a", start.Add(time.Minute))
	w.set("c", start.Add(time.Minute))
	w.set("c", start.Add(3*time.Minute)) // moved later: fires once, later
	w.set("gone", start.Add(time.Minute))
	w.forget("gone")
	step := func(d time.Duration, want ...string) {
		t.Helper()
		// Wait until Run is parked on its timer, then move the clock.
		deadline := time.Now().Add(5 * time.Second)
		for !clk.HasWaiters() && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		clk.Step(d)
		for range want {
			select {
			case <-ch:
			case <-time.After(5 * time.Second):
				t.Fatalf("after %v: fired %v, want %v", d, fired, want)
			}
		}
		select {
		case <-ch:
			t.Fatalf("more fired than %v: %v", want, fired)
		case <-time.After(50 * time.Millisecond):
		}
		mu.Lock()
		got := fired
		fired = nil
		mu.Unlock()
		if !slices.Equal(got, want) {
			t.Fatalf("fired %v, want %v", got, want)
		}
	}
	step(time.Minute, "a")
	step(time.Minute, "b")
	step(time.Minute, "c")
}
