package kubelet

import (
	"fmt"
	"hash/fnv"
	"regexp"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The sync plan: what one pass of a pod worker does, decided from the pod
// as the API holds it, the pod as the runtime holds it, the back-offs and
// the time — and nothing else. It is upstream's computePodActions in
// spirit: a pure function, so every case is a table test with a fixed
// clock, and the executor (executor.go) is the only part that calls the
// runtime.
//
// The rules, in order:
//
//   - A pod being deleted (or gone from the API, or terminal, or past
//     its activeDeadlineSeconds) only stops:
//     running containers are killed within the grace period, ready
//     sandboxes stopped. When nothing runs, the plan says so (stopped)
//     and the worker finishes the deletion.
//   - No ready sandbox: kill what still runs, create the next sandbox
//     (attempt+1), and start from the first init container (or all
//     containers) — unless restartPolicy is Never and the pod's
//     containers already ran: a Never pod does not come back.
//   - Init containers run one at a time, in order; a failed one is
//     restarted (back-off) or, under Never, fails the pod. Sidecars
//     (init containers with restartPolicy Always) start in their turn
//     and are kept running (plan_init.go).
//   - Then every container that is not running and should be
//     (restartPolicy, exit code) is started, after a restart back-off
//     (CrashLoopBackOff) and an image pull if the pull policy asks for it
//     (ImagePullBackOff after a failed pull). A running container whose
//     image changed is killed and started again.
//   - A pod whose restart policy is not Always and whose containers all
//     ran to their end is done: its sidecars are stopped (after the
//     main containers, in reverse order), then its sandbox.
//   - Exited instances beyond the newest two per container are removed
//     (the newest two give `kubectl logs --previous`), and old sandboxes
//     with no container left.

// actionKind is what an action does.
type actionKind int

const (
	actKillContainer actionKind = iota
	actRemoveContainer
	actStopSandbox
	actRemoveSandbox
	actCreateSandbox
	actPullImage
	actStartContainer
)

func (k actionKind) String() string {
	return [...]string{"KillContainer", "RemoveContainer", "StopSandbox", "RemoveSandbox", "CreateSandbox", "PullImage", "StartContainer"}[k]
}

// action is one step for the executor. Steps run in order; a failed step
// skips the later steps of the same container (and a failed sandbox
// creation everything after it).
type action struct {
	Kind        actionKind
	Container   string // spec name (kill, pull, start)
	Init        bool   // an init container (start)
	ContainerID string // kill, remove
	SandboxID   string // stop, remove sandbox; empty start: the sandbox created by this plan
	Attempt     uint32 // sandbox attempt (create) or restart count (start)
	Image       string // pull
	Grace       time.Duration
	Reason      string
	// Message replaces the Killing event's text (a failed probe's).
	Message string
	// After (kill): the IDs of containers, killed by the same run of
	// kills, that must stop before this one does (a sidecar outlives
	// the main containers and the sidecars after it); its preStop hook
	// does not wait.
	After []string
	// BackoffKey and Backoff: the entry to store once the step ran.
	BackoffKey string
	Backoff    backoffEntry
}

func (a action) String() string {
	s := a.Kind.String()
	if a.Container != "" {
		s += " " + a.Container
	}
	if a.Kind == actCreateSandbox || a.Kind == actStartContainer {
		s += " #" + strconv.Itoa(int(a.Attempt))
	}
	return s
}

// waiting is why a container is not running, for its status.
type waiting struct {
	Reason, Message string
}

// Waiting reasons, as upstream's kubelet spells them.
const (
	reasonContainerCreating  = "ContainerCreating"
	reasonPodInitializing    = "PodInitializing"
	reasonCrashLoopBackOff   = "CrashLoopBackOff"
	reasonErrImagePull       = "ErrImagePull"
	reasonImagePullBackOff   = "ImagePullBackOff"
	reasonErrImageNeverPull  = "ErrImageNeverPull"
	reasonInvalidImageName   = "InvalidImageName"
	reasonCreateConfigError  = "CreateContainerConfigError"
	reasonCreateContainerErr = "CreateContainerError"
	reasonRunContainerError  = "RunContainerError"
	reasonPostStartHookError = "PostStartHookError"
)

// planInput is everything a plan reads.
type planInput struct {
	// Pod is the pod as the API holds it; nil when it is gone from the
	// API (the runtime's leftovers are only stopped).
	Pod      *corev1.Pod
	Observed podObserved
	Now      time.Time
	// ImagePresent tells, by the spec's image name, which images the
	// node has; a missing entry is absent.
	ImagePresent map[string]bool
	// Backoff holds the pod's back-offs by key (restartKey, pullKey).
	Backoff map[string]backoffEntry
	// Probes are the current probe results by container instance: a
	// sidecar with a startup probe has started once it succeeded.
	Probes map[probeKey]probeResult
	// StartTime is the pod's start as the kubelet set it, for a pod
	// whose status in the API has none yet (zero: not started).
	StartTime time.Time
}

// plan is what a sync does.
type plan struct {
	Actions []action
	// Waiting gives the reason of containers the plan does not start.
	Waiting map[string]waiting
	// Requeue asks for another sync after this long (0: none needed):
	// the end of a back-off.
	Requeue time.Duration
	// Stopping: the pod is being deleted, is gone or is terminal, so
	// nothing is started. Stopped: and nothing of it runs any more.
	Stopping, Stopped bool
	// DeadlineExceeded: the pod ran past its activeDeadlineSeconds; it
	// fails (reason DeadlineExceeded) and is stopped.
	DeadlineExceeded bool
}

func (p *plan) add(a action) { p.Actions = append(p.Actions, a) }

func (p *plan) wait(container, reason, message string) {
	if p.Waiting == nil {
		p.Waiting = map[string]waiting{}
	}
	p.Waiting[container] = waiting{reason, message}
}

func (p *plan) requeueAt(now, at time.Time) {
	d := at.Sub(now)
	if d <= 0 {
		d = time.Millisecond
	}
	if p.Requeue == 0 || d < p.Requeue {
		p.Requeue = d
	}
}

// minGrace is the least time a container gets to stop (upstream's
// minimumGracePeriodInSeconds).
const minGrace = 2 * time.Second

// Back-off keys.
func restartKey(container string) string { return "restart/" + container }
func pullKey(image string) string        { return "pull/" + image }

// containerHash is what, of a container's spec, a running container must
// still match; only the image may change in a pod's spec.
func containerHash(c *corev1.Container) string {
	h := fnv.New32a()
	h.Write([]byte(c.Name))
	h.Write([]byte{0})
	h.Write([]byte(c.Image))
	return strconv.FormatUint(uint64(h.Sum32()), 16)
}

// computePlan is the sync plan of in. It never fails: what cannot be done
// shows as a waiting reason.
func computePlan(in planInput) plan {
	var p plan
	pod, obs := in.Pod, &in.Observed
	if pod == nil || pod.DeletionTimestamp != nil || podIsTerminal(pod) {
		planStop(&p, in)
		return p
	}
	if deadline, ok := activeDeadline(pod, in.StartTime); ok {
		if !in.Now.Before(deadline) {
			p.DeadlineExceeded = true
			planStop(&p, in)
			return p
		}
		p.requeueAt(in.Now, deadline)
	}
	grace := podGrace(pod)
	sb := obs.latestSandbox()
	policy := pod.Spec.RestartPolicy

	if sb == nil || !sb.Ready {
		if sb != nil && policy == corev1.RestartPolicyNever && len(obs.Containers) > 0 {
			// The sandbox died after its containers ran: a Never pod is
			// over, its status says how.
			killRunning(&p, pod, obs, grace, "the pod sandbox is gone")
			return p
		}
		killRunning(&p, pod, obs, grace, "the pod sandbox changed")
		attempt := uint32(0)
		if sb != nil {
			attempt = sb.Attempt + 1
		}
		p.add(action{Kind: actCreateSandbox, Attempt: attempt, Reason: sandboxReason(sb)})
		if len(pod.Spec.InitContainers) > 0 {
			planStart(&p, in, &pod.Spec.InitContainers[0], true, "")
		} else {
			for i := range pod.Spec.Containers {
				c := &pod.Spec.Containers[i]
				if l := obs.latest(c.Name); l != nil && policy == corev1.RestartPolicyOnFailure && l.State == stateExited && l.ExitCode == 0 {
					continue // done; a new sandbox does not redo it
				}
				planStart(&p, in, c, false, "")
			}
		}
		planGC(&p, obs, "")
		return p
	}

	// Containers of older sandboxes must not run beside the current one.
	for _, c := range obs.running() {
		if c.SandboxID != sb.ID {
			p.add(action{Kind: actKillContainer, Container: c.Name, ContainerID: c.ID, Grace: grace, Reason: "it belongs to an old pod sandbox"})
		}
	}

	if policy != corev1.RestartPolicyAlways && len(pod.Spec.Containers) > 0 && !mainsActive(pod, obs, policy) {
		// Every container ran to its end: the pod is done. Its sidecars
		// stop (as upstream, they do not keep a pod alive), then its
		// sandbox (network, IP); its containers stay for their logs.
		killRunning(&p, pod, obs, grace, "all containers exited")
		p.add(action{Kind: actStopSandbox, SandboxID: sb.ID, Reason: "all containers exited"})
		planGC(&p, obs, sb.ID)
		return p
	}

	switch planInit(&p, in, sb.ID, grace) {
	case initFailed:
		killRunning(&p, pod, obs, grace, "an init container failed and the restart policy is Never")
		p.add(action{Kind: actStopSandbox, SandboxID: sb.ID, Reason: "the pod failed"})
		planGC(&p, obs, sb.ID)
		return p
	case initPending:
		planGC(&p, obs, sb.ID)
		return p
	}

	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		l := obs.latest(c.Name)
		switch {
		case l == nil:
			planStart(&p, in, c, false, sb.ID)
		case l.State == stateRunning:
			if l.Hash != "" && l.Hash != containerHash(c) {
				p.add(action{Kind: actKillContainer, Container: c.Name, ContainerID: l.ID, Grace: grace, Reason: "its spec changed"})
				planStart(&p, in, c, false, sb.ID)
			}
		case shouldRestart(policy, l):
			planStart(&p, in, c, false, sb.ID)
		}
	}
	planGC(&p, obs, sb.ID)
	return p
}

