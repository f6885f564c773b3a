package cronjob_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/cronjob"
	"github.com/rudder-dev/rudder/internal/controllers/job"
)

// startCronJobs runs the CronJob controller alone, on clk.
func startCronJobs(t *testing.T, cfg *rest.Config, clk *testclock.FakeClock) {
	t.Helper()
	cx := controllertest.NewContext(t, cfg)
	cx.Clock = clk
	controllertest.RunContext(t, cx, cronjob.Descriptor)
}

// newCronJob runs every minute; its jobs' pods run for runFor and exit
// with exitCode.
func newCronJob(name, runFor string, exitCode int, mutate ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.CronJobSpec{
			Schedule: "* * * * *",
			JobTemplate: batchv1.JobTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"cron": name}},
				Spec: batchv1.JobSpec{
					BackoffLimit: ptr.To(int32(0)),
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
							"simnode.rudder.dev/run-duration": runFor,
							"simnode.rudder.dev/exit-code":    fmt.Sprint(exitCode),
						}},
						Spec: corev1.PodSpec{
							RestartPolicy:                 corev1.RestartPolicyNever,
							Containers:                    []corev1.Container{{Name: "c", Image: "registry.example/cron:1"}},
							TerminationGracePeriodSeconds: ptr.To(int64(1)),
						},
					},
				},
			},
		},
	}
	for _, m := range mutate {
		m(cj)
	}
	return cj
}

// One timeline, many CronJobs: each scenario has its own namespace and
// all of them see the same fake clock jump from one minute to the next.
func TestCronJob(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	cs := c.Client
	ctx := context.Background()
	controllertest.StartBinder(t, cs)
	controllertest.RunManager(t, c.Config, job.Descriptor) // jobs run on the real clock
	start := time.Now()
	clk := testclock.NewFakeClock(start)
	startCronJobs(t, c.Config, clk)

	scenarios := map[string]*batchv1.CronJob{
		"allow":     newCronJob("allow", "200ms", 0),
		"forbid":    newCronJob("forbid", "1h", 0, func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent }),
		"replace":   newCronJob("replace", "1h", 0, func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent }),
		"history":   newCronJob("history", "200ms", 0, func(cj *batchv1.CronJob) { cj.Spec.SuccessfulJobsHistoryLimit = ptr.To(int32(1)) }),
		"failures":  newCronJob("failures", "200ms", 1),
		"suspended": newCronJob("suspended", "200ms", 0, func(cj *batchv1.CronJob) { cj.Spec.Suspend = ptr.To(true) }),
		"deadline":  newCronJob("deadline", "200ms", 0, func(cj *batchv1.CronJob) { cj.Spec.StartingDeadlineSeconds = ptr.To(int64(10)) }),
		"missed":    newCronJob("missed", "200ms", 0),
	}
	latest := start
	for ns, cj := range scenarios {
		controllertest.CreateNamespace(t, cs, ns)
		created, err := cs.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		scenarios[ns] = created
		if created.CreationTimestamp.After(latest) {
			latest = created.CreationTimestamp.Time
		}
	}
	m1 := latest.Truncate(time.Minute).Add(time.Minute)
	m2 := m1.Add(time.Minute)
	name := func(cj string, at time.Time) string { return fmt.Sprintf("%s-%d", cj, at.Unix()/60) }

	// Over 100 missed start times: a warning, and only the latest runs.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cj, err := cs.BatchV1().CronJobs("missed").Get(ctx, "missed", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cj.Status.LastScheduleTime = &metav1.Time{Time: start.Add(-200 * time.Minute).Truncate(time.Minute)}
		_, err = cs.BatchV1().CronJobs("missed").UpdateStatus(ctx, cj, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	waitJobs(t, cs, "missed", name("missed", start.Truncate(time.Minute)))
	if msgs := recorded(t, cs, "missed", "TooManyMissedTimes"); len(msgs) != 1 ||
		msgs[0] != "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew" {
		t.Errorf("TooManyMissedTimes events %q", msgs)
	}

	// First minute, 30 s late: everything without a deadline starts.
	clk.SetTime(m1.Add(30 * time.Second))
	t.Run("a job at the scheduled time, recorded in the status", func(t *testing.T) {
		j := waitJobs(t, cs, "allow", name("allow", m1))[0]
		if j.Annotations[batchv1.CronJobScheduledTimestampAnnotation] != m1.UTC().Format(time.RFC3339) || j.Labels["cron"] != "allow" ||
			!metav1.IsControlledBy(j, scenarios["allow"]) || ptr.Deref(j.Spec.BackoffLimit, -1) != 0 {
			t.Errorf("job %s: annotations %v labels %v owners %v", j.Name, j.Annotations, j.Labels, j.OwnerReferences)
		}
		// The job runs to completion; the CronJob notices.
		cj := waitCronJob(t, cs, "allow", func(cj *batchv1.CronJob) bool {
			return len(cj.Status.Active) == 0 && cj.Status.LastSuccessfulTime != nil
		})
		if cj.Status.LastScheduleTime == nil || !cj.Status.LastScheduleTime.Time.Equal(m1) {
			t.Errorf("lastScheduleTime %v, want %v", cj.Status.LastScheduleTime, m1)
		}
		if msgs := recorded(t, cs, "allow", "SuccessfulCreate"); !slices.Equal(msgs, []string{"Created job " + name("allow", m1)}) {
			t.Errorf("SuccessfulCreate events %q", msgs)
		}
		if msgs := recorded(t, cs, "allow", "SawCompletedJob"); !slices.Equal(msgs, []string{"Saw completed job: " + name("allow", m1) + ", status: Complete"}) {
			t.Errorf("SawCompletedJob events %q", msgs)
		}
	})
	for _, ns := range []string{"forbid", "replace"} {
		waitCronJob(t, cs, ns, func(cj *batchv1.CronJob) bool {
			return len(cj.Status.Active) == 1 && cj.Status.Active[0].Name == name(ns, m1)
		})
	}
	waitFinished(t, cs, "history", name("history", m1), batchv1.JobComplete)
	waitFinished(t, cs, "failures", name("failures", m1), batchv1.JobFailed)
	waitJobs(t, cs, "missed", name("missed", start.Truncate(time.Minute)), name("missed", m1))
	t.Run("startingDeadlineSeconds drops a start time that is too old", func(t *testing.T) {
		assertJobs(t, cs, "deadline")
	})

	// Second minute, on time.
	clk.SetTime(m2.Add(5 * time.Second))
	waitJobs(t, cs, "allow", name("allow", m1), name("allow", m2))
	t.Run("Forbid skips while the last job runs", func(t *testing.T) {
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			msgs := events(t, cs, "forbid", "JobAlreadyActive")
			return len(msgs) > 0, fmt.Sprintf("JobAlreadyActive events %q", msgs)
		})
		assertJobs(t, cs, "forbid", name("forbid", m1))
	})
	t.Run("Replace deletes the running job and starts the next", func(t *testing.T) {
		waitJobs(t, cs, "replace", name("replace", m2))
		cj := waitCronJob(t, cs, "replace", func(cj *batchv1.CronJob) bool {
			return len(cj.Status.Active) == 1 && cj.Status.Active[0].Name == name("replace", m2)
		})
		if !cj.Status.LastScheduleTime.Time.Equal(m2) {
			t.Errorf("lastScheduleTime %v", cj.Status.LastScheduleTime)
		}
		if msgs := recorded(t, cs, "replace", "SuccessfulDelete"); !slices.Contains(msgs, "Deleted job "+name("replace", m1)) {
			t.Errorf("SuccessfulDelete events %q", msgs)
		}
	})
	t.Run("history limits delete the oldest finished jobs", func(t *testing.T) {
		waitFinished(t, cs, "history", name("history", m2), batchv1.JobComplete)
		waitJobs(t, cs, "history", name("history", m2))
		waitFinished(t, cs, "failures", name("failures", m2), batchv1.JobFailed)
		waitJobs(t, cs, "failures", name("failures", m2))
	})
	t.Run("a start time within startingDeadlineSeconds runs", func(t *testing.T) {
		waitJobs(t, cs, "deadline", name("deadline", m2))
	})
	t.Run("a suspended CronJob starts nothing", func(t *testing.T) {
		assertJobs(t, cs, "suspended")
	})
}

