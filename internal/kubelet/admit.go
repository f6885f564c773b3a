package kubelet

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Admission: before a pod new to this kubelet starts, the kubelet checks
// that it fits beside the pods it already admitted — the pods capacity,
// then cpu, memory and ephemeral-storage requests against allocatable —
// as upstream's kubelet does for pods bound without the scheduler (or
// past it). A pod that does not fit is rejected for good: phase Failed,
// reason OutOf<resource>. Pods the runtime already runs (a restarted
// kubelet) are admitted as they are.

// admitPod is the reason and message refusing pod beside admitted, or
// empty strings when it fits.
func admitPod(pod *corev1.Pod, admitted []*corev1.Pod, allocatable corev1.ResourceList) (string, string) {
	if capPods, ok := allocatable[corev1.ResourcePods]; ok && int64(len(admitted))+1 > capPods.Value() {
		return "OutOfpods", fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", len(admitted), capPods.Value())
	}
	want := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
		req, ok := want[name]
		if !ok || req.IsZero() {
			continue
		}
		capacity, ok := allocatable[name]
		if !ok {
			continue
		}
		value := func(l corev1.ResourceList) int64 {
			q := l[name]
			if name == corev1.ResourceCPU {
				return q.MilliValue()
			}
			return q.Value()
		}
		used := int64(0)
		for _, p := range admitted {
			used += value(resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}))
		}
		if r, c := value(want), value(corev1.ResourceList{name: capacity}); used+r > c {
			return "OutOf" + string(name), fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", name, r, used, c)
		}
	}
	return "", ""
}

// admit decides, once per pod, whether it may start; a rejected pod's
// status is written Failed. It reports whether the pod may go on.
func (k *Kubelet) admit(ctx context.Context, pod *corev1.Pod, obs podObserved) bool {
	k.mu.Lock()
	if k.admitted[pod.UID] {
		k.mu.Unlock()
		return true
	}
	reason, message := "", ""
	if obs.empty() && len(pod.Status.ContainerStatuses) == 0 {
		var others []*corev1.Pod
		for uid := range k.admitted {
			if p := k.podByUID(uid); p != nil && p.DeletionTimestamp == nil && !podIsTerminal(p) {
				others = append(others, p)
			}
		}
		slices.SortFunc(others, func(a, b *corev1.Pod) int { return a.CreationTimestamp.Compare(b.CreationTimestamp.Time) })
		reason, message = admitPod(pod, others, k.allocatable())
	}
	if reason == "" {
		k.admitted[pod.UID] = true
	}
	k.mu.Unlock()
	if reason == "" {
		return true
	}
	k.cfg.Logger.Info("pod rejected", "pod", pod.Namespace+"/"+pod.Name, "reason", reason, "message", message)
	k.event(pod, "", "Warning", reason, "%s", message)
	k.writeRejection(ctx, pod, reason, "Pod was rejected: "+message)
	return false
}

// forgetAdmitted drops a gone pod from the admitted set.
func (k *Kubelet) forgetAdmitted(uid types.UID) {
	k.mu.Lock()
	delete(k.admitted, uid)
	k.mu.Unlock()
}