// mainsActive reports whether any of the pod's (main) containers runs or
// is still to start: the pod is not done.
func mainsActive(pod *corev1.Pod, obs *podObserved, policy corev1.RestartPolicy) bool {
	for i := range pod.Spec.Containers {
		l := obs.latest(pod.Spec.Containers[i].Name)
		if l == nil || l.State == stateRunning || shouldRestart(policy, l) {
			return true
		}
	}
	return false
}

// planStop stops a pod that is being deleted, is gone from the API or
// is terminal: kill what runs, stop ready sandboxes.
func planStop(p *plan, in planInput) {
	p.Stopping = true
	obs := &in.Observed
	grace := minGrace
	reason := "the pod is gone from the API"
	switch pod := in.Pod; {
	case pod == nil:
	case pod.DeletionTimestamp != nil:
		reason = "the pod is being deleted"
		grace = max(pod.DeletionTimestamp.Sub(in.Now), minGrace)
		if g := pod.DeletionGracePeriodSeconds; g != nil && *g < 1 {
			grace = minGrace
		}
	case p.DeadlineExceeded:
		reason = "the pod ran past its activeDeadlineSeconds"
		grace = podGrace(pod)
	default:
		reason = "the pod is " + string(pod.Status.Phase)
		grace = podGrace(pod)
	}
	killRunning(p, in.Pod, obs, grace, reason)
	for _, s := range obs.Sandboxes {
		if s.Ready {
			p.add(action{Kind: actStopSandbox, SandboxID: s.ID, Reason: reason})
		}
	}
	p.Stopped = len(p.Actions) == 0
}

