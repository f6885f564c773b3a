package job

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/rudder-dev/rudder/internal/controller"
)

// The I/O half for pods: claiming, creating, deleting and finalizer
// removal. Each write that succeeds or fails leaves the expectations
// right, so the next sync neither waits forever nor acts twice.

// claimPods returns the pods job controls: its own that still match the
// selector, plus matching orphans it adopts (owner reference and tracking
// finalizer added in one patch). Its pods that stopped matching are
// released (reference and finalizer removed). The result holds cache
// pointers, except adopted pods, copied with the finalizer they now have.
func (c *jobController) claimPods(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("couldn't convert Job selector: %w", err)
	}
	var owned []*corev1.Pod
	var errs []error
	checked, adoptErr := false, error(nil)
	for _, ik := range []string{string(job.UID), controller.OrphanIndexKey(job.Namespace)} {
		objs, err := c.pods.ByIndex(controller.ControllerUIDIndex, ik)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			p, ok := o.(*corev1.Pod)
			if !ok || p.Namespace != job.Namespace {
				continue
			}
			matches := selector.Matches(labels.Set(p.Labels))
			if ref := metav1.GetControllerOfNoCopy(p); ref != nil {
				if ref.UID != job.UID {
					continue
				}
				if matches {
					owned = append(owned, p)
					continue
				}
				if job.DeletionTimestamp != nil {
					continue
				}
				if err := c.patchPod(ctx, p, releasePatch(job.UID, p.UID)); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
					errs = append(errs, err)
				}
				continue
			}
			if !matches || job.DeletionTimestamp != nil || p.DeletionTimestamp != nil {
				continue
			}
			// An uncached read first: the cache may not show yet that the
			// job is being deleted, and an adopted pod would outlive it.
			if !checked {
				adoptErr, checked = c.canAdopt(ctx, job), true
			}
			if adoptErr != nil {
				errs = append(errs, fmt.Errorf("can't adopt Pod %s/%s (%s): %w", p.Namespace, p.Name, p.UID, adoptErr))
				continue
			}
			if err := c.patchPod(ctx, p, adoptPatch(job, p.UID)); err != nil {
				if !apierrors.IsNotFound(err) {
					errs = append(errs, err)
				}
				continue
			}
			adopted := p.DeepCopy()
			if !hasTrackingFinalizer(adopted) {
				adopted.Finalizers = append(adopted.Finalizers, batchv1.JobTrackingFinalizer)
			}
			owned = append(owned, adopted)
		}
	}
	return owned, utilerrors.NewAggregate(errs)
}

func (c *jobController) canAdopt(ctx context.Context, job *batchv1.Job) error {
	fresh, err := c.client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if fresh.UID != job.UID {
		return fmt.Errorf("original Job %s/%s is gone: got uid %s, wanted %s", job.Namespace, job.Name, fresh.UID, job.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("%s/%s has just been deleted at %v", job.Namespace, job.Name, fresh.DeletionTimestamp)
	}
	return nil
}

func (c *jobController) patchPod(ctx context.Context, p *corev1.Pod, patch []byte) error {
	_, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// The adopt and release patches carry the pod's UID: a pod replaced by
// another of the same name makes the server refuse the UID change instead
// of the patch touching the wrong pod.

func adoptPatch(job *batchv1.Job, podUID types.UID) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": []any{metav1.NewControllerRef(job, jobKind)},
		"finalizers":      []string{batchv1.JobTrackingFinalizer},
		"uid":             podUID,
	}})
	return b
}

func releasePatch(jobUID, podUID types.UID) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences":                     []any{map[string]any{"$patch": "delete", "uid": jobUID}},
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
		"uid":                                 podUID,
	}})
	return b
}

// removeFinalizerPatch drops only the tracking finalizer; nil when the
// pod has none.
func removeFinalizerPatch(p *corev1.Pod) []byte {
	if !hasTrackingFinalizer(p) {
		return nil
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
	}})
	return b
}

// createPods creates n pods (for an Indexed job one per index in
// indexes) in slow-start batches of 1, 2, 4, ..., stopping after the
// first batch with a failure: a job that cannot create pods makes one
// failing request per sync, not hundreds. Expectations for all n are
// raised first and lowered for every pod not created. It returns how
// many were created.
func (c *jobController) createPods(ctx context.Context, key string, job *batchv1.Job, n int, indexes []int, delayed map[int]*corev1.Pod) (int, error) {
	c.expectations.ExpectCreations(key, n)
	created, next := 0, 0
	var firstErr error
	for batch := min(1, n); batch > 0 && firstErr == nil; batch = min(2*batch, n-next) {
		errs := make([]error, batch)
		var wg sync.WaitGroup
		for i := range batch {
			index := unknownIndex
			if indexes != nil {
				index = indexes[next+i]
			}
			wg.Go(func() {
				errs[i] = c.createPod(ctx, key, job, podFromTemplate(job, index, delayed[index]))
			})
		}
		wg.Wait()
		next += batch
		for _, err := range errs {
			if err == nil {
				created++
			} else if firstErr == nil {
				firstErr = err
			}
		}
	}
	// Pods never attempted will never be seen either.
	if skipped := n - next; skipped > 0 {
		c.expectations.LowerExpectations(key, skipped, nil)
	}
	return created, firstErr
}

