package cronjob

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Workers is upstream's --concurrent-cron-job-syncs default.
const Workers = 5

// Descriptor is the CronJob controller ("cronjob" in --controllers).
var Descriptor = controller.Descriptor{
	Name: "cronjob",
	New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
		c, err := newController(cx)
		if err != nil {
			return nil, err
		}
		return []controller.Runnable{c.queue, controller.RunnableFunc(c.wake.Run)}, nil
	},
}

type cronJobController struct {
	client   kubernetes.Interface
	cronJobs batchlisters.CronJobLister
	jobs     cache.Indexer // by controller.ControllerUIDIndex
	recorder record.EventRecorder
	clock    clock.WithTicker
	log      *slog.Logger
	queue    *controller.Controller
	wake     *wakeups
}

func newController(cx *controller.Context) (*cronJobController, error) {
	cjInf := cx.Informers.Batch().V1().CronJobs()
	jobInf := cx.Informers.Batch().V1().Jobs().Informer()
	if err := controller.AddControllerUIDIndex(jobInf); err != nil {
		return nil, fmt.Errorf("job index: %w", err)
	}
	clk := cx.ClockOrReal()
	c := &cronJobController{
		client:   cx.Client,
		cronJobs: cjInf.Lister(),
		jobs:     jobInf.GetIndexer(),
		recorder: cx.Recorder("cronjob-controller"),
		clock:    clk,
		log:      cx.Logger("cronjob"),
	}
	c.queue = controller.New("cronjob", Workers, controller.ReconcilerFunc(c.sync))
	c.queue.HasSynced = []cache.InformerSynced{cjInf.Informer().HasSynced, jobInf.HasSynced}
	c.wake = newWakeups(clk, c.queue.EnqueueKey)

	if _, err := cjInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.queue.Enqueue,
		UpdateFunc: c.updateCronJob,
		DeleteFunc: c.deleteCronJob,
	}); err != nil {
		return nil, err
	}
	// A job created, changed, moved or deleted wakes the CronJob that
	// controls it (see controller.Dependents); a CronJob adopts nothing
	// and keeps no expectations.
	jobEvents := &controller.Dependents[*batchv1.CronJob, *batchv1.Job]{
		OwnerKind: cronJobKind.Kind,
		GetOwner: func(namespace, name string) (*batchv1.CronJob, error) {
			return c.cronJobs.CronJobs(namespace).Get(name)
		},
		Enqueue:           c.queue.EnqueueKey,
		UpdateTerminating: true,
	}
	if _, err := jobInf.AddEventHandler(jobEvents.Handler()); err != nil {
		return nil, err
	}
	return c, nil
}

// updateCronJob syncs at once, except that a new schedule or time zone
// only moves the next wake-up: the new schedule's next time is when
// anything may happen.
func (c *cronJobController) updateCronJob(old, cur interface{}) {
	o, ok1 := old.(*batchv1.CronJob)
	n, ok2 := cur.(*batchv1.CronJob)
	if !ok1 || !ok2 {
		return
	}
	if o.Spec.Schedule == n.Spec.Schedule && reflect.DeepEqual(o.Spec.TimeZone, n.Spec.TimeZone) {
		c.queue.Enqueue(n)
		return
	}
	sched, err := parseSchedule(n)
	if err != nil {
		c.recorder.Eventf(n, corev1.EventTypeWarning, "UnParseableCronJobSchedule", "unparseable schedule for cronjob: %s", n.Spec.Schedule)
		return
	}
	key := n.Namespace + "/" + n.Name
	if at := nextWakeup(n, c.clock.Now(), sched); !at.IsZero() {
		c.wake.set(key, at)
	}
}

func (c *cronJobController) deleteCronJob(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.wake.forget(key)
	c.queue.EnqueueKey(key)
}

// ownedJobs lists the jobs cj controls, from the index.
func (c *cronJobController) ownedJobs(cj *batchv1.CronJob) ([]*batchv1.Job, error) {
	objs, err := c.jobs.ByIndex(controller.ControllerUIDIndex, string(cj.UID))
	if err != nil {
		return nil, err
	}
	var out []*batchv1.Job
	for _, o := range objs {
		if j, ok := o.(*batchv1.Job); ok && j.Namespace == cj.Namespace {
			out = append(out, j)
		}
	}
	return out, nil
}

