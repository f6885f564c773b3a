package kubelet

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Init containers and native sidecars in the plan.
//
// Init containers run in spec order, in the current sandbox (a new
// sandbox runs them all again). A regular one must exit 0 before the
// next starts; a failed one is restarted with back-off, or under
// restartPolicy Never fails the pod. A sidecar — an init container with
// restartPolicy Always — is started in its turn and the next init
// container (or the main containers) waits only until it has started:
// running, and its startup probe (if any) succeeded. From then on it is
// kept running whatever the pod's restart policy: an exit restarts it
// with the same back-off as any container, and a spec change replaces
// it. Once a main container exists in the sandbox the pod is
// initialized: regular init containers are not looked at again, and a
// restarting sidecar no longer holds the main containers.
//
// At the end — deletion, the pod done, a failed init under Never, a
// sandbox gone — killRunning stops the main containers first (in
// parallel), then the sidecars in reverse spec order, each after every
// container it must outlive (upstream's termination ordering); preStop
// hooks of all of them start at once, as upstream's.

// isSidecar reports whether init container c is a sidecar
// (restartPolicy: Always).
func isSidecar(c *corev1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

type initResult int

const (
	initDone initResult = iota
	initPending
	initFailed
)

// planInit runs the init containers one at a time, in order, and keeps
// the sidecars among them running; only instances in the current
// sandbox count.
func planInit(p *plan, in planInput, sandboxID string, grace time.Duration) initResult {
	pod, obs := in.Pod, &in.Observed
	initialized := false
	for i := range pod.Spec.Containers {
		if obs.latestIn(pod.Spec.Containers[i].Name, sandboxID) != nil {
			initialized = true
			break
		}
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		l := obs.latestIn(c.Name, sandboxID)
		if isSidecar(c) {
			if !planSidecar(p, in, c, l, sandboxID, grace) && !initialized {
				return initPending
			}
			continue
		}
		if initialized {
			continue // it ran to its end before the main containers began
		}
		switch {
		case l == nil:
			planStart(p, in, c, true, sandboxID)
			return initPending
		case l.State == stateRunning:
			return initPending
		case l.State == stateExited && l.ExitCode == 0:
			continue
		case pod.Spec.RestartPolicy == corev1.RestartPolicyNever && l.State == stateExited:
			return initFailed
		default:
			planStart(p, in, c, true, sandboxID)
			return initPending
		}
	}
	return initDone
}

// planSidecar keeps sidecar c (its newest instance in the sandbox: l)
// running, and reports whether it has started, so the next init
// container may begin.
func planSidecar(p *plan, in planInput, c *corev1.Container, l *observedContainer, sandboxID string, grace time.Duration) bool {
	switch {
	case l == nil:
		planStart(p, in, c, true, sandboxID)
		return false
	case l.State == stateRunning:
		if l.Hash != "" && l.Hash != containerHash(c) {
			p.add(action{Kind: actKillContainer, Container: c.Name, ContainerID: l.ID, Grace: grace, Reason: "its spec changed"})
			planStart(p, in, c, true, sandboxID)
			return false
		}
		started, _ := probeReady(c, l.ID, in.Probes)
		return started
	}
	// Exited (whatever its code), or never started: a sidecar always
	// comes back.
	planStart(p, in, c, true, sandboxID)
	return false
}

// killRunning kills every running container of the pod within grace:
// the main containers (and any the spec does not name) at once, the
// sidecars after them in reverse spec order. pod may be nil (gone from
// the API): then all at once.
func killRunning(p *plan, pod *corev1.Pod, obs *podObserved, grace time.Duration, reason string) {
	running := obs.running()
	sidecarIdx := map[string]int{}
	if pod != nil {
		for i := range pod.Spec.InitContainers {
			if isSidecar(&pod.Spec.InitContainers[i]) {
				sidecarIdx[pod.Spec.InitContainers[i].Name] = i
			}
		}
	}
	var mains []string
	for _, c := range running {
		if _, ok := sidecarIdx[c.Name]; !ok {
			p.add(action{Kind: actKillContainer, Container: c.Name, ContainerID: c.ID, Grace: grace, Reason: reason})
			mains = append(mains, c.ID)
		}
	}
	if len(sidecarIdx) == 0 {
		return
	}
	// Sidecars from the last to the first: each waits for the main
	// containers and for the sidecars after it.
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		name := pod.Spec.InitContainers[i].Name
		if _, ok := sidecarIdx[name]; !ok {
			continue
		}
		for _, c := range running {
			if c.Name != name {
				continue
			}
			var after []string
			after = append(after, mains...)
			for _, o := range running {
				if j, ok := sidecarIdx[o.Name]; ok && j > i {
					after = append(after, o.ID)
				}
			}
			p.add(action{Kind: actKillContainer, Container: c.Name, ContainerID: c.ID, Grace: grace, Reason: reason, After: after})
		}
	}
}
