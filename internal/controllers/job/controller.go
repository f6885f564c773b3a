package job

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	batchlisters "k8s.io/client-go/listers/batch/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Config tunes the controller. Zero values take the defaults noted, which
// are upstream's.
type Config struct {
	// Workers is the number of jobs synced at once (5,
	// --concurrent-job-syncs).
	Workers int
	// PodFailureBackoff is the delay before the first failed pod is
	// replaced (10 s); it doubles with each further failure since the
	// last success, up to MaxPodFailureBackoff (10 min).
	PodFailureBackoff, MaxPodFailureBackoff time.Duration
	// SyncBatchPeriod gathers the pod events of one job into one sync
	// (1 s): a job whose 100 pods finish together syncs once, not 100
	// times. Changes to a job's spec sync at once.
	SyncBatchPeriod time.Duration
}

func (c *Config) defaults() {
	if c.Workers <= 0 {
		c.Workers = 5
	}
	if c.PodFailureBackoff <= 0 {
		c.PodFailureBackoff = 10 * time.Second
	}
	if c.MaxPodFailureBackoff <= 0 {
		c.MaxPodFailureBackoff = 10 * time.Minute
	}
	if c.SyncBatchPeriod <= 0 {
		c.SyncBatchPeriod = time.Second
	}
}

// Descriptor is the Job controller with upstream's settings ("job" in
// --controllers).
var Descriptor = NewDescriptor(Config{})

// NewDescriptor returns the Job controller with cfg (tests shorten the
// back-off).
func NewDescriptor(cfg Config) controller.Descriptor {
	cfg.defaults()
	return controller.Descriptor{
		Name: "job",
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			c, err := newController(cx, cfg)
			if err != nil {
				return nil, err
			}
			return []controller.Runnable{c.queue, c.orphans}, nil
		},
	}
}

type jobController struct {
	cfg          Config
	client       kubernetes.Interface
	jobs         batchlisters.JobLister
	pods         cache.Indexer // by controller.ControllerUIDIndex
	expectations *controller.Expectations
	finalizers   *finalizerExpectations
	backoff      *backoffStore
	stale        *staleJobs
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	log          *slog.Logger
	queue        *controller.Controller // job keys
	orphans      *controller.Controller // keys of pods whose finalizer must go
}

func newController(cx *controller.Context, cfg Config) (*jobController, error) {
	jobInf := cx.Informers.Batch().V1().Jobs()
	podInf := cx.Informers.Core().V1().Pods().Informer()
	if err := controller.AddControllerUIDIndex(podInf); err != nil {
		return nil, fmt.Errorf("pod index: %w", err)
	}
	clk := clock.PassiveClock(clock.RealClock{})
	if cx.Clock != nil {
		clk = cx.Clock
	}
	log := cx.Log
	if log == nil {
		log = slog.Default()
	}
	c := &jobController{
		cfg:          cfg,
		client:       cx.Client,
		jobs:         jobInf.Lister(),
		pods:         podInf.GetIndexer(),
		expectations: controller.NewExpectations(clk),
		finalizers:   newFinalizerExpectations(),
		backoff:      newBackoffStore(),
		stale:        newStaleJobs(),
		recorder:     cx.Recorder("job-controller"),
		clock:        clk,
		log:          log.With("controller", "job"),
	}
	synced := []cache.InformerSynced{podInf.HasSynced, jobInf.Informer().HasSynced}
	c.queue = controller.New("job", cfg.Workers, controller.ReconcilerFunc(c.sync))
	c.queue.HasSynced = synced
	c.orphans = controller.New("job_orphan_pod", 1, orphanReconciler{c})
	c.orphans.HasSynced = synced

	if _, err := jobInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.queue.Enqueue,
		UpdateFunc: c.updateJob,
		DeleteFunc: c.deleteJob,
	}); err != nil {
		return nil, err
	}
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: func(obj interface{}) { c.deletePod(obj, true) },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

// enqueueBatched syncs a job after the batch period, so a burst of pod
// events costs one sync.
func (c *jobController) enqueueBatched(job *batchv1.Job) {
	c.queue.EnqueueAfter(job.Namespace+"/"+job.Name, c.cfg.SyncBatchPeriod)
}

func (c *jobController) updateJob(old, cur interface{}) {
	oldJob, ok1 := old.(*batchv1.Job)
	curJob, ok2 := cur.(*batchv1.Job)
	if !ok1 || !ok2 {
		return
	}
	key := curJob.Namespace + "/" + curJob.Name
	if oldJob.UID != curJob.UID {
		c.forget(key)
	}
	if curJob.Generation == oldJob.Generation {
		// A status write (often our own) or a pod-driven change: batch.
		c.enqueueBatched(curJob)
	} else {
		c.queue.EnqueueKey(key)
	}
	// Pods still holding the finalizer of a finished job are released by
	// the orphan worker (a backstop: the last sync removes them).
	if finished(curJob) {
		c.cleanupFinalizers(curJob)
	}
	// A new activeDeadlineSeconds needs a sync when it will pass.
	if curJob.Status.StartTime != nil && curJob.Spec.ActiveDeadlineSeconds != nil {
		if a := oldJob.Spec.ActiveDeadlineSeconds; a == nil || *a != *curJob.Spec.ActiveDeadlineSeconds {
			left := time.Duration(*curJob.Spec.ActiveDeadlineSeconds)*time.Second - c.clock.Since(curJob.Status.StartTime.Time)
			c.queue.EnqueueAfter(key, left)
		}
	}
}