// sync reconciles one CronJob (key "namespace/name"): it cleans up
// finished jobs beyond the history limits, reconciles status.active with
// the jobs that exist, starts the job due now if its policies allow, and
// arranges to wake at the next scheduled time.
func (c *cronJobController) sync(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	shared, err := c.cronJobs.CronJobs(ns).Get(name)
	if err != nil {
		if isNotFound(err) {
			c.wake.forget(key)
			return controller.Result{}, nil
		}
		return controller.Result{}, err
	}
	jobs, err := c.ownedJobs(shared)
	if err != nil {
		return controller.Result{}, err
	}
	cj := shared.DeepCopy()
	changed := c.cleanupFinishedJobs(ctx, cj, jobs)
	wakeAt, synced, syncErr := c.syncCronJob(ctx, cj, jobs)
	changed = changed || synced
	if changed {
		if _, err := c.client.BatchV1().CronJobs(ns).UpdateStatus(ctx, cj, metav1.UpdateOptions{}); err != nil {
			if isNotFound(err) {
				return controller.Result{}, nil
			}
			return controller.Result{}, fmt.Errorf("update status of cronjob %s: %w", key, err)
		}
	}
	if !wakeAt.IsZero() {
		c.wake.set(key, wakeAt)
		return controller.Result{}, nil
	}
	return controller.Result{}, syncErr
}

// cleanupFinishedJobs deletes the oldest finished jobs beyond
// successfulJobsHistoryLimit and failedJobsHistoryLimit. It reports
// whether cj's status changed.
func (c *cronJobController) cleanupFinishedJobs(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) bool {
	changed := false
	for _, j := range historyToDelete(cj, jobs) {
		if c.deleteJob(ctx, cj, j) {
			changed = true
		}
	}
	return changed
}

// deleteJob deletes a job (its pods follow through the garbage
// collector) and its reference in status.active.
func (c *cronJobController) deleteJob(ctx context.Context, cj *batchv1.CronJob, job *batchv1.Job) bool {
	background := metav1.DeletePropagationBackground
	err := c.client.BatchV1().Jobs(job.Namespace).Delete(ctx, job.Name, metav1.DeleteOptions{PropagationPolicy: &background})
	if err != nil && !isNotFound(err) {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedDelete", "Deleted job: %v", err)
		c.log.Error("deleting job", "cronjob", cj.Namespace+"/"+cj.Name, "job", job.Name, "err", err)
		return false
	}
	removeActive(cj, job.UID)
	c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted job %v", job.Name)
	return true
}

