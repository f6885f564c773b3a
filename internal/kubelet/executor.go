package kubelet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The executor: the only part of a sync that changes anything. It runs a
// plan's actions in order through the CRI; a failed step skips the later
// steps of its container (a failed sandbox creation, everything), and
// shows as the container's waiting reason (ErrImagePull,
// CreateContainerConfigError, RunContainerError, ...).

// execResult is what the executor learnt.
type execResult struct {
	waiting map[string]waiting
	err     error // the first failure, for the log and the retry
}

func (r *execResult) fail(container, reason, msg string, err error) {
	if r.waiting == nil {
		r.waiting = map[string]waiting{}
	}
	if container != "" {
		r.waiting[container] = waiting{reason, msg}
	}
	if r.err == nil {
		r.err = err
	}
}

// execute runs plan p for pod (nil when gone from the API).
func (k *Kubelet) execute(ctx context.Context, w *podWorker, pod *corev1.Pod, p plan, obs podObserved) execResult {
	var res execResult
	log := k.cfg.Logger.With("pod_uid", w.uid)
	failed := map[string]bool{} // containers whose earlier step failed
	pulled := map[string]bool{} // containers whose image this plan pulled

	// The sandbox containers start in: the current one, or the one this
	// plan creates.
	var sandboxID string
	var sandboxIPs []string
	var sbAttempt uint32
	if sb := obs.latestSandbox(); sb != nil && sb.Ready {
		sandboxID, sandboxIPs, sbAttempt = sb.ID, sb.IPs, sb.Attempt
	}
	var vols map[string]podVolume
	volsDone := false

	for i := 0; i < len(p.Actions); i++ {
		a := p.Actions[i]
		if a.Container != "" && failed[a.Container] {
			continue
		}
		switch a.Kind {
		case actKillContainer:
			// Kills run at once, in parallel: a pod's grace is shared.
			j := i
			for j < len(p.Actions) && p.Actions[j].Kind == actKillContainer {
				j++
			}
			k.killContainers(ctx, pod, p.Actions[i:j], k.podIP(pod, obs.latestSandbox().ipsOrNil()))
			i = j - 1
		case actRemoveContainer:
			if err := k.criDo(ctx, func(c context.Context) error {
				_, err := k.cri.rt.RemoveContainer(c, &cri.RemoveContainerRequest{ContainerId: a.ContainerID})
				return err
			}); err != nil {
				log.Warn("remove container", "id", a.ContainerID, "err", err)
			}
			k.obs.forget(a.ContainerID)
			k.probes.forgetKills(a.ContainerID)
		case actStopSandbox:
			if err := k.criDo(ctx, func(c context.Context) error {
				_, err := k.cri.rt.StopPodSandbox(c, &cri.StopPodSandboxRequest{PodSandboxId: a.SandboxID})
				return err
			}); err != nil {
				res.fail("", "", "", fmt.Errorf("stop pod sandbox: %w", err))
			}
			k.obs.forget(a.SandboxID)
		case actRemoveSandbox:
			if err := k.criDo(ctx, func(c context.Context) error {
				_, err := k.cri.rt.RemovePodSandbox(c, &cri.RemovePodSandboxRequest{PodSandboxId: a.SandboxID})
				return err
			}); err != nil {
				log.Warn("remove pod sandbox", "id", a.SandboxID, "err", err)
			}
			k.obs.forget(a.SandboxID)
		case actCreateSandbox:
			if a.Attempt > 0 {
				k.event(pod, "", "Normal", eventSandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
			}
			var id string
			var ips []string
			err := k.podCgroups(pod)
			if err == nil {
				id, ips, err = k.createSandbox(ctx, pod, a.Attempt)
			}
			if err != nil {
				log.Warn("create pod sandbox", "err", err)
				for _, c := range allContainers(pod) {
					res.fail(c, reasonContainerCreating, fmt.Sprintf("Failed to create pod sandbox: %v", err), err)
				}
				k.event(pod, "", "Warning", "FailedCreatePodSandBox", "Failed to create pod sandbox: %v", err)
				return res
			}
			sandboxID, sandboxIPs, sbAttempt = id, ips, a.Attempt
			log.Info("pod sandbox created", "id", id, "attempt", a.Attempt, "ips", ips)
		case actPullImage:
			k.event(pod, a.Container, "Normal", eventPulling, "Pulling image %q", a.Image)
			began := k.cfg.Clock.Now()
			err := k.pullImage(ctx, pod, a.Image, sbAttempt)
			now := k.cfg.Clock.Now()
			if err != nil && ctx.Err() == nil {
				k.event(pod, a.Container, "Warning", eventFailed, "Failed to pull image %q: %v", a.Image, err)
				k.event(pod, a.Container, "Warning", eventFailed, "Error: %s", reasonErrImagePull)
			}
			if err == nil {
				k.event(pod, a.Container, "Normal", eventPulled, "Successfully pulled image %q in %v", a.Image, now.Sub(began).Round(time.Millisecond))
			}
			if err != nil {
				var prev *backoffEntry
				if e, ok := w.backoff[a.BackoffKey]; ok {
					prev = &e
				}
				e := nextBackoff(prev, now)
				e.Err = err.Error()
				w.backoff[a.BackoffKey] = e
				failed[a.Container] = true
				res.fail(a.Container, reasonErrImagePull, err.Error(), err)
				log.Info("image pull failed", "image", a.Image, "err", err)
				continue
			}
			delete(w.backoff, a.BackoffKey)
			pulled[a.Container] = true
		case actStartContainer:
			if sandboxID == "" {
				failed[a.Container] = true
				continue
			}
			if !volsDone {
				volsDone = true
				var err error
				if err = k.writeEtcHosts(pod, sandboxIPs); err == nil {
					vols, err = k.setupVolumes(ctx, pod, sandboxIPs)
				}
				if err != nil {
					for _, c := range allContainers(pod) {
						res.fail(c, reasonContainerCreating, err.Error(), err)
					}
					log.Warn("volumes", "err", err)
					k.event(pod, "", "Warning", eventFailedMount, "%v", err)
					return res
				}
			}
			if a.BackoffKey != "" {
				w.backoff[a.BackoffKey] = a.Backoff
			}
			if c := findContainer(pod, a.Container); c != nil && !pulled[a.Container] {
				k.event(pod, a.Container, "Normal", eventPulled, "Container image %q already present on machine", c.Image)
			}
			if reason, err := k.startContainer(ctx, pod, a, sandboxID, sbAttempt, sandboxIPs, vols); err != nil {
				failed[a.Container] = true
				res.fail(a.Container, reason, err.Error(), err)
				if ctx.Err() == nil {
					k.event(pod, a.Container, "Warning", eventFailed, "Error: %v", err)
				}
				log.Info("container start failed", "container", a.Container, "reason", reason, "err", err)
			}
		}
	}
	return res
}

func allContainers(pod *corev1.Pod) []string {
	var out []string
	if pod == nil {
		return nil
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			out = append(out, c.Name)
		}
	}
	return out
}

