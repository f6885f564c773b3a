package replicaset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// The I/O half: the writes a sync decided on.

// slowStartInitialBatch is the first batch of creations; each batch that
// fully succeeds doubles the next.
const slowStartInitialBatch = 1

// manageReplicas creates or deletes pods so that active (the claimed,
// active pods) moves towards spec.replicas, recording in the expectations
// what it waits to see.
func (c *rsController) manageReplicas(ctx context.Context, key string, rs *appsv1.ReplicaSet, orig runtime.Object, active []*corev1.Pod) error {
	create, del := scale(len(active), replicas(rs), c.burst)
	switch {
	case create > 0:
		c.expectations.ExpectCreations(key, create)
		c.log.Debug("too few replicas", "key", key, "need", replicas(rs), "creating", create)
		ref := *metav1.NewControllerRef(rs, c.kind.gvk())
		initial := c.warm.initial(key, c.clock.Now())
		created, largest, err := slowStartBatchSizes(create, initial, func() error {
			return c.createPod(ctx, rs, orig, ref)
		})
		if err != nil {
			c.warm.forget(key)
		} else {
			c.warm.succeeded(key, min(2*largest, slowStartWarmCap(c.burst)), c.clock.Now())
		}
		// The creations never attempted (or failed) will not be seen:
		// stop waiting for them; the next sync retries.
		if skipped := create - created; skipped > 0 {
			c.expectations.LowerExpectations(key, skipped, nil)
		}
		return err
	case del > 0:
		c.log.Debug("too many replicas", "key", key, "need", replicas(rs), "deleting", del)
		victims := podsToDelete(active, c.relatedPods(rs), del, c.clock.Now())
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = podKey(p)
		}
		// Record every victim before the first delete, so the deletion
		// events (a deletionTimestamp, then the removal) are counted
		// once each whenever they arrive.
		c.expectations.ExpectDeletions(key, keys)
		errs := make([]error, len(victims))
		var wg sync.WaitGroup
		for i, p := range victims {
			wg.Go(func() {
				if err := c.removePod(ctx, orig, p); err != nil {
					c.expectations.DeletionObserved(key, podKey(p))
					if !apierrors.IsNotFound(err) {
						errs[i] = err
					}
				}
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// slowStartBatch calls fn count times, in batches of 1, 2, 4, ... run
// concurrently, and stops after the first batch with a failure. A
// ReplicaSet that cannot create pods (quota, admission, a bad template)
// thus makes one failing request per sync, not hundreds. It returns how
// many calls succeeded and the first error.
func slowStartBatch(count, initial int, fn func() error) (int, error) {
	done, _, err := slowStartBatchSizes(count, initial, fn)
	return done, err
}

// slowStartBatchSizes is slowStartBatch that also returns the largest
// batch that succeeded in full.
func slowStartBatchSizes(count, initial int, fn func() error) (done, largest int, err error) {
	for batch := min(count, initial); batch > 0; batch = min(2*batch, count-done) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for range batch {
			wg.Go(func() {
				if err := fn(); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		done += batch - len(errs)
		if len(errs) > 0 {
			return done, largest, <-errs
		}
		largest = max(largest, batch)
	}
	return done, largest, nil
}

// slowStartWarmFor is how long a ReplicaSet whose creations all
// succeeded keeps its batch size for the next sync.
const slowStartWarmFor = time.Minute

// slowStartWarmCap is the largest batch a warm start sends at once: half
// the burst, so a sync of BurstReplicas takes two round trips and never
// has more creations in flight than a cold slow start's last batch
// (256), which keeps each request's latency where it was.
func slowStartWarmCap(burst int) int { return max(burst/2, slowStartInitialBatch) }

// slowStartMemory carries slow start over from one sync to the next. A
// ReplicaSet scaled from 0 to 10,000 creates BurstReplicas per sync; if
// each sync began again at a batch of 1, each 500 would take nine
// request round trips, one after the other. So a sync whose creations
// all succeeded leaves the next one (within slowStartWarmFor) starting at
// twice its largest batch, up to slowStartWarmCap; any failure, or the
// ReplicaSet's deletion, starts it again at 1. A ReplicaSet that cannot
// create pods still makes one failing request per sync; one that starts
// failing in the middle of a scale-up makes at most one failing batch
// before falling back to 1.
type slowStartMemory struct {
	mu sync.Mutex
	m  map[string]slowStartWarm
}

type slowStartWarm struct {
	batch int
	at    time.Time
}

func newSlowStartMemory() *slowStartMemory {
	return &slowStartMemory{m: map[string]slowStartWarm{}}
}

// initial is the first batch for key's next creations.
func (s *slowStartMemory) initial(key string, now time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.m[key]
	if !ok || now.Sub(w.at) > slowStartWarmFor {
		delete(s.m, key)
		return slowStartInitialBatch
	}
	return max(w.batch, slowStartInitialBatch)
}

func (s *slowStartMemory) succeeded(key string, next int, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = slowStartWarm{batch: next, at: now}
}

func (s *slowStartMemory) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
}

func (c *rsController) createPod(ctx context.Context, rs *appsv1.ReplicaSet, orig runtime.Object, ref metav1.OwnerReference) error {
	pod := podFromTemplate(rs, ref)
	if len(pod.Labels) == 0 {
		return errors.New("unable to create pods, no labels")
	}
	created, err := c.client.CoreV1().Pods(rs.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// A namespace being deleted refuses every pod; that is not the
		// ReplicaSet's failure, and its own deletion follows.
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		c.recorder.Eventf(orig, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return err
	}
	c.log.Debug("created pod", "controller", c.name, "pod", created.Namespace+"/"+created.Name)
	c.recorder.Eventf(orig, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

func (c *rsController) removePod(ctx context.Context, orig runtime.Object, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	if err != nil {
		if !apierrors.IsNotFound(err) {
			c.recorder.Eventf(orig, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
		}
		return err
	}
	c.recorder.Eventf(orig, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", pod.Name)
	return nil
}

// relatedPods are the active pods of every ReplicaSet that shares rs's
// controller (rs's own included), for the deletion ranking; none when
// rs has no controller.
func (c *rsController) relatedPods(rs *appsv1.ReplicaSet) []*corev1.Pod {
	owner := metav1.GetControllerOfNoCopy(rs)
	if owner == nil {
		return nil
	}
	siblings, err := c.kind.informer().GetIndexer().ByIndex(controllerUIDIndex, string(owner.UID))
	if err != nil {
		return nil
	}
	var pods []*corev1.Pod
	for _, s := range siblings {
		m, ok := s.(metav1.Object)
		if !ok {
			continue
		}
		objs, err := c.pods.ByIndex(controllerUIDIndex, string(m.GetUID()))
		if err != nil {
			continue
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok {
				pods = append(pods, p)
			}
		}
	}
	return pods
}

// claimPods carries out planClaims: it adopts matching orphans and
// releases owned pods that stopped matching, and returns the pods rs
// owns afterwards. Before the first adoption it re-reads rs from the API
// server: the cache may not show yet that rs is being deleted, and an
// adopted pod would then outlive its garbage collection.
func (c *rsController) claimPods(ctx context.Context, rs *appsv1.ReplicaSet, selects func(*corev1.Pod) bool, pods []*corev1.Pod) ([]*corev1.Pod, error) {
	plan := planClaimsBy(rs, selects, pods)
	claimed := plan.owned
	var errs []error
	var recheck error
	rechecked := false
	for _, pod := range plan.adopt {
		if !rechecked {
			recheck, rechecked = c.canAdopt(ctx, rs), true
		}
		if recheck != nil {
			errs = append(errs, fmt.Errorf("can't adopt Pod %s/%s (%s): %w", pod.Namespace, pod.Name, pod.UID, recheck))
			continue
		}
		if err := c.patchOwner(ctx, pod, ownerPatch(rs, c.kind.gvk(), pod.UID)); err != nil {
			if !apierrors.IsNotFound(err) {
				errs = append(errs, err)
			}
			continue
		}
		claimed = append(claimed, pod)
	}
	for _, pod := range plan.release {
		c.log.Debug("releasing pod", "controller", c.name, "owner", rs.Namespace+"/"+rs.Name, "pod", pod.Name)
		err := c.patchOwner(ctx, pod, releasePatch(rs.UID, pod.UID))
		// Gone, or replaced by another pod of the same name (the UID
		// in the patch no longer matches): nothing to release.
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
			errs = append(errs, err)
		}
	}
	return claimed, utilerrors.NewAggregate(errs)
}

func (c *rsController) canAdopt(ctx context.Context, rs *appsv1.ReplicaSet) error {
	fresh, _, err := c.kind.getFresh(ctx, rs.Namespace, rs.Name)
	if err != nil {
		return err
	}
	if fresh.UID != rs.UID {
		return fmt.Errorf("original %s %s/%s is gone: got uid %s, wanted %s", c.kind.gvk().Kind, rs.Namespace, rs.Name, fresh.UID, rs.UID)
	}
	if fresh.DeletionTimestamp != nil {
		return fmt.Errorf("%s/%s has just been deleted at %v", rs.Namespace, rs.Name, fresh.DeletionTimestamp)
	}
	return nil
}

func (c *rsController) patchOwner(ctx context.Context, pod *corev1.Pod, patch []byte) error {
	_, err := c.client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}

// The patches carry the pod's UID: if the pod was replaced by another of
// the same name, the server rejects the change of UID instead of
// adopting or releasing the wrong pod. ownerReferences merge by uid, and
// the API server refuses a second controller reference, so adoption
// cannot steal a pod another controller adopted meanwhile.

type patchMeta struct {
	Metadata struct {
		OwnerReferences []any     `json:"ownerReferences"`
		UID             types.UID `json:"uid"`
	} `json:"metadata"`
}

func ownerPatch(rs *appsv1.ReplicaSet, gvk schema.GroupVersionKind, podUID types.UID) []byte {
	var p patchMeta
	p.Metadata.OwnerReferences = []any{metav1.NewControllerRef(rs, gvk)}
	p.Metadata.UID = podUID
	b, _ := json.Marshal(p)
	return b
}

func releasePatch(ownerUID, podUID types.UID) []byte {
	var p patchMeta
	p.Metadata.OwnerReferences = []any{map[string]any{"$patch": "delete", "uid": ownerUID}}
	p.Metadata.UID = podUID
	b, _ := json.Marshal(p)
	return b
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