func jobNames(t *testing.T, cs kubernetes.Interface, ns string) []string {
	t.Helper()
	list, err := cs.BatchV1().Jobs(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, j := range list.Items {
		if j.DeletionTimestamp == nil {
			out = append(out, j.Name)
		}
	}
	slices.Sort(out)
	return out
}

// waitJobs waits until ns holds exactly the named jobs, and returns them.
func waitJobs(t *testing.T, cs kubernetes.Interface, ns string, want ...string) []*batchv1.Job {
	t.Helper()
	slices.Sort(want)
	controllertest.Eventually(t, 15*time.Second, func() (bool, string) {
		got := jobNames(t, cs, ns)
		return slices.Equal(got, want), fmt.Sprintf("jobs in %s: %v, want %v", ns, got, want)
	})
	var out []*batchv1.Job
	for _, n := range want {
		j, err := cs.BatchV1().Jobs(ns).Get(context.Background(), n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, j)
	}
	return out
}

// assertJobs checks that ns holds exactly the named jobs, and still does
// half a second later.
func assertJobs(t *testing.T, cs kubernetes.Interface, ns string, want ...string) {
	t.Helper()
	controllertest.Consistently(t, 500*time.Millisecond, func() (bool, string) {
		got := jobNames(t, cs, ns)
		return slices.Equal(got, want), fmt.Sprintf("jobs in %s: %v, want %v", ns, got, want)
	})
}

func waitFinished(t *testing.T, cs kubernetes.Interface, ns, name string, cond batchv1.JobConditionType) {
	t.Helper()
	controllertest.Eventually(t, 15*time.Second, func() (bool, string) {
		j, err := cs.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range j.Status.Conditions {
			if c.Type == cond && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, fmt.Sprintf("job %s/%s status %+v", ns, name, j.Status)
	})
}

func waitCronJob(t *testing.T, cs kubernetes.Interface, ns string, cond func(*batchv1.CronJob) bool) *batchv1.CronJob {
	t.Helper()
	var cj *batchv1.CronJob
	controllertest.Eventually(t, 15*time.Second, func() (bool, string) {
		var err error
		cj, err = cs.BatchV1().CronJobs(ns).Get(context.Background(), ns, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || err != nil {
			return false, fmt.Sprint(err)
		}
		return cond(cj), fmt.Sprintf("cronjob %s status %+v", ns, cj.Status)
	})
	return cj
}

// events returns the messages of ns's events with reason, oldest first.
// recorded is events once at least one with reason exists (up to 10 s):
// the controller records events asynchronously, after the writes a test
// waits for.
func recorded(t *testing.T, cs kubernetes.Interface, ns, reason string) []string {
	t.Helper()
	var msgs []string
	deadline := time.Now().Add(10 * time.Second)
	for {
		if msgs = events(t, cs, ns, reason); len(msgs) > 0 || time.Now().After(deadline) {
			return msgs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func events(t *testing.T, cs kubernetes.Interface, ns, reason string) []string {
	t.Helper()
	list, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.Reason == reason && e.Source.Component == "cronjob-controller" && strings.EqualFold(e.InvolvedObject.Kind, "CronJob") {
			out = append(out, e.Message)
		}
	}
	return out
}
