package job

import (
	"context"
	"fmt"
	"log/slog"
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
	podRouter    *controller.Dependents[*batchv1.Job, *corev1.Pod]
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
	clk := cx.ClockOrReal()
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
		log:          cx.Logger("job"),
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
	c.podRouter = c.podEvents()
	if _, err := podInf.AddEventHandler(c.podRouter.Handler()); err != nil {
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
	job, ok := controller.ObjectOf[*batchv1.Job](obj)
	if !ok {
		return
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
	job, _, _ := c.podRouter.Resolve(namespace, ref)
	return job
}

// podEvents routes pod events to the job controlling them (see
// controller.Dependents). Every pod event syncs the job batched; the hooks
// keep the expectations and the tracking finalizers: a pod whose
// finalizer is gone is counted once, and a pod that holds the finalizer
// with no live job to count it goes to the orphan worker.
func (c *jobController) podEvents() *controller.Dependents[*batchv1.Job, *corev1.Pod] {
	// finalizerSeen: the pod's end was counted (its finalizer gone).
	finalizerSeen := func(key string, job *batchv1.Job, pod *corev1.Pod) {
		if !hasTrackingFinalizer(pod) {
			c.finalizers.observed(key, pod.UID)
		}
		c.enqueueBatched(job)
	}
	return &controller.Dependents[*batchv1.Job, *corev1.Pod]{
		OwnerKind: jobKind.Kind,
		GetOwner: func(namespace, name string) (*batchv1.Job, error) {
			return c.jobs.Jobs(namespace).Get(name)
		},
		Adopters: c.selecting,
		Enqueue:  func(key string) { c.queue.EnqueueAfter(key, c.cfg.SyncBatchPeriod) },
		Created: func(key string, job *batchv1.Job, _ *corev1.Pod) {
			c.expectations.CreationObserved(key)
			c.enqueueBatched(job)
		},
		Updated: func(key string, job *batchv1.Job, _, cur *corev1.Pod, _ bool) {
			finalizerSeen(key, job, cur)
		},
		Released: finalizerSeen,
		Deleted: func(key string, job *batchv1.Job, pod *corev1.Pod, final bool) {
			if finished(job) {
				c.releaseOrphan(pod, final)
				return
			}
			c.expectations.DeletionObserved(key, pod.Namespace+"/"+pod.Name)
			if final || !hasTrackingFinalizer(pod) {
				c.finalizers.observed(key, pod.UID)
			}
			c.enqueueBatched(job)
		},
		// Perhaps a job's pod whose reference the garbage collector
		// removed, or whose job is gone: its finalizer must still go.
		Orphan: c.releaseOrphan,
	}
}

// releaseOrphan hands a pod no live job counts to the orphan worker if it
// still holds the tracking finalizer; once it is gone (final) there is
// nothing left to patch.
func (c *jobController) releaseOrphan(pod *corev1.Pod, final bool) {
	if hasTrackingFinalizer(pod) && !final {
		c.orphans.EnqueueKey(pod.Namespace + "/" + pod.Name)
	}
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
