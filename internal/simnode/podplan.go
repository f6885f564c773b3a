package simnode

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// The pure half of running pods: what a node does next with a pod, and
// the statuses it writes, from the pod, the node's memory of it and the
// time. The caller (pod.go) does the I/O.

// podMemory is what a node keeps of a pod beyond the API's copy: exact
// times (the API stores seconds) and the address it gave the pod. Only
// the worker holding the pod's key touches it.
type podMemory struct {
	uid       types.UID
	pool      *ipPool
	ip        netip.Addr // from pool; zero when none is held
	seenAt    time.Time  // arrived on a live node
	runStart  time.Time  // containers last started; zero: read the status
	exitedAt  time.Time  // crash-looping containers exited; zero: read the status
	stopAt    time.Time  // deletion seen: when the containers will have stopped
	confirmed bool       // the deletion was confirmed
	pullAt    time.Time  // ErrImagePull written; zero: not by this process
}

type podStep uint8

const (
	stepNone        podStep = iota // nothing to do until the pod changes
	stepWait                       // nothing yet: look again after podPlan.after
	stepStart                      // report the pod Running
	stepExit                       // containers exit with podPlan.exitCode
	stepRestart                    // crash-looping containers start again
	stepDeadline                   // activeDeadlineSeconds passed: fail the pod
	stepDelete                     // confirm the deletion
	stepPullError                  // report the images failing to pull (ErrImagePull)
	stepPullBackOff                // then backing off (ImagePullBackOff)
	stepReassert                   // write the status the node runs: readiness, observed generation, images
)

type podPlan struct {
	step     podStep
	after    time.Duration
	exitCode int32
}

// maxRestartBackoff caps the crash-loop back-off, as the kubelet's does.
const maxRestartBackoff = 5 * time.Minute

// planPod decides a pod's next step at now. It records in mem when it
// first sees the pod's deletion, so the stop time is counted from then.
func planPod(cfg *Config, pod *corev1.Pod, mem *podMemory, now time.Time) podPlan {
	if pod.DeletionTimestamp != nil {
		if mem.confirmed {
			// The zero-grace delete only marked a pod its finalizers
			// held; once they are gone, finish it off, as the kubelet
			// keeps doing while a stopped pod is still there.
			if len(pod.Finalizers) == 0 {
				return podPlan{step: stepDelete}
			}
			return podPlan{}
		}
		if mem.stopAt.IsZero() {
			stop := cfg.PodStopDelay
			if g := pod.DeletionGracePeriodSeconds; g != nil && time.Duration(*g)*time.Second < stop {
				stop = time.Duration(*g) * time.Second
			}
			mem.stopAt = now.Add(stop)
		}
		return at(now, mem.stopAt, podPlan{step: stepDelete})
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		return podPlan{}
	case corev1.PodRunning:
	default:
		if pullFails(pod) {
			return planPull(cfg, pod, mem, now)
		}
		return at(now, mem.seenAt.Add(cfg.PodStartDelay), podPlan{step: stepStart})
	}

	var next time.Time
	plan := podPlan{}
	if needsReassert(pod) {
		return podPlan{step: stepReassert}
	}
	if completes(pod) {
		if crashLooping(pod) {
			exited := mem.exitedAt
			if exited.IsZero() {
				exited = statusExitTime(pod)
			}
			next, plan.step = exited.Add(restartBackoff(cfg, restartCount(pod))), stepRestart
		} else {
			run, code := runSpec(cfg, pod)
			start := mem.runStart
			if start.IsZero() {
				start = statusStartTime(pod)
			}
			next, plan.step, plan.exitCode = start.Add(run), stepExit, code
		}
	}
	if ads := pod.Spec.ActiveDeadlineSeconds; ads != nil && pod.Status.StartTime != nil {
		deadline := pod.Status.StartTime.Add(time.Duration(*ads) * time.Second)
		if plan.step == stepNone || deadline.Before(next) {
			next, plan = deadline, podPlan{step: stepDeadline}
		}
	}
	if plan.step == stepNone {
		return plan
	}
	return at(now, next, plan)
}