// criDo runs one CRI call within the request timeout.
func (k *Kubelet) criDo(ctx context.Context, f func(context.Context) error) error {
	cctx, cancel := k.cri.ctx(ctx)
	defer cancel()
	return f(cctx)
}

// createSandbox makes the pod's log directory and runs its sandbox, and
// returns its ID and IPs.
func (k *Kubelet) createSandbox(ctx context.Context, pod *corev1.Pod, attempt uint32) (string, []string, error) {
	cfg := k.sandboxConfig(pod, attempt)
	if err := os.MkdirAll(cfg.LogDirectory, 0o755); err != nil {
		return "", nil, err
	}
	var id string
	if err := k.criDo(ctx, func(c context.Context) error {
		r, err := k.cri.rt.RunPodSandbox(c, &cri.RunPodSandboxRequest{Config: cfg})
		if err == nil {
			id = r.PodSandboxId
		}
		return err
	}); err != nil {
		return "", nil, err
	}
	return id, k.obs.sandboxIPsOf(ctx, id), nil
}

// podCgroups makes pod's cgroup with its limits (pod nil: only updates
// the QoS classes' shares, after a pod went), when the kubelet manages
// the QoS tree.
func (k *Kubelet) podCgroups(pod *corev1.Pod) error {
	if !k.cfg.CgroupsPerQOS {
		return nil
	}
	var pods []*corev1.Pod
	for _, o := range k.podInformer.GetStore().List() {
		pods = append(pods, o.(*corev1.Pod))
	}
	return k.ensurePodCgroups(pod, pods)
}

// pullTimeout bounds a pull (the request timeout is for quick calls).
const pullTimeout = 15 * time.Minute

func (k *Kubelet) pullImage(ctx context.Context, pod *corev1.Pod, image string, attempt uint32) error {
	cctx, cancel := context.WithTimeout(ctx, pullTimeout)
	defer cancel()
	_, err := k.cri.img.PullImage(cctx, &cri.PullImageRequest{Image: &cri.ImageSpec{Image: image, UserSpecifiedImage: image},
		SandboxConfig: k.sandboxConfig(pod, attempt)})
	if err != nil {
		return fmt.Errorf("failed to pull and unpack image %q: %w", image, err)
	}
	return nil
}