func sandboxReason(sb *observedSandbox) string {
	if sb == nil {
		return "the pod has no sandbox"
	}
	return "the pod sandbox is not ready"
}

// shouldRestart: a container that is not running starts again, as the
// restart policy says. One created but never started (its start failed)
// or in an unknown state always does.
func shouldRestart(policy corev1.RestartPolicy, l *observedContainer) bool {
	switch {
	case l.State == stateRunning:
		return false
	case l.State == stateCreated || l.State == stateUnknown:
		return true
	case policy == corev1.RestartPolicyNever:
		return false
	case policy == corev1.RestartPolicyOnFailure:
		return l.ExitCode != 0
	}
	return true
}

// planStart starts container c in the sandbox sandboxID ("" for the one
// this plan creates): after its restart back-off, and after pulling its
// image when the pull policy asks for it.
func planStart(p *plan, in planInput, c *corev1.Container, init bool, sandboxID string) {
	obs, now := &in.Observed, in.Now
	restartCount := int32(0)
	var bo backoffEntry
	boKey := ""
	if insts := obs.instances(c.Name); len(insts) > 0 {
		restartCount = insts[0].RestartCount + 1
		last := insts[0]
		if last.State != stateRunning {
			// A restart: wait out the back-off since it stopped.
			boKey = restartKey(c.Name)
			var cur *backoffEntry
			if e, ok := in.Backoff[boKey]; ok {
				cur = &e
			}
			if wait, until := inBackoff(cur, last.eventTime(), now); wait {
				p.wait(c.Name, reasonCrashLoopBackOff, fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", cur.Delay, c.Name, podRef(in.Pod)))
				p.requeueAt(now, until)
				return
			}
			bo = nextBackoff(cur, last.eventTime())
			if last.State == stateCreated || last.State == stateUnknown {
				p.add(action{Kind: actKillContainer, Container: c.Name, ContainerID: last.ID, Grace: minGrace, Reason: "it never started"})
			}
		}
	}
	if !validImageRef(c.Image) {
		p.wait(c.Name, reasonInvalidImageName, fmt.Sprintf("Failed to apply default image tag %q: couldn't parse image name %q: invalid reference format", c.Image, c.Image))
		return
	}
	present := in.ImagePresent[c.Image]
	pull := false
	switch c.ImagePullPolicy {
	case corev1.PullNever:
		if !present {
			p.wait(c.Name, reasonErrImageNeverPull, fmt.Sprintf("Container image %q is not present with pull policy of Never", c.Image))
			return
		}
	case corev1.PullAlways:
		pull = true
	default: // IfNotPresent, or unset in a pod the API did not default
		pull = !present
	}
	if pull {
		key := pullKey(c.Image)
		if e, ok := in.Backoff[key]; ok && e.Err != "" {
			if wait, until := inBackoff(&e, e.Last, now); wait {
				p.wait(c.Name, reasonImagePullBackOff, fmt.Sprintf("Back-off pulling image %q: %s", c.Image, e.Err))
				p.requeueAt(now, until)
				return
			}
		}
		p.add(action{Kind: actPullImage, Container: c.Name, Image: c.Image, BackoffKey: key, Reason: string(c.ImagePullPolicy)})
	}
	reason := "not created yet"
	if restartCount > 0 {
		reason = "restart " + strconv.Itoa(int(restartCount))
	}
	p.add(action{Kind: actStartContainer, Container: c.Name, Init: init, SandboxID: sandboxID, Attempt: uint32(restartCount),
		Reason: reason, BackoffKey: boKey, Backoff: bo})
}

// keepExited is how many exited instances of a container are kept: the
// newest two give the current and the previous log.
const keepExited = 2

// planGC removes exited instances beyond the newest keepExited per
// container, and sandboxes other than current that hold no container.
func planGC(p *plan, obs *podObserved, current string) {
	kept := map[string]int{}
	removed := map[string]bool{}
	for i := range obs.Containers {
		c := &obs.Containers[i]
		if c.State != stateExited {
			continue
		}
		kept[c.Name]++
		if kept[c.Name] > keepExited {
			p.add(action{Kind: actRemoveContainer, Container: c.Name, ContainerID: c.ID, Reason: "an old exited instance"})
			removed[c.ID] = true
		}
	}
	for i, s := range obs.Sandboxes {
		if i == 0 || s.ID == current || s.Ready {
			continue
		}
		used := false
		for j := range obs.Containers {
			if c := &obs.Containers[j]; c.SandboxID == s.ID && !removed[c.ID] {
				used = true
			}
		}
		if !used {
			p.add(action{Kind: actRemoveSandbox, SandboxID: s.ID, Reason: "an old pod sandbox"})
		}
	}
}

// podGrace is the pod's terminationGracePeriodSeconds (30 s unset).
func podGrace(pod *corev1.Pod) time.Duration {
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		return max(time.Duration(*g)*time.Second, minGrace)
	}
	return 30 * time.Second
}

