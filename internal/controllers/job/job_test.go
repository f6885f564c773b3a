package job_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/job"
)

// One cluster and one controller for every case; each works in its own
// namespace and all run at once (simulated pods spend most of their time
// waiting on timers, so -parallel's default of GOMAXPROCS would only
// serialise the waiting).
func TestJob(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	cs := c.Client
	controllertest.StartBinder(t, cs)
	// A short pod-failure back-off keeps the failure cases quick; the
	// delays themselves are covered by the unit tests.
	controllertest.RunManager(t, c.Config, job.NewDescriptor(job.Config{PodFailureBackoff: 200 * time.Millisecond}))
	ctx := context.Background()
	var wg sync.WaitGroup
	defer wg.Wait()
	run := func(name string, f func(t *testing.T)) { wg.Go(func() { t.Run(name, f) }) }

	run("completions 5 parallelism 2 never runs more than 2", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "five-by-two")
		w := controllertest.WatchPods(t, cs, ns, nil)
		j, err := cs.BatchV1().Jobs(ns).Create(ctx, newJob("work", 5, 2, "200ms", 0), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, cs, ns, "work", 30*time.Second, hasCondition(batchv1.JobComplete, batchv1.JobReasonCompletionsReached))
		if m := w.MaxActive(); m != 2 {
			t.Errorf("at most %d pods were active at once, want 2", m)
		}
		st := j.Status
		if st.Succeeded != 5 || st.Failed != 0 || st.Active != 0 || ptr.Deref(st.Ready, -1) != 0 || ptr.Deref(st.Terminating, -1) != 0 ||
			st.StartTime == nil || st.CompletionTime == nil || st.CompletionTime.Before(st.StartTime) {
			t.Errorf("status %+v, want 5 succeeded, nothing active, start and completion times", st)
		}
		if u := st.UncountedTerminatedPods; u != nil && len(u.Succeeded)+len(u.Failed) > 0 {
			t.Errorf("uncounted pods left: %+v", u)
		}
		if got := conditionTypes(j); !slices.Equal(got, []string{"SuccessCriteriaMet", "Complete"}) {
			t.Errorf("conditions %v, want SuccessCriteriaMet then Complete", got)
		}
		pods := jobPods(t, cs, ns, j.UID)
		if len(pods) != 5 {
			t.Errorf("%d pods, want exactly 5", len(pods))
		}
		for _, p := range pods {
			ref := metav1.GetControllerOf(&p)
			if !strings.HasPrefix(p.Name, "work-") || ref.Kind != "Job" || !ptr.Deref(ref.BlockOwnerDeletion, false) ||
				p.Labels[batchv1.JobNameLabel] != "work" || p.Labels["job-name"] != "work" ||
				p.Labels[batchv1.ControllerUidLabel] != string(j.UID) || p.Labels["controller-uid"] != string(j.UID) {
				t.Errorf("pod %s not made for the job: ref %+v labels %v", p.Name, ref, p.Labels)
			}
			if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				t.Errorf("pod %s kept the tracking finalizer after being counted", p.Name)
			}
			if p.Status.Phase != corev1.PodSucceeded {
				t.Errorf("pod %s is %s", p.Name, p.Status.Phase)
			}
		}
		created := regexp.MustCompile(`^Created pod: work-[a-z0-9]{5}$`)
		msgs := eventMessages(t, cs, ns, "work", "SuccessfulCreate")
		if len(msgs) == 0 || !created.MatchString(msgs[0]) {
			t.Errorf("SuccessfulCreate events %q, want \"Created pod: work-xxxxx\"", msgs)
		}
		if msgs := eventMessages(t, cs, ns, "work", "Completed"); !slices.Equal(msgs, []string{"Job completed"}) {
			t.Errorf("Completed events %q, want [Job completed]", msgs)
		}
	})

	run("indexed job runs every index once", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "indexed")
		spec := newJob("idx", 5, 3, "200ms", 0)
		spec.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		spec.Spec.Template.Spec.Subdomain = "workers"
		j, err := cs.BatchV1().Jobs(ns).Create(ctx, spec, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, cs, ns, "idx", 30*time.Second, hasCondition(batchv1.JobComplete, ""))
		if j.Status.CompletedIndexes != "0-4" || j.Status.Succeeded != 5 {
			t.Errorf("completedIndexes %q succeeded %d, want \"0-4\" and 5", j.Status.CompletedIndexes, j.Status.Succeeded)
		}
		seen := map[string]bool{}
		for _, p := range jobPods(t, cs, ns, j.UID) {
			ix := p.Annotations[batchv1.JobCompletionIndexAnnotation]
			seen[ix] = true
			if p.Labels[batchv1.JobCompletionIndexAnnotation] != ix || !strings.HasPrefix(p.Name, "idx-"+ix+"-") ||
				p.Spec.Hostname != "idx-"+ix || p.Spec.Subdomain != "workers" {
				t.Errorf("pod %s: index annotation %q label %q hostname %q subdomain %q", p.Name, ix,
					p.Labels[batchv1.JobCompletionIndexAnnotation], p.Spec.Hostname, p.Spec.Subdomain)
			}
			env := p.Spec.Containers[0].Env
			if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom == nil || env[0].ValueFrom.FieldRef == nil ||
				env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
				t.Errorf("pod %s env %+v, want JOB_COMPLETION_INDEX from the index label", p.Name, env)
			}
		}
		if len(seen) != 5 {
			t.Errorf("indexes %v, want 0..4", seen)
		}
	})

	run("failing pods exhaust backoffLimit", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "backoff")
		spec := newJob("flaky", 1, 1, "100ms", 1)
		spec.Spec.BackoffLimit = ptr.To(int32(1))
		j, err := cs.BatchV1().Jobs(ns).Create(ctx, spec, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, cs, ns, "flaky", 30*time.Second, hasCondition(batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded))
		if j.Status.Failed != 2 || j.Status.Succeeded != 0 || j.Status.Active != 0 || j.Status.CompletionTime != nil {
			t.Errorf("status %+v, want 2 failed (the first retried once), no completion time", j.Status)
		}
		if got := conditionTypes(j); !slices.Equal(got, []string{"FailureTarget", "Failed"}) {
			t.Errorf("conditions %v, want FailureTarget then Failed", got)
		}
		for _, c := range j.Status.Conditions {
			if c.Message != "Job has reached the specified backoff limit" {
				t.Errorf("condition %s message %q", c.Type, c.Message)
			}
		}
		pods := jobPods(t, cs, ns, j.UID)
		if len(pods) != 2 {
			t.Errorf("%d pods, want 2 (one retry)", len(pods))
		}
		for _, p := range pods {
			if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
				t.Errorf("pod %s kept the tracking finalizer", p.Name)
			}
		}
		if msgs := eventMessages(t, cs, ns, "flaky", batchv1.JobReasonBackoffLimitExceeded); len(msgs) != 1 {
			t.Errorf("BackoffLimitExceeded events %q, want one", msgs)
		}
	})

	run("pod failure policy FailJob on an exit code", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "failjob")
		spec := newJob("strict", 3, 1, "100ms", 42)
		spec.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:      batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
		}}}
		j, err := cs.BatchV1().Jobs(ns).Create(ctx, spec, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, cs, ns, "strict", 30*time.Second, hasCondition(batchv1.JobFailed, batchv1.JobReasonPodFailurePolicy))
		msg := regexp.MustCompile(`^Container work for pod failjob/strict-[a-z0-9]{5} failed with exit code 42 matching FailJob rule at index 0$`)
		for _, c := range j.Status.Conditions {
			if c.Type == batchv1.JobFailed && !msg.MatchString(c.Message) {
				t.Errorf("Failed message %q", c.Message)
			}
		}
		if n := len(jobPods(t, cs, ns, j.UID)); n != 1 || j.Status.Failed != 1 {
			t.Errorf("%d pods, %d failed: want the first failure to end the job", n, j.Status.Failed)
		}
	})

	run("activeDeadlineSeconds stops a job that runs too long", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "deadline")
		spec := newJob("slow", 2, 2, "1h", 0)
		spec.Spec.ActiveDeadlineSeconds = ptr.To(int64(3))
		j, err := cs.BatchV1().Jobs(ns).Create(ctx, spec, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitJob(t, cs, ns, "slow", 10*time.Second, func(j *batchv1.Job) bool { return j.Status.Active == 2 })
		j = waitJob(t, cs, ns, "slow", 15*time.Second, hasCondition(batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded))
		if j.Status.Active != 0 || j.Status.Failed != 2 || ptr.Deref(j.Status.Terminating, -1) != 0 {
			t.Errorf("status %+v, want the 2 running pods stopped and counted failed", j.Status)
		}
		if d := j.Status.Conditions[len(j.Status.Conditions)-1].LastTransitionTime.Sub(j.Status.StartTime.Time); d < 3*time.Second {
			t.Errorf("failed %v after start, before the 3 s deadline", d)
		}
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			pods := jobPods(t, cs, ns, j.UID)
			return len(pods) == 0, fmt.Sprintf("%d pods left", len(pods))
		})
	})

	run("a job created suspended starts when resumed", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "created-suspended")
		spec := newJob("paused", 2, 2, "200ms", 0)
		spec.Spec.Suspend = ptr.To(true)
		j, err := cs.BatchV1().Jobs(ns).Create(ctx, spec, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, cs, ns, "paused", 10*time.Second, hasCondition(batchv1.JobSuspended, "JobSuspended"))
		if j.Status.StartTime != nil || j.Status.Active != 0 || len(jobPods(t, cs, ns, j.UID)) != 0 {
			t.Fatalf("a job created suspended started: status %+v", j.Status)
		}
		setSuspend(t, cs, ns, "paused", false)
		j = waitJob(t, cs, ns, "paused", 20*time.Second, hasCondition(batchv1.JobComplete, ""))
		if j.Status.Succeeded != 2 || j.Status.StartTime == nil {
			t.Errorf("status %+v, want 2 succeeded and a start time", j.Status)
		}
		assertResumed(t, j)
		if msgs := eventMessages(t, cs, ns, "paused", "Suspended"); !slices.Equal(msgs, []string{"Job suspended"}) {
			t.Errorf("Suspended events %q", msgs)
		}
		if msgs := eventMessages(t, cs, ns, "paused", "Resumed"); !slices.Equal(msgs, []string{"Job resumed"}) {
			t.Errorf("Resumed events %q", msgs)
		}
	})

	run("suspending a running job deletes its pods uncounted, resuming restarts them", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "suspend-running")
		j, err := cs.BatchV1().Jobs(ns).Create(ctx, newJob("paused", 2, 2, "3s", 0), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitJob(t, cs, ns, "paused", 10*time.Second, func(j *batchv1.Job) bool { return ptr.Deref(j.Status.Ready, 0) == 2 })
		setSuspend(t, cs, ns, "paused", true)
		j = waitJob(t, cs, ns, "paused", 10*time.Second, func(j *batchv1.Job) bool {
			return hasCondition(batchv1.JobSuspended, "JobSuspended")(j) && j.Status.Active == 0 && ptr.Deref(j.Status.Terminating, -1) == 0
		})
		if j.Status.Failed != 0 {
			t.Errorf("suspending counted %d failures", j.Status.Failed)
		}
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			pods := jobPods(t, cs, ns, j.UID)
			return len(pods) == 0, fmt.Sprintf("%d pods left", len(pods))
		})
		firstStart := j.Status.StartTime
		time.Sleep(time.Second) // a resumed job's start time must move on
		setSuspend(t, cs, ns, "paused", false)
		j = waitJob(t, cs, ns, "paused", 20*time.Second, hasCondition(batchv1.JobComplete, ""))
		if j.Status.Succeeded != 2 || j.Status.Failed != 0 {
			t.Errorf("status %+v, want 2 succeeded 0 failed", j.Status)
		}
		if firstStart == nil || !j.Status.StartTime.After(firstStart.Time) {
			t.Errorf("start time %v after resuming, first start %v: want it reset", j.Status.StartTime, firstStart)
		}
		assertResumed(t, j)
	})

	run("backoffLimitPerIndex fails indexes one by one", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "per-index")
		spec := newJob("shards", 2, 2, "100ms", 1)
		spec.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		spec.Spec.BackoffLimitPerIndex = ptr.To(int32(1))
		j, err := cs.BatchV1().Jobs(ns).Create(ctx, spec, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j = waitJob(t, cs, ns, "shards", 30*time.Second, hasCondition(batchv1.JobFailed, batchv1.JobReasonFailedIndexes))
		if ptr.Deref(j.Status.FailedIndexes, "") != "0,1" || j.Status.Failed != 4 || j.Status.CompletedIndexes != "" {
			t.Errorf("status %+v, want failedIndexes 0,1 after 4 failures", j.Status)
		}
		retries := 0
		for _, p := range jobPods(t, cs, ns, j.UID) {
			if p.Annotations[batchv1.JobIndexFailureCountAnnotation] == "1" {
				retries++
			}
		}
		if retries != 2 {
			t.Errorf("%d pods carry job-index-failure-count 1, want one retry per index", retries)
		}
	})

	run("deleting a job frees its pods' finalizers", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "deleted")
		if _, err := cs.BatchV1().Jobs(ns).Create(ctx, newJob("gone", 2, 2, "1h", 0), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitJob(t, cs, ns, "gone", 10*time.Second, func(j *batchv1.Job) bool { return j.Status.Active == 2 })
		// Background deletion removes the job at once; no garbage
		// collector runs here, so its pods stay, and with the tracking
		// finalizer they could never go. The job controller's orphan
		// queue lets go of them.
		if err := cs.BatchV1().Jobs(ns).Delete(ctx, "gone", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
			t.Fatal(err)
		}
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			held := 0
			for _, p := range list.Items {
				if slices.Contains(p.Finalizers, batchv1.JobTrackingFinalizer) {
					held++
				}
			}
			return len(list.Items) == 2 && held == 0, fmt.Sprintf("%d pods, %d with the tracking finalizer", len(list.Items), held)
		})
	})

	run("kubectl create job and wait for completion", func(t *testing.T) {
		controllertest.CreateNamespace(t, cs, "kubectl")
		controllertest.KubectlOutput(t, c.Server.Kubeconfig, "-n", "kubectl", "create", "job", "j", "--image=registry.example/x:1")
		r := controllertest.Kubectl(t, c.Server.Kubeconfig, "-n", "kubectl", "wait", "--for=condition=complete", "job/j", "--timeout=30s")
		if r.Code != 0 || !strings.Contains(r.Stdout, "job.batch/j condition met") {
			t.Fatalf("kubectl wait: %d %q %q", r.Code, r.Stdout, r.Stderr)
		}
	})
}

// assertResumed checks the Suspended condition reads False, JobResumed.
func assertResumed(t *testing.T, j *batchv1.Job) {
	t.Helper()
	for _, c := range j.Status.Conditions {
		if c.Type == batchv1.JobSuspended && (c.Status != corev1.ConditionFalse || c.Reason != "JobResumed" || c.Message != "Job resumed") {
			t.Errorf("Suspended condition %+v, want False JobResumed", c)
		}
	}
}

// setSuspend patches spec.suspend.
func setSuspend(t *testing.T, cs kubernetes.Interface, ns, name string, v bool) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"suspend":%t}}`, v)
	if _, err := cs.BatchV1().Jobs(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