// syncCronJob updates cj's status from its jobs and starts the job due
// now. It returns when to wake next (zero: not until something changes),
// whether the status changed, and an error to retry on.
func (c *cronJobController) syncCronJob(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) (time.Time, bool, error) {
	now := c.clock.Now()
	changed := false
	children := map[string]bool{}
	for _, j := range jobs {
		children[string(j.UID)] = true
		listed := inActive(cj, j.UID)
		done, condType := finishedStatus(j)
		switch {
		case !listed && !done:
			// Perhaps a job this controller created just before a crash,
			// whose status write was lost; a fresh read tells.
			fresh, err := c.client.BatchV1().CronJobs(cj.Namespace).Get(ctx, cj.Name, metav1.GetOptions{})
			if err != nil {
				return time.Time{}, changed, err
			}
			if inActive(fresh, j.UID) {
				cj.Status.Active = fresh.Status.Active
				continue
			}
			c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnexpectedJob", "Saw a job that the controller did not create or forgot: %s", j.Name)
		case listed && done:
			removeActive(cj, j.UID)
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "SawCompletedJob", "Saw completed job: %s, status: %v", j.Name, condType)
			changed = true
		}
		if done && condType == batchv1.JobComplete && j.Status.CompletionTime != nil {
			if last := cj.Status.LastSuccessfulTime; last == nil || j.Status.CompletionTime.After(last.Time) {
				cj.Status.LastSuccessfulTime = j.Status.CompletionTime.DeepCopy()
				changed = true
			}
		}
	}
	// A listed job the cache does not show may just be late in the cache;
	// only the API server can say it is gone.
	for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
		if children[string(ref.UID)] {
			continue
		}
		_, err := c.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		switch {
		case isNotFound(err):
			c.recorder.Eventf(cj, corev1.EventTypeNormal, "MissingJob", "Active job went missing: %v", ref.Name)
			removeActive(cj, ref.UID)
			changed = true
		case err != nil:
			return time.Time{}, changed, err
		}
	}

	if cj.DeletionTimestamp != nil {
		return time.Time{}, changed, nil
	}
	if tz := cj.Spec.TimeZone; tz != nil {
		if _, err := time.LoadLocation(*tz); err != nil {
			c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnknownTimeZone", "invalid timeZone: %q: %s", *tz, err)
			return time.Time{}, changed, nil
		}
	}
	if cj.Spec.Suspend != nil && *cj.Spec.Suspend {
		return time.Time{}, changed, nil
	}
	spec, ownTZ := scheduleSpec(cj)
	if ownTZ {
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnsupportedSchedule", "CRON_TZ or TZ used in schedule %q is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details", cj.Spec.Schedule)
	}
	sched, err := parseSchedule(cj)
	if err != nil {
		// A user error: nothing happens until the schedule is fixed.
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "UnparseableSchedule", "unparseable schedule: %q : %s", spec, err)
		return time.Time{}, changed, nil
	}

	d := decideRun(cj, now, sched)
	switch {
	case d.err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "InvalidSchedule", "invalid schedule: %s : %s", cj.Spec.Schedule, d.err)
		return time.Time{}, changed, nil
	case d.manyMissed:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "TooManyMissedTimes", "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew")
		c.log.Info("too many missed times", "cronjob", cj.Namespace+"/"+cj.Name)
	}
	switch d.skip {
	case skipNothingDue, skipAlreadyStarted:
		return d.wakeAt, changed, nil
	case skipTooLate:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "MissSchedule", "Missed scheduled time to start a job: %s", d.scheduled.UTC().Format(time.RFC1123Z))
		return d.wakeAt, changed, nil
	case skipForbidden:
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")
		return d.wakeAt, changed, nil
	}
	if d.replace {
		for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
			job, err := c.client.BatchV1().Jobs(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedGet", "Get job: %v", err)
				return time.Time{}, changed, err
			}
			if !c.deleteJob(ctx, cj, job) {
				return time.Time{}, changed, fmt.Errorf("could not replace job %s/%s", job.Namespace, job.Name)
			}
			changed = true
		}
	}

	want, err := jobFromTemplate(cj, *d.scheduled)
	if err != nil {
		return time.Time{}, changed, err
	}
	created, err := c.client.BatchV1().Jobs(cj.Namespace).Create(ctx, want, metav1.CreateOptions{})
	switch {
	case isNamespaceTerminating(err):
		return time.Time{}, changed, err
	case isAlreadyExists(err):
		// Created by an earlier attempt whose status write was lost, or
		// by someone else; only our own job goes in the active list.
		existing, gerr := c.client.BatchV1().Jobs(cj.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		if gerr != nil {
			return time.Time{}, changed, gerr
		}
		if !metav1.IsControlledBy(existing, cj) || inActive(cj, existing.UID) {
			return time.Time{}, changed, nil
		}
		c.log.Info("job already exists", "cronjob", cj.Namespace+"/"+cj.Name, "job", existing.Name)
		created = existing
	case err != nil:
		c.recorder.Eventf(cj, corev1.EventTypeWarning, "FailedCreate", "Error creating job: %v", err)
		return time.Time{}, changed, err
	default:
		c.log.Debug("created job", "cronjob", cj.Namespace+"/"+cj.Name, "job", created.Name)
		c.recorder.Eventf(cj, corev1.EventTypeNormal, "SuccessfulCreate", "Created job %v", created.Name)
	}
	// The job's name is derived from its scheduled time, so even if this
	// status write is lost, the next attempt finds the job rather than
	// starting the run twice.
	cj.Status.Active = append(cj.Status.Active, jobRef(created))
	cj.Status.LastScheduleTime = &metav1.Time{Time: *d.scheduled}
	return nextWakeup(cj, now, sched), true, nil
}

func jobRef(j *batchv1.Job) corev1.ObjectReference {
	return corev1.ObjectReference{
		Kind: "Job", APIVersion: batchv1.SchemeGroupVersion.String(),
		Namespace: j.Namespace, Name: j.Name, UID: j.UID, ResourceVersion: j.ResourceVersion,
	}
}