// at is plan if its time has come, else a wait for it.
func at(now, when time.Time, plan podPlan) podPlan {
	if now.Before(when) {
		return podPlan{step: stepWait, after: when.Sub(now)}
	}
	return plan
}

// completes reports whether a pod's containers exit by themselves: those
// of a Job's pods, and of pods annotated with a run duration or an exit
// code, when their restartPolicy lets a pod finish. Other pods run until
// deleted, whatever their restartPolicy, as a server's containers do.
func completes(pod *corev1.Pod) bool {
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever && pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	if ref := metav1.GetControllerOf(pod); ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") {
		return true
	}
	_, timed := pod.Annotations[AnnotationRunDuration]
	_, coded := pod.Annotations[AnnotationExitCode]
	return timed || coded
}

// runSpec is how long a job pod's containers run and how they exit. An
// annotation that does not parse is ignored.
func runSpec(cfg *Config, pod *corev1.Pod) (time.Duration, int32) {
	run := cfg.JobDuration
	if s, ok := pod.Annotations[AnnotationRunDuration]; ok {
		if d, err := time.ParseDuration(s); err == nil && d >= 0 {
			run = d
		}
	}
	var code int32
	if s, ok := pod.Annotations[AnnotationExitCode]; ok {
		if c, err := strconv.ParseInt(s, 10, 32); err == nil {
			code = int32(c)
		}
	}
	return run, code
}

func restartBackoff(cfg *Config, restarts int32) time.Duration {
	d := cfg.RestartBackoff
	for range restarts {
		if d *= 2; d >= maxRestartBackoff {
			return maxRestartBackoff
		}
	}
	return min(d, maxRestartBackoff)
}

func crashLooping(pod *corev1.Pod) bool {
	for _, c := range pod.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil && w.Reason == reasonCrashLoopBackOff {
			return true
		}
	}
	return false
}

func restartCount(pod *corev1.Pod) int32 {
	var n int32
	for _, c := range pod.Status.ContainerStatuses {
		n = max(n, c.RestartCount)
	}
	return n
}

// statusStartTime is when the containers last started by the status: the
// fallback for a pod this process did not start.
func statusStartTime(pod *corev1.Pod) time.Time {
	var t time.Time
	if pod.Status.StartTime != nil {
		t = pod.Status.StartTime.Time
	}
	for _, c := range pod.Status.ContainerStatuses {
		if r := c.State.Running; r != nil && r.StartedAt.After(t) {
			t = r.StartedAt.Time
		}
	}
	return t
}

func statusExitTime(pod *corev1.Pod) time.Time {
	var t time.Time
	for _, c := range pod.Status.ContainerStatuses {
		if term := c.LastTerminationState.Terminated; term != nil && term.FinishedAt.After(t) {
			t = term.FinishedAt.Time
		}
	}
	return t
}

// Reasons the kubelet writes.
const (
	reasonCrashLoopBackOff = "CrashLoopBackOff"
	reasonCompleted        = "Completed"
	reasonError            = "Error"
)

// runningStatus is the status of a pod whose containers have all started:
// init containers completed (sidecars running), every container running
// and ready, the pod Ready unless a readiness gate says otherwise.
func runningStatus(pod *corev1.Pod, now time.Time, hostIP, podIP string) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	ts := metav1.NewTime(now)
	st.Phase = corev1.PodRunning
	st.ObservedGeneration = pod.Generation
	st.HostIP, st.HostIPs = hostIP, []corev1.HostIP{{IP: hostIP}}
	st.PodIP, st.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	if st.StartTime == nil {
		st.StartTime = &ts
	}
	st.InitContainerStatuses = nil
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			st.InitContainerStatuses = append(st.InitContainerStatuses, runningContainer(pod, c, 0, ts))
			continue
		}
		st.InitContainerStatuses = append(st.InitContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: containerID(pod.UID, c.Name, 0),
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				Reason: reasonCompleted, StartedAt: ts, FinishedAt: ts, ContainerID: containerID(pod.UID, c.Name, 0)}},
			Ready: true, Started: ptr.To(false),
		})
	}
	st.ContainerStatuses = nil
	for i := range pod.Spec.Containers {
		st.ContainerStatuses = append(st.ContainerStatuses, runningContainer(pod, &pod.Spec.Containers[i], 0, ts))
	}
	setReadyConditions(pod, &st, ts)
	return st
}

