package simnode

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// processPod runs one pod key through syncPod. Failed writes come back
// with per-pod exponential back-off; a pod waiting for its time comes
// back then.
func (f *Fleet) processPod(ctx context.Context, key string) {
	after, err := f.syncPod(ctx, key)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		f.stats.errors.Add(1)
		f.logRetry(err, f.podQueue.NumRequeues(key), "pod", key)
		f.podQueue.AddRateLimited(key)
		return
	}
	f.podQueue.Forget(key)
	if after > 0 {
		f.podQueue.AddAfter(key, after)
	}
}

// syncPod brings one pod a step along, level-based: it reads the pod from
// the watch cache, plans with planPod and writes at most once. Each write
// comes back as a watch event, which runs the pod again for its next step.
func (f *Fleet) syncPod(ctx context.Context, key string) (time.Duration, error) {
	obj, exists, err := f.podInformer.GetIndexer().GetByKey(key)
	if err != nil {
		return 0, err
	}
	if !exists {
		f.forgetPod(key)
		return 0, nil
	}
	pod := obj.(*corev1.Pod)
	n := f.byName[pod.Spec.NodeName]
	if n == nil {
		f.forgetPod(key)
		return 0, nil
	}
	if !n.alive() {
		// A dead machine does nothing; the node picks its pods up again
		// when it registers or starts.
		return 0, nil
	}
	now := f.cfg.Clock.Now()
	mem := f.memory(key, pod, n, now)
	if p := pod.Status.Phase; p == corev1.PodSucceeded || p == corev1.PodFailed {
		release(mem)
	}
	plan := planPod(&f.cfg, pod, mem, now)
	var st corev1.PodStatus
	switch plan.step {
	case stepNone:
		return 0, nil
	case stepWait:
		return plan.after, nil
	case stepDelete:
		return 0, f.confirmDeletion(ctx, pod, mem)
	case stepStart, stepPullError, stepPullBackOff:
		podIP := n.ip
		if !pod.Spec.HostNetwork {
			if !mem.ip.IsValid() {
				ip, ok := mem.pool.allocate()
				if !ok {
					return 0, fmt.Errorf("node %s has no free pod IP", n.name)
				}
				mem.ip = ip
			}
			podIP = mem.ip
		}
		switch plan.step {
		case stepStart:
			st = runningStatus(pod, now, n.ip.String(), podIP.String())
		case stepPullError:
			st = pullStatus(pod, now, n.ip.String(), podIP.String(), reasonErrImagePull)
		default:
			st = pullStatus(pod, now, n.ip.String(), podIP.String(), reasonImagePullBackOff)
		}
	case stepReassert:
		st = reassertedStatus(pod, now)
	case stepExit:
		st = exitedStatus(&f.cfg, pod, now, plan.exitCode)
	case stepRestart:
		st = restartedStatus(pod, now)
	case stepDeadline:
		st = deadlineStatus(pod, now)
	}
	out := pod.DeepCopy()
	out.Status = st
	if _, err := f.cfg.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, out, metav1.UpdateOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			f.forgetPod(key)
			return 0, nil
		}
		return 0, fmt.Errorf("pod status: %w", err)
	}
	switch plan.step {
	case stepStart:
		mem.runStart = now
		f.stats.podsStarted.Add(1)
	case stepPullError:
		mem.pullAt = now
	case stepRestart:
		mem.runStart, mem.exitedAt = now, time.Time{}
	case stepExit, stepDeadline:
		mem.exitedAt = now
		f.stats.podsFinished.Add(1)
		if st.Phase != corev1.PodRunning {
			release(mem)
		}
	}
	return 0, nil
}

// confirmDeletion removes a deleted pod whose containers have stopped, as
// the kubelet does: a zero-grace delete, only of the pod it ran (by UID).
func (f *Fleet) confirmDeletion(ctx context.Context, pod *corev1.Pod, mem *podMemory) error {
	err := f.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To[int64](0),
		Preconditions:      metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if apierrors.IsConflict(err) {
		// A conflict is either the UID precondition (a new pod of the same
		// name: ours is gone) or a write that raced the delete's own
		// update (a pod held by a finalizer is updated, not removed):
		// only the first means there is nothing left to confirm.
		cur, gerr := f.cfg.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if gerr == nil && cur.UID == pod.UID && (cur.DeletionGracePeriodSeconds == nil || *cur.DeletionGracePeriodSeconds != 0) {
			return fmt.Errorf("confirm deletion: %w", err) // tried again
		}
		mem.confirmed = true
		release(mem)
		return nil
	}
	switch {
	case err == nil:
		f.stats.podsDeleted.Add(1)
	case apierrors.IsNotFound(err):
		// Gone already: nothing of ours is left to confirm.
	default:
		return fmt.Errorf("confirm deletion: %w", err)
	}
	mem.confirmed = true
	release(mem)
	return nil
}

// memory returns the node's memory of pod, made fresh for a pod it has
// not seen (or a new pod of the same name). A pod already holding an
// address from this node's range — one started before the fleet
// restarted — keeps it.
func (f *Fleet) memory(key string, pod *corev1.Pod, n *simNode, now time.Time) *podMemory {
	f.podsMu.Lock()
	defer f.podsMu.Unlock()
	mem := f.pods[key]
	if mem != nil && mem.uid == pod.UID {
		return mem
	}
	if mem != nil {
		release(mem)
	}
	n.mu.Lock()
	pool := n.pool
	n.mu.Unlock()
	mem = &podMemory{uid: pod.UID, pool: pool, seenAt: now}
	if p := pod.Status.Phase; p != corev1.PodSucceeded && p != corev1.PodFailed && !pod.Spec.HostNetwork {
		if ip, err := netip.ParseAddr(pod.Status.PodIP); err == nil && pool.reserve(ip) {
			mem.ip = ip
		}
	}
	f.pods[key] = mem
	return mem
}

func (f *Fleet) forgetPod(key string) {
	f.podsMu.Lock()
	mem := f.pods[key]
	delete(f.pods, key)
	f.podsMu.Unlock()
	if mem != nil {
		release(mem)
	}
}

// release returns the pod's address to its node.
func release(mem *podMemory) {
	if mem.ip.IsValid() {
		mem.pool.release(mem.ip)
		mem.ip = netip.Addr{}
	}
}
