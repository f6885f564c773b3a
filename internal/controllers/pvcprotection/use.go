package pvcprotection

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Finalizer is what the StorageObjectInUseProtection admission plugin
// puts on every new claim, and what this controller adds to claims
// created before the plugin ran and removes once nothing uses them.
const Finalizer = "kubernetes.io/pvc-protection"

// action is what a claim needs from the controller.
type action int

const (
	// actNone: nothing to do (the claim is protected and not being
	// deleted, or is being deleted but still in use).
	actNone action = iota
	// actAdd: the claim lacks the finalizer and is not being deleted.
	actAdd
	// actRemove: the claim is being deleted and no pod uses it.
	actRemove
)

func (a action) String() string {
	switch a {
	case actAdd:
		return "add finalizer"
	case actRemove:
		return "remove finalizer"
	}
	return "none"
}

// plan decides what claim needs, given the pods of its namespace that
// might use it (any superset will do: pods that do not use it are
// ignored). It is the controller's whole policy, with no I/O: the
// reconciler asks it once with the informer's pods and, when it says
// actRemove, once more with a live list before acting on it.
func plan(claim *corev1.PersistentVolumeClaim, pods []*corev1.Pod) action {
	if deletionCandidate(claim) {
		for _, p := range pods {
			if podUsesClaim(p, claim) {
				return actNone
			}
		}
		return actRemove
	}
	if needsFinalizer(claim) {
		return actAdd
	}
	return actNone
}

// deletionCandidate: being deleted and still held by our finalizer.
func deletionCandidate(claim *corev1.PersistentVolumeClaim) bool {
	return claim.DeletionTimestamp != nil && slices.Contains(claim.Finalizers, Finalizer)
}

// needsFinalizer: a live claim without the finalizer (one made before
// the admission plugin was on, or with the plugin off). A claim already
// being deleted is left alone: a finalizer cannot be added then.
func needsFinalizer(claim *corev1.PersistentVolumeClaim) bool {
	return claim.DeletionTimestamp == nil && !slices.Contains(claim.Finalizers, Finalizer)
}

// podUsesClaim reports whether pod keeps claim from going away, by
// upstream's rules:
//
//   - only a pod bound to a node counts: an unscheduled pod has no
//     mounts, and neither the scheduler nor a kubelet will start a pod
//     whose claim is being deleted;
//   - a volume naming the claim (persistentVolumeClaim.claimName) holds
//     it whatever the pod's phase: a Succeeded or Failed pod may still
//     have the volume mounted while its kubelet tears it down, so the
//     claim waits until the pod object is gone;
//   - a generic ephemeral volume holds the claim named
//     "<pod>-<volume>" only if the pod controls that claim (a claim of
//     that name made by someone else is not the pod's) and the pod is
//     not shut down: a pod deleted with grace period 0 is done with its
//     volumes, and waiting for it could deadlock with a pod finalizer
//     that itself waits for the claim to go.
func podUsesClaim(pod *corev1.Pod, claim *corev1.PersistentVolumeClaim) bool {
	if pod.Namespace != claim.Namespace || pod.Spec.NodeName == "" {
		return false
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			if v.PersistentVolumeClaim.ClaimName == claim.Name {
				return true
			}
		case v.Ephemeral != nil:
			if ephemeralClaimName(pod, v) == claim.Name && !podShutDown(pod) && metav1.IsControlledBy(claim, pod) {
				return true
			}
		}
	}
	return false
}

// podShutDown: deleted with grace period 0, either forced or confirmed
// by its kubelet once it had stopped everything; the object only waits
// for its finalizers now.
func podShutDown(pod *corev1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

// ephemeralClaimName is the claim the ephemeral volume controller makes
// for a pod's generic ephemeral volume.
func ephemeralClaimName(pod *corev1.Pod, v *corev1.Volume) string {
	return pod.Name + "-" + v.Name
}

// claimKeys are the "namespace/name" keys of every claim pod's volumes
// name, directly or as generic ephemeral volumes: the pod index's keys,
// and the claims to look at again when the pod changes or goes.
func claimKeys(pod *corev1.Pod) []string {
	var keys []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		switch {
		case v.PersistentVolumeClaim != nil:
			keys = append(keys, pod.Namespace+"/"+v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			keys = append(keys, pod.Namespace+"/"+ephemeralClaimName(pod, v))
		}
	}
	return keys
}