// activeDeadline is when pod has been active for its
// activeDeadlineSeconds, counted from its status's startTime, else from
// started (the start the kubelet gave it and the API may not show yet);
// ok is false without a deadline or a start.
func activeDeadline(pod *corev1.Pod, started time.Time) (time.Time, bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil {
		return time.Time{}, false
	}
	if pod.Status.StartTime != nil {
		started = pod.Status.StartTime.Time
	}
	if started.IsZero() {
		return time.Time{}, false
	}
	return started.Add(time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second), true
}

// Upstream's words for a pod past its active deadline.
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// podIsTerminal: the API says the pod is over; nothing of it starts again.
func podIsTerminal(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
}

// podRef names a pod as upstream's format.Pod: name_namespace(uid).
func podRef(pod *corev1.Pod) string {
	if pod == nil {
		return ""
	}
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// imageRefRE is the grammar of an image reference (distribution's
// reference.ReferenceRegexp): [domain[:port]/]path[:tag][@digest], the
// path in lower case.
var imageRefRE = regexp.MustCompile(`^(?:(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?)(?:\.(?:[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?))*(?::[0-9]+)?/)?` +
	`[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*(?:/[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*)*` +
	`(?::[\w][\w.-]{0,127})?(?:@[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,})?$`)

// validImageRef reports whether image parses as an image reference.
func validImageRef(image string) bool {
	return len(image) <= 255+128 && imageRefRE.MatchString(image)
}