func runningContainer(pod *corev1.Pod, c *corev1.Container, restarts int32, ts metav1.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), ContainerID: containerID(pod.UID, c.Name, restarts),
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ts}},
		Ready: true, Started: ptr.To(true), RestartCount: restarts,
	}
}

// setReadyConditions marks a pod with running containers ready, in the
// kubelet's condition order.
func setReadyConditions(pod *corev1.Pod, st *corev1.PodStatus, ts metav1.Time) {
	gen := pod.Generation
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionTrue}, ts, gen)
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, ts, gen)
	probeFails := pod.Annotations[AnnotationReady] == "false"
	for i := range st.ContainerStatuses {
		st.ContainerStatuses[i].Ready = !probeFails
	}
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	containersReady := corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}
	if probeFails {
		msg := "containers with unready status: [" + containerNames(pod) + "]"
		ready = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: msg}
		containersReady = corev1.PodCondition{Type: corev1.ContainersReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady", Message: msg}
	} else if msg := unreadyGates(pod, st); msg != "" {
		ready = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ReadinessGatesNotReady", Message: msg}
	}
	setPodCondition(st, ready, ts, gen)
	setPodCondition(st, containersReady, ts, gen)
	setPodCondition(st, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, ts, gen)
}

// unreadyGates explains, as the kubelet does, which readiness gates hold
// the pod back; "" when none does.
func unreadyGates(pod *corev1.Pod, st *corev1.PodStatus) string {
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		found := false
		for _, c := range st.Conditions {
			if c.Type != g.ConditionType {
				continue
			}
			found = true
			if c.Status != corev1.ConditionTrue {
				msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, c.Status))
			}
		}
		if !found {
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		}
	}
	return strings.Join(msgs, ", ")
}

// setPodCondition sets c in st: in place if st has one of its type (its
// transition time kept when the status is the same), else at the end.
func setPodCondition(st *corev1.PodStatus, c corev1.PodCondition, ts metav1.Time, gen int64) {
	c.LastTransitionTime, c.ObservedGeneration = ts, gen
	for i := range st.Conditions {
		if st.Conditions[i].Type != c.Type {
			continue
		}
		if st.Conditions[i].Status == c.Status {
			c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			c.LastProbeTime = st.Conditions[i].LastProbeTime
		}
		st.Conditions[i] = c
		return
	}
	st.Conditions = append(st.Conditions, c)
}

// exitedStatus is the status after a job pod's containers exit with code:
// Succeeded, Failed, or — restartPolicy OnFailure and a non-zero code —
// still Running with the containers waiting out a crash-loop back-off.
func exitedStatus(cfg *Config, pod *corev1.Pod, now time.Time, code int32) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	ts := metav1.NewTime(now)
	terminal := code == 0 || pod.Spec.RestartPolicy == corev1.RestartPolicyNever
	reason := reasonCompleted
	if code != 0 {
		reason = reasonError
	}
	backoff := restartBackoff(cfg, restartCount(pod))
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		term := terminated(cs, code, reason, ts)
		cs.Ready, cs.Started = false, ptr.To(false)
		if terminal {
			cs.State = corev1.ContainerState{Terminated: term}
			continue
		}
		cs.LastTerminationState = corev1.ContainerState{Terminated: term}
		cs.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff,
			Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)", backoff, cs.Name, pod.Name, pod.Namespace, pod.UID)}}
	}
	if !terminal {
		setUnready(pod, &st, ts, "ContainersNotReady", "containers with unready status: ["+containerNames(pod)+"]")
		return st
	}
	stopSidecars(&st, ts)
	if code == 0 {
		st.Phase = corev1.PodSucceeded
		setUnready(pod, &st, ts, "PodCompleted", "")
	} else {
		st.Phase = corev1.PodFailed
		setUnready(pod, &st, ts, "PodFailed", "")
	}
	setPodCondition(&st, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse}, ts, pod.Generation)
	return st
}

