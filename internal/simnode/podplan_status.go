package simnode

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// More of the pure half (see podplan.go): the steps that keep the API's
// copy of a pod true to what the node runs, and image pulls that fail.
//
// A kubelet's status manager writes a pod's status again whenever the
// API's copy differs from what it knows. That is what brings pods back
// after an outage: while the node was unreachable the node lifecycle
// controller marked its pods Ready=False, and once the node is back its
// kubelet writes them Ready again — without it a Deployment stays
// unavailable and its Service without endpoints. The same pass reports
// status.observedGeneration for the latest spec (a kubelet of 1.36 sets it
// after every spec change) and restarts containers whose image was changed.
// Any node agent, simulated or real, must do the same: this file is the
// simulated node's version of that contract, needsReassert its test.

// Reasons of image pulls that fail, as the kubelet writes them.
const (
	reasonErrImagePull     = "ErrImagePull"
	reasonImagePullBackOff = "ImagePullBackOff"
)

// badImageWords mark images that cannot exist: the names upstream's e2e
// tests give the images they expect to fail.
var badImageWords = []string{"invalid", "nonexistent", "non-existent", "doesnotexist"}

// pullFails reports whether a pod's images fail to pull: it is annotated
// so, or one of its containers names an image that cannot exist.
func pullFails(pod *corev1.Pod) bool {
	if _, ok := pod.Annotations[AnnotationImagePullError]; ok {
		return true
	}
	for i := range pod.Spec.Containers {
		if badImage(pod, pod.Spec.Containers[i].Image) {
			return true
		}
	}
	return false
}

func badImage(pod *corev1.Pod, image string) bool {
	if _, ok := pod.Annotations[AnnotationImagePullError]; ok {
		return true
	}
	image = strings.ToLower(image)
	for _, w := range badImageWords {
		if strings.Contains(image, w) {
			return true
		}
	}
	return false
}

// pullState is the image-pull reason the status shows, "" for none.
func pullState(pod *corev1.Pod) string {
	for _, c := range pod.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil && (w.Reason == reasonErrImagePull || w.Reason == reasonImagePullBackOff) {
			return w.Reason
		}
	}
	return ""
}

// planPull moves a pod whose images fail to pull along: ErrImagePull
// after the start delay, ImagePullBackOff a start delay later, and then
// nothing (the back-off is where such a pod stays) but to report a new
// spec's generation.
func planPull(cfg *Config, pod *corev1.Pod, mem *podMemory, now time.Time) podPlan {
	switch pullState(pod) {
	case "":
		return at(now, mem.seenAt.Add(cfg.PodStartDelay), podPlan{step: stepPullError})
	case reasonErrImagePull:
		if mem.pullAt.IsZero() {
			return podPlan{step: stepPullBackOff}
		}
		return at(now, mem.pullAt.Add(cfg.PodStartDelay), podPlan{step: stepPullBackOff})
	}
	if pod.Status.ObservedGeneration != pod.Generation {
		return podPlan{step: stepPullBackOff}
	}
	return podPlan{}
}

// pullStatus is the status of a pod whose images fail to pull: the pod
// Pending with its sandbox up (addresses, start time), the containers with
// a bad image waiting with reason, the others running.
func pullStatus(pod *corev1.Pod, now time.Time, hostIP, podIP, reason string) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	ts := metav1.NewTime(now)
	st.Phase = corev1.PodPending
	st.ObservedGeneration = pod.Generation
	st.HostIP, st.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	st.PodIP, st.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	if st.StartTime == nil {
		st.StartTime = &ts
	}
	var waiting []string
	st.ContainerStatuses = nil
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if !badImage(pod, c.Image) {
			st.ContainerStatuses = append(st.ContainerStatuses, runningContainer(pod, c, 0, ts))
			continue
		}
		waiting = append(waiting, c.Name)
		st.ContainerStatuses = append(st.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, Started: ptr.To(false),
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: pullMessage(pod, c.Image, reason)}},
		})
	}
	gen := pod.Generation
	msg := "containers with unready status: [" + strings.Join(waiting, " ") + "]"
	setPodCondition(&st, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}, ts, gen)
	setPodCondition(&st, corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, ts, gen)
	setPodCondition(&st, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: msg}, ts, gen)
	setPodCondition(&st, corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: msg}, ts, gen)
	setPodCondition(&st, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, ts, gen)
	return st
}

func pullMessage(pod *corev1.Pod, image, reason string) string {
	if reason == reasonImagePullBackOff {
		return fmt.Sprintf("Back-off pulling image %q", image)
	}
	if msg := pod.Annotations[AnnotationImagePullError]; msg != "" {
		return msg
	}
	return fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: %q: not found", image, image, image)
}

// needsReassert reports whether a running pod's status in the API differs
// from what its node runs: a generation not yet observed, a container
// whose image the spec changed, or — every container running — readiness
// conditions another writer changed (the node lifecycle controller's
// Ready=False during an outage), or that AnnotationReady changes.
func needsReassert(pod *corev1.Pod) bool {
	if pod.Status.ObservedGeneration != pod.Generation {
		return true
	}
	if !allRunning(pod) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if c := containerSpec(pod, cs.Name); c.Image != "" && c.Image != cs.Image {
			return true
		}
	}
	want := pod.Status.DeepCopy()
	setReadyConditions(pod, want, metav1.Now())
	for i, cs := range want.ContainerStatuses {
		if cs.Ready != pod.Status.ContainerStatuses[i].Ready {
			return true
		}
	}
	for _, w := range want.Conditions {
		found := false
		for _, c := range pod.Status.Conditions {
			if c.Type == w.Type {
				found = true
				if c.Status != w.Status {
					return true
				}
			}
		}
		if !found {
			return true
		}
	}
	return false
}

// allRunning reports whether every container of the spec runs by the
// status.
func allRunning(pod *corev1.Pod) bool {
	if len(pod.Status.ContainerStatuses) != len(pod.Spec.Containers) {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.State.Running == nil {
			return false
		}
	}
	return true
}

// reassertedStatus is the status the node runs: the spec's generation
// observed, containers whose image changed restarted with the new one,
// and, every container running, the pod's readiness as the node sees it.
func reassertedStatus(pod *corev1.Pod, now time.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	ts := metav1.NewTime(now)
	st.ObservedGeneration = pod.Generation
	if !allRunning(pod) {
		return st
	}
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		c := containerSpec(pod, cs.Name)
		if c.Image == "" || c.Image == cs.Image {
			continue
		}
		// The kubelet kills a container whose spec changed and starts it
		// again from the new image.
		last := corev1.ContainerState{Terminated: terminated(cs, 0, reasonCompleted, ts)}
		*cs = runningContainer(pod, c, cs.RestartCount+1, ts)
		cs.LastTerminationState = last
	}
	setReadyConditions(pod, &st, ts)
	return st
}