func (c *jobController) createPod(ctx context.Context, key string, job *batchv1.Job, pod *corev1.Pod) error {
	created, err := c.client.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// This creation will not be observed.
		c.expectations.LowerExpectations(key, 1, nil)
		// A namespace being deleted refuses every pod; its deletion
		// takes the job too.
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return err
	}
	c.log.Debug("created pod", "job", key, "pod", created.Name)
	c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

// deletePods deletes pods concurrently. With dropFinalizer (scaling down,
// suspending) each pod's tracking finalizer goes first, so the deleted
// pods are never counted as failures; without it (the job is failing or
// has met its success criteria) the finalizer stays until the pod is
// counted. expect records the deletions in the expectations. It returns
// how many pods were deleted, and how many of those were ready.
func (c *jobController) deletePods(ctx context.Context, key string, job *batchv1.Job, pods []*corev1.Pod, dropFinalizer, expect bool) (deleted, deletedReady int32, err error) {
	if expect {
		keys := make([]string, len(pods))
		for i, p := range pods {
			keys[i] = p.Namespace + "/" + p.Name
		}
		c.expectations.ExpectDeletions(key, keys)
	}
	errs := make([]error, len(pods))
	gone := make([]bool, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			err := c.removePod(ctx, job, p, dropFinalizer)
			if err != nil && expect {
				c.expectations.DeletionObserved(key, p.Namespace+"/"+p.Name)
			}
			if err != nil && !apierrors.IsNotFound(err) {
				errs[i] = err
				return
			}
			gone[i] = true
		})
	}
	wg.Wait()
	for i, p := range pods {
		if gone[i] {
			deleted++
			if isReady(p) {
				deletedReady++
			}
		}
	}
	return deleted, deletedReady, utilerrors.NewAggregate(errs)
}

func (c *jobController) removePod(ctx context.Context, job *batchv1.Job, p *corev1.Pod, dropFinalizer bool) error {
	if patch := removeFinalizerPatch(p); dropFinalizer && patch != nil {
		if err := c.patchPod(ctx, p, patch); err != nil {
			return fmt.Errorf("removing completion finalizer: %w", err)
		}
	}
	err := c.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			c.recorder.Eventf(job, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		}
		return err
	}
	c.recorder.Eventf(job, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", p.Name)
	return nil
}

// removeFinalizers strips the tracking finalizer from pods concurrently,
// recording each removal as expected until the informer shows it. It
// returns, per pod, whether the finalizer is gone (a pod already deleted
// counts as gone).
func (c *jobController) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod) ([]bool, error) {
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	c.finalizers.expect(key, uids)
	done := make([]bool, len(pods))
	errs := make([]error, len(pods))
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Go(func() {
			patch := removeFinalizerPatch(p)
			if patch == nil {
				return
			}
			if err := c.patchPod(ctx, p, patch); err != nil {
				c.finalizers.observed(key, p.UID)
				if !apierrors.IsNotFound(err) {
					errs[i] = fmt.Errorf("removing tracking finalizer: %w", err)
					return
				}
			}
			done[i] = true
		})
	}
	wg.Wait()
	return done, utilerrors.NewAggregate(errs)
}

// orphanReconciler removes the tracking finalizer from a pod (key
// "namespace/name") no running job will count: it has no controller any
// more, or its job is gone or finished. Without this such a pod, once
// deleted, would hang in Terminating forever.
type orphanReconciler struct{ c *jobController }

func (r orphanReconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := splitKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	obj, exists, err := r.c.pods.GetByKey(key)
	if err != nil || !exists {
		return controller.Result{}, err
	}
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return controller.Result{}, nil
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if ref.Kind != jobKind.Kind || ref.APIVersion != batchv1.SchemeGroupVersion.String() {
			return controller.Result{}, nil // another controller's finalizer business
		}
		if job := r.c.resolve(pod.Namespace, ref); job != nil {
			if managedElsewhere(job) || !finished(job) {
				return controller.Result{}, nil // adopted, or still counting
			}
		}
	}
	patch := removeFinalizerPatch(pod)
	if patch == nil {
		return controller.Result{}, nil
	}
	_, err = r.c.client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return controller.Result{}, err
	}
	return controller.Result{}, nil
}