// restartedStatus is a crash-looping pod's status once its containers run
// again.
func restartedStatus(pod *corev1.Pod, now time.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	ts := metav1.NewTime(now)
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		if cs.State.Running != nil {
			continue
		}
		last := cs.LastTerminationState
		*cs = runningContainer(pod, containerSpec(pod, cs.Name), cs.RestartCount+1, ts)
		cs.LastTerminationState = last
	}
	setReadyConditions(pod, &st, ts)
	return st
}

// deadlineStatus fails a pod that ran past activeDeadlineSeconds, its
// containers killed.
func deadlineStatus(pod *corev1.Pod, now time.Time) corev1.PodStatus {
	st := *pod.Status.DeepCopy()
	ts := metav1.NewTime(now)
	st.Phase = corev1.PodFailed
	st.Reason = "DeadlineExceeded"
	st.Message = "Pod was active on the node longer than the specified deadline"
	for i := range st.ContainerStatuses {
		cs := &st.ContainerStatuses[i]
		if cs.State.Terminated == nil {
			cs.State = corev1.ContainerState{Terminated: terminated(cs, 137, reasonError, ts)}
		}
		cs.Ready, cs.Started = false, ptr.To(false)
	}
	stopSidecars(&st, ts)
	setUnready(pod, &st, ts, "PodFailed", "")
	setPodCondition(&st, corev1.PodCondition{Type: corev1.PodReadyToStartContainers, Status: corev1.ConditionFalse}, ts, pod.Generation)
	return st
}

func terminated(cs *corev1.ContainerStatus, code int32, reason string, ts metav1.Time) *corev1.ContainerStateTerminated {
	started := ts
	if r := cs.State.Running; r != nil {
		started = r.StartedAt
	}
	return &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason, StartedAt: started, FinishedAt: ts, ContainerID: cs.ContainerID}
}

// stopSidecars ends running sidecar (restartable init) containers when the
// pod finishes.
func stopSidecars(st *corev1.PodStatus, ts metav1.Time) {
	for i := range st.InitContainerStatuses {
		cs := &st.InitContainerStatuses[i]
		if cs.State.Running != nil {
			cs.State = corev1.ContainerState{Terminated: terminated(cs, 0, reasonCompleted, ts)}
			cs.Ready, cs.Started = false, ptr.To(false)
		}
	}
}

func setUnready(pod *corev1.Pod, st *corev1.PodStatus, ts metav1.Time, reason, message string) {
	for _, typ := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		setPodCondition(st, corev1.PodCondition{Type: typ, Status: corev1.ConditionFalse, Reason: reason, Message: message}, ts, pod.Generation)
	}
}

func containerNames(pod *corev1.Pod) string {
	names := make([]string, len(pod.Spec.Containers))
	for i, c := range pod.Spec.Containers {
		names[i] = c.Name
	}
	return strings.Join(names, " ")
}

func containerSpec(pod *corev1.Pod, name string) *corev1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	return &corev1.Container{Name: name}
}

// containerID names a container run: simnode://<64 hex>, one per pod,
// container and restart, as a runtime's IDs are.
func containerID(uid types.UID, name string, restarts int32) string {
	sum := sha256.Sum256(fmt.Appendf(nil, "%s/%s/%d", uid, name, restarts))
	return "simnode://" + hex.EncodeToString(sum[:])
}

// imageID is the image's repository pinned to a digest made up from its
// reference, the shape a runtime reports.
func imageID(image string) string {
	if strings.Contains(image, "@") {
		return image
	}
	repo := image
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	sum := sha256.Sum256([]byte(image))
	return repo + "@sha256:" + hex.EncodeToString(sum[:])
}
