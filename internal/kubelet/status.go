package kubelet

import (
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The pod status a kubelet writes, computed — like the plan — from the
// pod, what the runtime holds and the waiting reasons of this sync, with
// no I/O. statuswriter.go sends it to the API when it differs from what
// the API holds.
//
// As upstream's kubelet:
//   - a running container is Running; one that exited and will start
//     again is Waiting (CrashLoopBackOff, ...) with the exit as its
//     lastState; one that exited for good is Terminated (Completed,
//     Error, OOMKilled);
//   - the phase is Pending until init containers finished (sidecars
//     started) and no container waits for its first start, Running
//     while any runs or will restart, then Succeeded (all exited 0) or
//     Failed — sidecars' exits never count;
//   - a sidecar's started and ready come from its probes, as a main
//     container's; its readiness is part of ContainersReady and Ready;
//   - a pod the kubelet stopped for good (deleted) is terminal: Running
//     becomes Failed unless every container exited 0;
//   - conditions PodReadyToStartContainers, Initialized, ContainersReady
//     and Ready are the kubelet's; others (PodScheduled, readiness gates,
//     DisruptionTarget) are kept as they are.

// statusInput is everything a status reads.
type statusInput struct {
	Pod         *corev1.Pod
	Observed    podObserved
	Waiting     map[string]waiting
	Now         time.Time
	HostIPs     []string
	RuntimeName string
	// Terminated: the pod was stopped for good; its phase must end.
	Terminated bool
	// Probes are the current probe results by container instance
	// (probe.go); a missing one has its initial value.
	Probes map[probeKey]probeResult
	// KillMessages: why the kubelet killed a container (a failed probe),
	// by container ID, for its terminated state.
	KillMessages map[string]string
	// Reason and Message, when set, fail the pod with them (upstream's
	// evictions and DeadlineExceeded).
	Reason, Message string
}

// Conditions the kubelet owns.
var kubeletConditions = []corev1.PodConditionType{
	corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.ContainersReady, corev1.PodReady,
}

// computeStatus is the status the kubelet reports for in.Pod.
func computeStatus(in statusInput) corev1.PodStatus {
	if len(in.KillMessages) > 0 {
		// Not the caller's: its slice is shared.
		in.Observed.Containers = slices.Clone(in.Observed.Containers)
		for i := range in.Observed.Containers {
			c := &in.Observed.Containers[i]
			if msg, ok := in.KillMessages[c.ID]; ok && c.Message == "" {
				c.Message = msg
			}
		}
	}
	pod, obs := in.Pod, &in.Observed
	old := &pod.Status
	st := corev1.PodStatus{
		QOSClass:              old.QOSClass,
		StartTime:             old.StartTime,
		NominatedNodeName:     old.NominatedNodeName,
		Resize:                old.Resize,
		ResourceClaimStatuses: old.ResourceClaimStatuses,
	}
	if st.QOSClass == "" {
		st.QOSClass = qosClass(pod)
	}
	if st.StartTime == nil {
		st.StartTime = ptr.To(metav1.NewTime(in.Now))
	}
	for _, ip := range in.HostIPs {
		st.HostIPs = append(st.HostIPs, corev1.HostIP{IP: ip})
	}
	if len(in.HostIPs) > 0 {
		st.HostIP = in.HostIPs[0]
	}
	sb := obs.latestSandbox()
	switch {
	case pod.Spec.HostNetwork && len(in.HostIPs) > 0:
		// On the host's network the pod's address is the node's.
		for _, ip := range in.HostIPs {
			st.PodIPs = append(st.PodIPs, corev1.PodIP{IP: ip})
		}
		st.PodIP = in.HostIPs[0]
	case sb != nil && len(sb.IPs) > 0:
		for _, ip := range sb.IPs {
			st.PodIPs = append(st.PodIPs, corev1.PodIP{IP: ip})
		}
		st.PodIP = sb.IPs[0]
	default:
		// A stopped sandbox reports no address; the pod keeps the one
		// it had.
		st.PodIP, st.PodIPs = old.PodIP, slices.Clone(old.PodIPs)
	}

	hasInit := len(pod.Spec.InitContainers) > 0
	st.InitContainerStatuses = containerStatuses(in, pod.Spec.InitContainers, old.InitContainerStatuses, hasInit, true)
	st.ContainerStatuses = containerStatuses(in, pod.Spec.Containers, old.ContainerStatuses, hasInit, false)
	st.Phase = podPhase(pod, &st, in.Terminated)
	if in.Reason != "" {
		st.Phase = corev1.PodFailed
	}
	if podIsTerminal(pod) {
		st.Phase = old.Phase // terminal never goes back
	}
	st.Conditions = podConditions(in, &st, sb)
	st.Reason, st.Message = old.Reason, old.Message
	if in.Reason != "" && !podIsTerminal(pod) {
		st.Reason, st.Message = in.Reason, in.Message
	}
	return st
}

// containerStatuses are the statuses of specs, in spec order.
func containerStatuses(in statusInput, specs []corev1.Container, old []corev1.ContainerStatus, hasInit, init bool) []corev1.ContainerStatus {
	if len(specs) == 0 {
		return nil
	}
	out := make([]corev1.ContainerStatus, 0, len(specs))
	for i := range specs {
		c := &specs[i]
		cs := corev1.ContainerStatus{Name: c.Name, Image: c.Image, Started: ptr.To(false)}
		insts := in.Observed.instances(c.Name)
		var prev *observedContainer
		if len(insts) > 0 {
			l := insts[0]
			cs.RestartCount = l.RestartCount
			cs.ImageID = l.ImageRef
			cs.ContainerID = in.RuntimeName + "://" + l.ID
			for _, p := range insts[1:] {
				if p.State == stateExited {
					prev = p
					break
				}
			}
			w, waitingNow := in.Waiting[c.Name]
			switch {
			case l.State == stateRunning:
				cs.State.Running = &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(l.StartedAt)}
				started, ready := probeReady(c, l.ID, in.Probes)
				cs.Started = ptr.To(started)
				// A running init container is not ready, but a sidecar
				// is as its probes say.
				cs.Ready = (!init || isSidecar(c)) && ready
			case l.State == stateExited && !waitingNow:
				cs.State.Terminated = terminatedState(in.RuntimeName, l)
				cs.Ready = init && !isSidecar(c) && l.ExitCode == 0
			default:
				if !waitingNow {
					w = waiting{Reason: reasonContainerCreating}
				}
				cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
				if l.State == stateExited {
					prev = l // the exit it waits to restart from
				}
			}
		} else {
			w, ok := in.Waiting[c.Name]
			if !ok {
				w = waiting{Reason: reasonContainerCreating}
				if hasInit {
					w.Reason = reasonPodInitializing
				}
			}
			cs.State.Waiting = &corev1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}
			// A kubelet that lost the runtime's record keeps the count.
			for _, o := range old {
				if o.Name == c.Name {
					cs.RestartCount = o.RestartCount
				}
			}
		}
		if prev != nil {
			cs.LastTerminationState.Terminated = terminatedState(in.RuntimeName, prev)
		}
		out = append(out, cs)
	}
	return out
}

