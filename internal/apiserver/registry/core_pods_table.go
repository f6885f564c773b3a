package registry

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The pod table. Its STATUS column is not the phase: it names the most
// telling thing about the pod, in the order kubectl users know, e.g.
// Init:1/2 while init containers run, the waiting reason of a container
// (ContainerCreating, CrashLoopBackOff), Completed, Terminating.

var podTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		column("Ready", "string", "The aggregate readiness state of this pod for accepting traffic.", 0),
		column("Status", "string", "The aggregate status of the containers in this pod.", 0),
		column("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", 0),
		ageColumn,
		column("IP", "string", corev1.PodStatus{}.SwaggerDoc()["podIP"], 1),
		column("Node", "string", corev1.PodSpec{}.SwaggerDoc()["nodeName"], 1),
		column("Nominated Node", "string", corev1.PodStatus{}.SwaggerDoc()["nominatedNodeName"], 1),
		column("Readiness Gates", "string", corev1.PodSpec{}.SwaggerDoc()["readinessGates"], 1),
	},
	Row: podRow,
}

// nodeUnreachablePodReason is the status reason the node lifecycle
// controller sets on pods of a node that stopped reporting.
const nodeUnreachablePodReason = "NodeLost"

func podRow(obj runtime.Object) []interface{} {
	pod := obj.(*corev1.Pod)
	ready, status, restarts := podStatusCells(pod)

	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	gates := "<none>"
	if len(pod.Spec.ReadinessGates) > 0 {
		trueCount := 0
		for _, g := range pod.Spec.ReadinessGates {
			for _, c := range pod.Status.Conditions {
				if c.Type == g.ConditionType {
					if c.Status == corev1.ConditionTrue {
						trueCount++
					}
					break
				}
			}
		}
		gates = fmt.Sprintf("%d/%d", trueCount, len(pod.Spec.ReadinessGates))
	}
	return []interface{}{
		pod.Name, ready, status, restarts, Age(pod.CreationTimestamp),
		orNone(podIP), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates,
	}
}

// podStatusCells computes READY, STATUS and RESTARTS together, because the
// three read the same container statuses.
func podStatusCells(pod *corev1.Pod) (ready, reason, restarts string) {
	restartCount, sidecarRestarts := 0, 0
	total := len(pod.Spec.Containers)
	readyCount := 0
	var lastRestart, lastSidecarRestart metav1.Time

	reason = string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			reason = corev1.PodReasonSchedulingGated
		}
	}

	initContainers := make(map[string]*corev1.Container, len(pod.Spec.InitContainers))
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		initContainers[c.Name] = c
		if isRestartableInitContainer(c) {
			total++
		}
	}

	later := func(t *metav1.Time, s corev1.ContainerStatus) {
		if term := s.LastTerminationState.Terminated; term != nil && t.Before(&term.FinishedAt) {
			*t = term.FinishedAt
		}
	}

	initializing := false
	for i, s := range pod.Status.InitContainerStatuses {
		restartCount += int(s.RestartCount)
		later(&lastRestart, s)
		sidecar := isRestartableInitContainer(initContainers[s.Name])
		if sidecar {
			sidecarRestarts += int(s.RestartCount)
			later(&lastSidecarRestart, s)
		}
		switch {
		case s.State.Terminated != nil && s.State.Terminated.ExitCode == 0:
			continue
		case sidecar && s.Started != nil && *s.Started:
			if s.Ready {
				readyCount++
			}
			continue
		case s.State.Terminated != nil:
			switch t := s.State.Terminated; {
			case t.Reason != "":
				reason = "Init:" + t.Reason
			case t.Signal != 0:
				reason = fmt.Sprintf("Init:Signal:%d", t.Signal)
			default:
				reason = fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
			}
		case s.State.Waiting != nil && s.State.Waiting.Reason != "" && s.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + s.State.Waiting.Reason
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		initializing = true
		break
	}

	if !initializing || podConditionTrue(pod.Status.Conditions, corev1.PodInitialized) {
		// Once initialised, finished init containers' restarts no longer count.
		restartCount, lastRestart = sidecarRestarts, lastSidecarRestart
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			s := pod.Status.ContainerStatuses[i]
			restartCount += int(s.RestartCount)
			later(&lastRestart, s)
			switch {
			case s.State.Waiting != nil && s.State.Waiting.Reason != "":
				reason = s.State.Waiting.Reason
			case s.State.Terminated != nil && s.State.Terminated.Reason != "":
				reason = s.State.Terminated.Reason
			case s.State.Terminated != nil && s.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", s.State.Terminated.Signal)
			case s.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", s.State.Terminated.ExitCode)
			case s.Ready && s.State.Running != nil:
				hasRunning = true
				readyCount++
			}
		}
		// A pod with one container done and another still running is not Completed.
		if reason == "Completed" && hasRunning {
			if podConditionTrue(pod.Status.Conditions, corev1.PodReady) {
				reason = "Running"
			} else {
				reason = "NotReady"
			}
		}
	}

	terminal := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	switch {
	case pod.DeletionTimestamp != nil && pod.Status.Reason == nodeUnreachablePodReason:
		reason = "Unknown"
	case pod.DeletionTimestamp != nil && !terminal:
		reason = "Terminating"
	}

	restarts = strconv.Itoa(restartCount)
	if restartCount != 0 && !lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", restartCount, Age(lastRestart))
	}
	return fmt.Sprintf("%d/%d", readyCount, total), reason, restarts
}

func podConditionTrue(conditions []corev1.PodCondition, t corev1.PodConditionType) bool {
	for _, c := range conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