func (c *jobController) deleteJob(obj interface{}) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if job, ok = tomb.Obj.(*batchv1.Job); !ok {
			return
		}
	}
	c.queue.EnqueueKey(job.Namespace + "/" + job.Name)
	c.cleanupFinalizers(job)
}

// cleanupFinalizers hands job's pods that still hold the tracking
// finalizer to the orphan worker.
func (c *jobController) cleanupFinalizers(job *batchv1.Job) {
	objs, err := c.pods.ByIndex(controller.ControllerUIDIndex, string(job.UID))
	if err != nil {
		return
	}
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok && hasTrackingFinalizer(p) {
			c.orphans.EnqueueKey(p.Namespace + "/" + p.Name)
		}
	}
}

// resolve returns the job a controller reference names, if it is a Job in
// the cache with that UID.
func (c *jobController) resolve(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if ref.Kind != jobKind.Kind {
		return nil
	}
	job, err := c.jobs.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// selecting returns the jobs whose selector matches an orphan pod: the
// candidates to adopt it.
func (c *jobController) selecting(pod *corev1.Pod) []*batchv1.Job {
	jobs, err := c.jobs.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*batchv1.Job
	for _, j := range jobs {
		sel, err := metav1.LabelSelectorAsSelector(j.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			out = append(out, j)
		}
	}
	return out
}

func (c *jobController) addPod(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		// Seen first already terminating (e.g. after a restart): a
		// deletion, never a creation we waited for.
		c.deletePod(pod, false)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if job := c.resolve(pod.Namespace, ref); job != nil {
			c.expectations.CreationObserved(job.Namespace + "/" + job.Name)
			c.enqueueBatched(job)
		}
		return
	}
	if hasTrackingFinalizer(pod) {
		c.orphans.EnqueueKey(pod.Namespace + "/" + pod.Name)
	}
	for _, job := range c.selecting(pod) {
		c.enqueueBatched(job)
	}
}

func (c *jobController) updatePod(old, cur interface{}) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == curPod.ResourceVersion {
		return // a resync: nothing changed
	}
	if curPod.DeletionTimestamp != nil {
		// A graceful deletion began: count it now, so a replacement is
		// not held back until the node confirms.
		c.deletePod(curPod, false)
		return
	}
	finalizerGone := !hasTrackingFinalizer(curPod)
	curRef := metav1.GetControllerOfNoCopy(curPod)
	oldRef := metav1.GetControllerOfNoCopy(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if job := c.resolve(oldPod.Namespace, oldRef); job != nil {
			if finalizerGone {
				c.finalizers.observed(job.Namespace+"/"+job.Name, curPod.UID)
			}
			c.enqueueBatched(job)
		}
	}
	if curRef != nil {
		if job := c.resolve(curPod.Namespace, curRef); job != nil {
			if finalizerGone {
				c.finalizers.observed(job.Namespace+"/"+job.Name, curPod.UID)
			}
			c.enqueueBatched(job)
		}
		return
	}
	if hasTrackingFinalizer(curPod) {
		c.orphans.EnqueueKey(curPod.Namespace + "/" + curPod.Name)
	}
	if refChanged || !reflect.DeepEqual(oldPod.Labels, curPod.Labels) {
		for _, job := range c.selecting(curPod) {
			c.enqueueBatched(job)
		}
	}
}

// deletePod handles a pod's removal (final) or the start of its graceful
// deletion.
func (c *jobController) deletePod(obj interface{}, final bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if pod, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	hasFinalizer := hasTrackingFinalizer(pod)
	if ref == nil {
		// Perhaps a job's pod whose reference the garbage collector
		// removed: its finalizer must still go.
		if hasFinalizer && !final {
			c.orphans.EnqueueKey(pod.Namespace + "/" + pod.Name)
		}
		return
	}
	job := c.resolve(pod.Namespace, ref)
	if job == nil || finished(job) {
		if hasFinalizer && !final {
			c.orphans.EnqueueKey(pod.Namespace + "/" + pod.Name)
		}
		return
	}
	key := job.Namespace + "/" + job.Name
	c.expectations.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
	if final || !hasFinalizer {
		c.finalizers.observed(key, pod.UID)
	}
	c.enqueueBatched(job)
}

// forget drops everything remembered about a job key.
func (c *jobController) forget(key string) {
	c.expectations.DeleteExpectations(key)
	c.finalizers.forget(key)
	c.backoff.remove(key)
	c.stale.forget(key)
}

// managedElsewhere: spec.managedBy names another controller, which alone
// writes the job's status.
func managedElsewhere(job *batchv1.Job) bool {
	return job.Spec.ManagedBy != nil && *job.Spec.ManagedBy != batchv1.JobControllerName
}

func splitKey(key string) (string, string, error) { return cache.SplitMetaNamespaceKey(key) }