// terminatedState is how an exited instance shows.
func terminatedState(runtimeName string, c *observedContainer) *corev1.ContainerStateTerminated {
	reason := c.Reason
	switch {
	case reason == "OOMKilled":
	case c.ExitCode == 0:
		reason = "Completed"
	case reason == "" || reason == "Completed":
		reason = "Error"
	}
	return &corev1.ContainerStateTerminated{
		ExitCode:    c.ExitCode,
		Reason:      reason,
		Message:     c.Message,
		StartedAt:   metav1.NewTime(c.StartedAt),
		FinishedAt:  metav1.NewTime(c.FinishedAt),
		ContainerID: runtimeName + "://" + c.ID,
	}
}

// podPhase is upstream's getPhase over the statuses just computed.
// Sidecars count as running containers while they run, hold the pod
// Pending until they started (before the pod was first initialized),
// and their exits do not count: a sidecar stopped at the end of a pod
// does not fail it.
func podPhase(pod *corev1.Pod, st *corev1.PodStatus, terminated bool) corev1.PodPhase {
	policy := pod.Spec.RestartPolicy
	initPending, initFailed := false, false
	sidecarsPending, sidecarsRunning, sidecarsWaiting := false, 0, 0
	for i, cs := range st.InitContainerStatuses {
		if i < len(pod.Spec.InitContainers) && isSidecar(&pod.Spec.InitContainers[i]) {
			switch {
			case cs.State.Running != nil:
				if cs.Started == nil || !*cs.Started {
					sidecarsPending = true
				}
				sidecarsRunning++
			case cs.State.Terminated != nil, cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
				// Exits of sidecars do not make the phase.
			default:
				sidecarsPending = true
				sidecarsWaiting++
			}
			continue
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
		case cs.State.Terminated != nil:
			initFailed = true
			initPending = true
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			initPending = true
			if policy == corev1.RestartPolicyNever {
				initFailed = true
			}
		default:
			initPending = true
		}
	}
	if initFailed && policy == corev1.RestartPolicyNever {
		return corev1.PodFailed
	}
	running, waitingN, stopped, succeeded := 0, 0, 0, 0
	for _, cs := range st.ContainerStatuses {
		switch {
		case cs.State.Running != nil:
			running++
		case cs.State.Terminated != nil:
			stopped++
			if cs.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case cs.State.Waiting != nil && cs.LastTerminationState.Terminated != nil:
			stopped++
		default:
			waitingN++
		}
	}
	if terminated {
		// Stopped for good: nothing will run again.
		if initPending && len(st.ContainerStatuses) > 0 && stopped == 0 && running == 0 {
			return corev1.PodFailed
		}
		if running == 0 && waitingN == 0 && stopped > 0 && stopped == succeeded {
			return corev1.PodSucceeded
		}
		if running > 0 || stopped > 0 || waitingN > 0 {
			return corev1.PodFailed
		}
	}
	// The pod was initialized once a main container runs; a sidecar
	// restarting after that does not make it Pending again.
	initialized := running > 0
	switch {
	case initPending, sidecarsPending && !initialized:
		return corev1.PodPending
	case waitingN+sidecarsWaiting > 0:
		return corev1.PodPending
	case running+sidecarsRunning > 0:
		return corev1.PodRunning
	case stopped > 0:
		switch {
		case policy == corev1.RestartPolicyAlways:
			return corev1.PodRunning
		case stopped == succeeded:
			return corev1.PodSucceeded
		case policy == corev1.RestartPolicyNever:
			return corev1.PodFailed
		}
		return corev1.PodRunning
	}
	return corev1.PodPending
}

