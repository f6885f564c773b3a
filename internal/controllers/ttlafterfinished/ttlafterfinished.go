// Package ttlafterfinished is the TTL-after-finished controller: it
// deletes a Job spec.ttlSecondsAfterFinished seconds after the Job
// finished, as kube-controller-manager's "ttl-after-finished" controller
// does, so finished Jobs (and, through the garbage collector, their pods)
// do not pile up.
//
// A Job has finished when its Complete or Failed condition is True; it
// finished at that condition's lastTransitionTime. Jobs without a TTL, not
// finished, or already being deleted are never touched.
//
// A sync reads the Job from the informer and computes the time left
// (expiry, a pure function of the Job and the clock). While time is left
// it asks to be woken when it runs out. Once it has run out, the cached
// copy may be stale (the TTL may just have been raised), so the Job is
// read again from the API server and checked once more before it is
// deleted, with propagationPolicy Foreground (the Job goes after its
// pods) and a UID precondition (a Job recreated under the same name is
// not deleted by mistake).
//
// Usage, through the controller manager:
//
//	runnables, err := ttlafterfinished.Descriptor.New(ctx, cx)
package ttlafterfinished

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Workers is upstream's --concurrent-ttl-after-finished-syncs default.
const Workers = 5

// Descriptor registers the controller under upstream's name.
var Descriptor = controller.Descriptor{Name: "ttl-after-finished", New: newController}

type reconciler struct {
	client kubernetes.Interface
	jobs   batchlisters.JobLister
	clock  clock.PassiveClock
	log    *slog.Logger
}

func newController(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
	inf := cx.Informers.Batch().V1().Jobs()
	clk := cx.ClockOrReal()
	r := &reconciler{client: cx.Client, jobs: inf.Lister(), clock: clk, log: cx.Logger("ttl-after-finished")}
	c := controller.New("ttl_jobs_to_delete", Workers, r)
	enqueue := func(obj interface{}) {
		if j, ok := obj.(*batchv1.Job); ok && j.DeletionTimestamp == nil && needsCleanup(j) {
			c.Enqueue(j)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, n interface{}) { enqueue(n) },
	}); err != nil {
		return nil, err
	}
	c.HasSynced = []cache.InformerSynced{inf.Informer().HasSynced}
	return []controller.Runnable{c}, nil
}

// Reconcile deletes the Job named key ("namespace/name") once its TTL
// after finishing has passed.
func (r *reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	job, err := r.jobs.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if res, due, err := r.check(job); !due || err != nil {
		return res, err
	}
	// The TTL may have changed since the cache saw the Job.
	fresh, err := r.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if res, due, err := r.check(fresh); !due || err != nil {
		return res, err
	}
	policy := metav1.DeletePropagationForeground
	err = r.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, fmt.Errorf("delete job %s: %w", key, err)
	}
	r.log.Debug("deleted finished job", "job", key)
	return controller.Result{}, nil
}

// check reports whether job is due for deletion now; when it is not but
// will be, the Result asks to be woken then.
func (r *reconciler) check(job *batchv1.Job) (controller.Result, bool, error) {
	if job.DeletionTimestamp != nil || !needsCleanup(job) {
		return controller.Result{}, false, nil
	}
	now := r.clock.Now()
	left, finishedAt, err := timeLeft(job, now)
	if err != nil {
		return controller.Result{}, false, err
	}
	if finishedAt.After(now) {
		r.log.Info("job finished in the future (clock skew?); cleanup deferred",
			"job", job.Namespace+"/"+job.Name, "finished", finishedAt)
	}
	if left > 0 {
		return controller.Result{RequeueAfter: left}, false, nil
	}
	return controller.Result{}, true, nil
}

// needsCleanup reports whether j has a TTL and has finished.
func needsCleanup(j *batchv1.Job) bool {
	return j.Spec.TTLSecondsAfterFinished != nil && finished(j)
}

func finished(j *batchv1.Job) bool {
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// timeLeft returns how long until a finished Job with a TTL expires
// (zero or negative: expired) and when it finished. A finished Job whose
// condition carries no time is an error: its expiry cannot be known.
func timeLeft(j *batchv1.Job, now time.Time) (time.Duration, time.Time, error) {
	if !needsCleanup(j) {
		return 0, time.Time{}, fmt.Errorf("job %s/%s has no TTL or has not finished", j.Namespace, j.Name)
	}
	for _, c := range j.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			if c.LastTransitionTime.IsZero() {
				return 0, time.Time{}, fmt.Errorf("unable to find the time when the Job %s/%s finished", j.Namespace, j.Name)
			}
			at := c.LastTransitionTime.Time
			expire := at.Add(time.Duration(*j.Spec.TTLSecondsAfterFinished) * time.Second)
			return expire.Sub(now), at, nil
		}
	}
	return 0, time.Time{}, fmt.Errorf("unable to find the status of the finished Job %s/%s", j.Namespace, j.Name)
}
