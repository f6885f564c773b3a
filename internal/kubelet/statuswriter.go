package kubelet

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The status writer: the pod's status goes to the status subresource
// only when it differs from what the API holds (compared as the API
// stores it: times in whole seconds), and a deleted pod, once nothing of
// it runs, is removed from the API with grace period 0 and a UID
// precondition — the last step of a graceful deletion, as upstream's
// status manager does it.

// statusBytes is a status as the API would store it, for comparison.
func statusBytes(st *corev1.PodStatus) []byte {
	b, _ := json.Marshal(st)
	return b
}

// writeStatus computes pod's status from obs and writes it if it
// changed. On a conflict it reads the pod again and retries.
func (k *Kubelet) writeStatus(ctx context.Context, pod *corev1.Pod, obs podObserved, waits map[string]waiting, terminated bool) error {
	return k.writeFailure(ctx, pod, obs, waits, terminated, "", "")
}

// writeFailure is writeStatus, failing the pod with reason and message
// when reason is set.
func (k *Kubelet) writeFailure(ctx context.Context, pod *corev1.Pod, obs podObserved, waits map[string]waiting, terminated bool, reason, message string) error {
	pods := k.client().CoreV1().Pods(pod.Namespace)
	var ids []string
	for _, c := range obs.Containers {
		ids = append(ids, c.ID)
	}
	probes, kills := k.probes.snapshot(ids)
	for try := 0; ; try++ {
		st := computeStatus(statusInput{Pod: pod, Observed: obs, Waiting: waits, Now: k.cfg.Clock.Now(), HostIPs: k.hostIPs(),
			RuntimeName: k.runtimeName, Terminated: terminated, Probes: probes, KillMessages: kills, Reason: reason, Message: message})
		// The kubelet's own view, newer than its informer's (logs read it).
		k.statuses.Store(pod.UID, &st)
		if string(statusBytes(&st)) == string(statusBytes(&pod.Status)) {
			return nil
		}
		np := pod.DeepCopy()
		np.Status = st
		_, err := pods.UpdateStatus(ctx, np, metav1.UpdateOptions{})
		switch {
		case err == nil:
			return nil
		case apierrors.IsNotFound(err):
			return nil // deleted meanwhile: the worker learns it from the informer
		case apierrors.IsConflict(err) && try < 3:
			cur, gerr := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if gerr != nil {
				return fmt.Errorf("status of %s/%s: %w", pod.Namespace, pod.Name, gerr)
			}
			if cur.UID != pod.UID {
				return nil
			}
			pod = cur
		default:
			k.cfg.Logger.Warn("cannot write pod status", "pod", pod.Namespace+"/"+pod.Name, "err", err)
			return fmt.Errorf("status of %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
}

// writeRejection writes a rejected pod's final status.
func (k *Kubelet) writeRejection(ctx context.Context, pod *corev1.Pod, reason, message string) {
	np := pod.DeepCopy()
	np.Status = corev1.PodStatus{Phase: corev1.PodFailed, Reason: reason, Message: message, QOSClass: podQOS(pod),
		Conditions: pod.Status.Conditions, StartTime: pod.Status.StartTime}
	if _, err := k.client().CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, np, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		k.cfg.Logger.Warn("cannot write a rejected pod's status", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}

// podStatus is the status the kubelet last computed for pod, else the
// API's.
func (k *Kubelet) podStatus(pod *corev1.Pod) *corev1.PodStatus {
	if st, ok := k.statuses.Load(pod.UID); ok {
		return st.(*corev1.PodStatus)
	}
	return &pod.Status
}

// deletePod finishes a graceful deletion: nothing of the pod runs, so
// the API may drop it now.
func (k *Kubelet) deletePod(ctx context.Context, pod *corev1.Pod) error {
	uid := pod.UID
	err := k.client().CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr.To(int64(0)),
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Conflict: a pod of the same name but another UID; ours is gone.
		return nil
	}
	return err
}