// podConditions are the pod's conditions: the kubelet's computed, the
// others kept; a condition's transition time moves only when its status
// does.
func podConditions(in statusInput, st *corev1.PodStatus, sb *observedSandbox) []corev1.PodCondition {
	pod := in.Pod
	now := metav1.NewTime(in.Now)
	var out []corev1.PodCondition
	for _, c := range pod.Status.Conditions {
		if !slices.Contains(kubeletConditions, c.Type) {
			out = append(out, c)
		}
	}
	if !slices.ContainsFunc(out, func(c corev1.PodCondition) bool { return c.Type == corev1.PodScheduled }) {
		out = append([]corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now}}, out...)
	}
	set := func(typ corev1.PodConditionType, ok bool, reason, message string) {
		c := corev1.PodCondition{Type: typ, ObservedGeneration: pod.Generation, Status: corev1.ConditionFalse, Reason: reason, Message: message, LastTransitionTime: now}
		if ok {
			c.Status, c.Reason, c.Message = corev1.ConditionTrue, "", ""
		}
		for _, o := range pod.Status.Conditions {
			if o.Type == typ && o.Status == c.Status {
				c.LastTransitionTime = o.LastTransitionTime
			}
		}
		out = append(out, c)
	}
	terminal := st.Phase == corev1.PodSucceeded || st.Phase == corev1.PodFailed

	set(corev1.PodReadyToStartContainers, sb != nil && sb.Ready && !terminal, "", "")

	// Initialized: every regular init container exited 0 and every
	// sidecar started — or a main container already ran, so a sidecar
	// restarting later does not undo it.
	var notInit, sidecars []string
	for i, cs := range st.InitContainerStatuses {
		if i < len(pod.Spec.InitContainers) && isSidecar(&pod.Spec.InitContainers[i]) {
			sidecars = append(sidecars, cs.Name)
			if cs.Started == nil || !*cs.Started {
				notInit = append(notInit, cs.Name)
			}
			continue
		}
		if !(cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0) {
			notInit = append(notInit, cs.Name)
		}
	}
	mainStarted := slices.ContainsFunc(st.ContainerStatuses, func(cs corev1.ContainerStatus) bool {
		return cs.State.Running != nil || cs.State.Terminated != nil
	})
	initOK := len(notInit) == 0 || st.Phase == corev1.PodSucceeded || mainStarted
	if !initOK {
		set(corev1.PodInitialized, false, "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " ")))
	} else {
		set(corev1.PodInitialized, true, "", "")
	}

	// Sidecars' readiness counts, before the main containers'.
	var unready []string
	for _, cs := range st.InitContainerStatuses {
		if slices.Contains(sidecars, cs.Name) && !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	for _, cs := range st.ContainerStatuses {
		if !cs.Ready {
			unready = append(unready, cs.Name)
		}
	}
	reason, message := "", ""
	switch {
	case terminal && st.Phase == corev1.PodSucceeded:
		reason = "PodCompleted"
	case !initOK:
		reason, message = "ContainersNotInitialized", fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(notInit, " "))
	case len(unready) > 0:
		reason, message = "ContainersNotReady", fmt.Sprintf("containers with unready status: [%s]", strings.Join(unready, " "))
	}
	containersReady := initOK && len(unready) == 0 && !terminal
	set(corev1.ContainersReady, containersReady, reason, message)

	// Ready also needs every readiness gate's condition True.
	var gates []string
	for _, g := range pod.Spec.ReadinessGates {
		ok := false
		for _, c := range pod.Status.Conditions {
			if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
				ok = true
			}
		}
		if !ok {
			gates = append(gates, string(g.ConditionType))
		}
	}
	if containersReady && len(gates) > 0 {
		reason, message = "ReadinessGatesNotReady", fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", gates[0])
	}
	set(corev1.PodReady, containersReady && len(gates) == 0, reason, message)
	return out
}

// qosClass classifies a pod the API server did not classify: Guaranteed
// when every container limits cpu and memory to its requests, BestEffort
// when none requests or limits either, else Burstable.
func qosClass(pod *corev1.Pod) corev1.PodQOSClass {
	some, guaranteed := false, true
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
				req, hasReq := c.Resources.Requests[r]
				lim, hasLim := c.Resources.Limits[r]
				if (hasReq && !req.IsZero()) || (hasLim && !lim.IsZero()) {
					some = true
				}
				if !hasLim || lim.IsZero() || (hasReq && req.Cmp(lim) != 0) {
					guaranteed = false
				}
			}
		}
	}
	switch {
	case !some:
		return corev1.PodQOSBestEffort
	case guaranteed:
		return corev1.PodQOSGuaranteed
	}
	return corev1.PodQOSBurstable
}