// startContainer creates and starts one container; on failure it returns
// the waiting reason.
func (k *Kubelet) startContainer(ctx context.Context, pod *corev1.Pod, a action, sandboxID string, sbAttempt uint32, podIPs []string, vols map[string]podVolume) (string, error) {
	c := findContainer(pod, a.Container)
	if c == nil {
		return reasonCreateConfigError, fmt.Errorf("container %q not in the pod's spec", a.Container)
	}
	env, err := makeEnv(ctx, k.envSources(), envInput{pod: pod, container: c, podIPs: podIPs, hostIPs: k.hostIPs(), allocatable: k.allocatable()})
	if err != nil {
		return reasonCreateConfigError, err
	}
	restart := int32(a.Attempt)
	mounts, err := k.containerMounts(pod, c, vols, restart, podIPs)
	if err != nil {
		var ce *configError
		if errors.As(err, &ce) {
			return reasonCreateConfigError, err
		}
		return reasonCreateContainerErr, err
	}
	cfg := containerConfig(containerInput{pod: pod, container: c, restartCount: restart, env: env, mounts: mounts,
		memoryCapacity: k.machine.memoryBytes, minOOMScoreAdj: k.minOOM})
	var id string
	if err := k.criDo(ctx, func(cc context.Context) error {
		r, err := k.cri.rt.CreateContainer(cc, &cri.CreateContainerRequest{PodSandboxId: sandboxID, Config: cfg, SandboxConfig: k.sandboxConfig(pod, sbAttempt)})
		if err == nil {
			id = r.ContainerId
		}
		return err
	}); err != nil {
		return reasonCreateContainerErr, err
	}
	k.event(pod, c.Name, "Normal", eventCreated, "Created container: %s", c.Name)
	if err := k.criDo(ctx, func(cc context.Context) error {
		_, err := k.cri.rt.StartContainer(cc, &cri.StartContainerRequest{ContainerId: id})
		return err
	}); err != nil {
		return reasonRunContainerError, err
	}
	k.cfg.Logger.Info("container started", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "id", id, "restart", restart)
	k.event(pod, c.Name, "Normal", eventStarted, "Started container %s", c.Name)
	if h := c.Lifecycle; h != nil && h.PostStart != nil {
		// As upstream: a failed postStart hook kills the container, which
		// then restarts as its policy says. The hook has no time limit
		// but the sync's (a deletion interrupts it).
		if msg, err := k.runLifecycleHook(ctx, pod, c, id, h.PostStart, k.podIP(pod, podIPs)); err != nil {
			k.cfg.Logger.Info("postStart hook failed", "pod", pod.Namespace+"/"+pod.Name, "container", c.Name, "err", err)
			k.event(pod, c.Name, "Warning", eventFailedPostStartHook, "PostStartHook failed")
			k.killContainers(ctx, pod, []action{{Kind: actKillContainer, Container: c.Name, ContainerID: id, Grace: podGrace(pod),
				Reason: "its postStart hook failed", Message: eventFailedPostStartHook}}, k.podIP(pod, podIPs))
			return reasonPostStartHookError, errors.New(msg)
		}
	}
	return "", nil
}

func findContainer(pod *corev1.Pod, name string) *corev1.Container {
	if pod == nil {
		return nil
	}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// killContainers stops containers in parallel, each after its preStop
// hook, within its grace period; one with After waits (after its hook,
// within what is left of its grace) for those containers to stop first.
func (k *Kubelet) killContainers(ctx context.Context, pod *corev1.Pod, kills []action, podIP string) {
	done := make(map[string]chan struct{}, len(kills))
	for _, a := range kills {
		done[a.ContainerID] = make(chan struct{})
	}
	var wg sync.WaitGroup
	for _, a := range kills {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer close(done[a.ContainerID])
			start := k.cfg.Clock.Now()
			switch {
			case a.Message != "":
				k.event(pod, a.Container, "Normal", eventKilling, "%s", a.Message)
			case a.Container != "":
				k.event(pod, a.Container, "Normal", eventKilling, "Stopping container %s", a.Container)
			}
			if c := findContainer(pod, a.Container); c != nil && c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
				k.runPreStop(ctx, pod, c, a.ContainerID, podIP, a.Grace)
			}
			k.waitTurn(ctx, a, done, a.Grace-k.cfg.Clock.Since(start))
			left := a.Grace - k.cfg.Clock.Since(start)
			timeout := max(int64(math.Ceil(left.Seconds())), int64(minGrace/time.Second))
			// The runtime may take the whole grace period and a little.
			cctx, cancel := context.WithTimeout(ctx, time.Duration(timeout)*time.Second+k.cri.timeout)
			defer cancel()
			if _, err := k.cri.rt.StopContainer(cctx, &cri.StopContainerRequest{ContainerId: a.ContainerID, Timeout: timeout}); err != nil {
				k.cfg.Logger.Warn("stop container", "id", a.ContainerID, "err", err)
			}
			k.obs.forget(a.ContainerID)
		}()
	}
	wg.Wait()
}

// waitTurn waits, at most left, until every container a must outlive
// has stopped.
func (k *Kubelet) waitTurn(ctx context.Context, a action, done map[string]chan struct{}, left time.Duration) {
	if len(a.After) == 0 || left <= 0 {
		return
	}
	t := k.cfg.Clock.NewTimer(left)
	defer t.Stop()
	for _, id := range a.After {
		ch, ok := done[id]
		if !ok {
			continue
		}
		select {
		case <-ch:
		case <-t.C():
			return
		case <-ctx.Done():
			return
		}
	}
}
