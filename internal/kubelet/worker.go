package kubelet

import (
	"context"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Pod workers: one goroutine per pod UID, so a pod's syncs never overlap
// and one slow pod (a long pull, a long grace period) never holds up
// another. A worker wakes on a change of its pod in the API, a change of
// its containers in the runtime (the relist), the end of a back-off, or
// the periodic resync; wake-ups while it syncs fold into one more sync.
//
// A sync (syncPod) observes the runtime, computes the plan (plan.go),
// executes it (executor.go), observes again and writes the status
// (status.go, statuswriter.go). A worker ends when its pod is gone from
// both the API and the runtime.

type podWorker struct {
	uid  types.UID
	wake chan struct{}
	// backoff is the pod's restart and pull back-offs; only the
	// worker's goroutine touches it.
	backoff map[string]backoffEntry
	// cancel ends the sync in progress when it is starting the pod and
	// the pod is being deleted (a long pull must not hold up the
	// deletion); nil otherwise. Guarded by Kubelet.mu.
	cancel context.CancelFunc
}

// interrupt ends pod uid's sync in progress if it is starting the pod.
func (k *Kubelet) interrupt(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w, ok := k.workers[uid]; ok && w.cancel != nil {
		w.cancel()
	}
}

// setInterruptible lets (cancel non-nil) or stops letting the sync in
// progress be interrupted.
func (k *Kubelet) setInterruptible(w *podWorker, cancel context.CancelFunc) {
	k.mu.Lock()
	w.cancel = cancel
	k.mu.Unlock()
}

// trigger wakes pod uid's worker, starting one if needed.
func (k *Kubelet) trigger(uid types.UID) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.runCtx == nil || k.runCtx.Err() != nil {
		return
	}
	w, ok := k.workers[uid]
	if !ok {
		w = &podWorker{uid: uid, wake: make(chan struct{}, 1), backoff: map[string]backoffEntry{}}
		k.workers[uid] = w
		k.wg.Add(1)
		go k.runWorker(k.runCtx, w)
	}
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func (k *Kubelet) runWorker(ctx context.Context, w *podWorker) {
	defer k.wg.Done()
	resync := k.cfg.Clock.NewTicker(k.cfg.ResyncPeriod)
	defer resync.Stop()
	var requeue <-chan time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.wake:
		case <-resync.C():
		case <-requeue:
		}
		sctx, cancel := context.WithCancel(ctx)
		done, after := k.syncPod(sctx, w, cancel)
		k.setInterruptible(w, nil)
		cancel()
		k.syncs.Add(1)
		if done {
			k.mu.Lock()
			// A wake-up that came in meanwhile starts a new worker.
			delete(k.workers, w.uid)
			pending := len(w.wake) > 0
			k.mu.Unlock()
			if pending {
				k.trigger(w.uid)
			}
			return
		}
		requeue = nil
		if after > 0 {
			requeue = k.cfg.Clock.After(after)
		}
	}
}

// errorRetry is how soon a sync that failed, or left a container waiting
// on an error, runs again.
const errorRetry = 2 * time.Second

// syncPod is one pass over pod uid. It reports whether the worker is done
// (the pod is gone from the API and the runtime) and when to sync again.
// cancel ends ctx: a sync that starts the pod may be interrupted by its
// deletion.
func (k *Kubelet) syncPod(ctx context.Context, w *podWorker, cancel context.CancelFunc) (bool, time.Duration) {
	log := k.cfg.Logger.With("pod_uid", w.uid)
	pod := k.podByUID(w.uid)
	if pod != nil {
		log = log.With("pod", pod.Namespace+"/"+pod.Name)
	}
	obs, err := k.obs.observe(ctx, string(w.uid))
	if err != nil {
		log.Warn("sync: cannot read the pod from the runtime", "err", err)
		return false, errorRetry
	}
	if pod == nil && obs.empty() {
		k.syncProbes(w.uid, nil, obs)
		k.cleanupPod(string(w.uid))
		k.forgetAdmitted(w.uid)
		return true, 0
	}
	if pod != nil && pod.DeletionTimestamp == nil && !podIsTerminal(pod) && !k.admit(ctx, pod, obs) {
		return false, 0 // rejected: its status says why, for good
	}
	probes, _ := k.probes.snapshot(obs.ids())
	in := planInput{Pod: pod, Observed: obs, Now: k.cfg.Clock.Now(), Backoff: w.backoff, ImagePresent: k.imagesPresent(ctx, pod), Probes: probes,
		StartTime: k.startTime(w.uid)}
	p := computePlan(in)
	if !p.Stopping {
		// Containers a liveness or startup probe failed are killed
		// first; the next sync restarts them as the policy says.
		p.Actions = append(k.probeKills(pod, obs), p.Actions...)
	}
	for c, wt := range p.Waiting {
		switch wt.Reason {
		case reasonCrashLoopBackOff:
			k.event(pod, c, "Warning", eventBackOff, "Back-off restarting failed container %s in pod %s", c, podRef(pod))
		case reasonImagePullBackOff:
			k.event(pod, c, "Normal", eventBackOff, "Back-off pulling image %q", findContainer(pod, c).Image)
		case reasonErrImageNeverPull, reasonInvalidImageName:
			k.event(pod, c, "Warning", wt.Reason, "%s", wt.Message)
		}
	}
	if p.DeadlineExceeded {
		// As upstream: the pod fails at once, then its containers stop.
		k.event(pod, "", "Normal", reasonDeadlineExceeded, messageDeadlineExceeded)
		log.Info("pod ran past its activeDeadlineSeconds", "deadline", *pod.Spec.ActiveDeadlineSeconds)
		if err := k.writeFailure(ctx, pod, obs, p.Waiting, false, reasonDeadlineExceeded, messageDeadlineExceeded); err != nil {
			return false, errorRetry
		}
	}
	if !p.Stopping {
		k.setInterruptible(w, cancel)
		if pod.DeletionTimestamp == nil && k.deleting(w.uid) {
			cancel() // deleted between the read and now
		}
	}
	res := k.execute(ctx, w, pod, p, obs)
	if ctx.Err() != nil {
		return false, time.Millisecond // interrupted: stop it at once
	}
	if len(p.Actions) > 0 {
		if obs, err = k.obs.observe(ctx, string(w.uid)); err != nil {
			log.Warn("sync: cannot read the pod from the runtime", "err", err)
			return false, errorRetry
		}
	}
	k.syncProbes(w.uid, pod, obs)
	if p.Stopping {
		// Stopping: finish once nothing runs.
		again := computePlan(planInput{Pod: pod, Observed: obs, Now: k.cfg.Clock.Now(), Backoff: w.backoff})
		if !again.Stopped {
			return false, errorRetry
		}
		if pod == nil {
			k.removePod(ctx, string(w.uid), obs)
			return false, 0 // done at the next pass, once the runtime is empty
		}
		if pod.DeletionTimestamp == nil {
			// Terminal: the final status stays; containers stay for logs.
			reason, message := "", ""
			if again.DeadlineExceeded {
				reason, message = reasonDeadlineExceeded, messageDeadlineExceeded
			}
			k.writeFailure(ctx, pod, obs, nil, false, reason, message)
			return false, 0
		}
		if err := k.writeStatus(ctx, pod, obs, nil, true); err != nil {
			return false, errorRetry
		}
		if err := k.deletePod(ctx, pod); err != nil {
			log.Warn("cannot delete the pod", "err", err)
			return false, errorRetry
		}
		k.removePod(ctx, string(w.uid), obs)
		return false, 0
	}
	waits := p.Waiting
	for c, wt := range res.waiting {
		if waits == nil {
			waits = map[string]waiting{}
		}
		waits[c] = wt
	}
	if err := k.writeStatus(ctx, pod, obs, waits, false); err != nil {
		return false, errorRetry
	}
	after := p.Requeue
	if len(res.waiting) > 0 || res.err != nil {
		if after == 0 || after > errorRetry {
			after = errorRetry
		}
	}
	return false, after
}

// startTime is the start the kubelet gave pod uid in its last status,
// or now for a pod it has not written yet (this sync's status will say
// now).
func (k *Kubelet) startTime(uid types.UID) time.Time {
	if v, ok := k.statuses.Load(uid); ok {
		if st := v.(*corev1.PodStatus); st.StartTime != nil {
			return st.StartTime.Time
		}
	}
	return k.cfg.Clock.Now()
}

// deleting reports whether the API's pod uid is being deleted or gone.
func (k *Kubelet) deleting(uid types.UID) bool {
	p := k.podByUID(uid)
	return p == nil || p.DeletionTimestamp != nil
}

// imagesPresent asks the runtime which of the pod's images it has.
func (k *Kubelet) imagesPresent(ctx context.Context, pod *corev1.Pod) map[string]bool {
	if pod == nil {
		return nil
	}
	out := map[string]bool{}
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if _, done := out[c.Image]; done || c.Image == "" {
				continue
			}
			cctx, cancel := k.cri.ctx(ctx)
			st, err := k.cri.img.ImageStatus(cctx, &cri.ImageStatusRequest{Image: &cri.ImageSpec{Image: c.Image}})
			cancel()
			out[c.Image] = err == nil && st.Image != nil
		}
	}
	return out
}

// removePod removes everything the runtime holds of a stopped pod, and
// its directories.
func (k *Kubelet) removePod(ctx context.Context, uid string, obs podObserved) {
	var ids []string
	for _, c := range obs.Containers {
		cctx, cancel := k.cri.ctx(ctx)
		if _, err := k.cri.rt.RemoveContainer(cctx, &cri.RemoveContainerRequest{ContainerId: c.ID}); err != nil {
			k.cfg.Logger.Warn("remove container", "id", c.ID, "err", err)
		}
		cancel()
		ids = append(ids, c.ID)
	}
	for _, s := range obs.Sandboxes {
		cctx, cancel := k.cri.ctx(ctx)
		if _, err := k.cri.rt.RemovePodSandbox(cctx, &cri.RemovePodSandboxRequest{PodSandboxId: s.ID}); err != nil {
			k.cfg.Logger.Warn("remove pod sandbox", "id", s.ID, "err", err)
		}
		cancel()
		ids = append(ids, s.ID)
	}
	k.obs.forget(ids...)
	k.probes.forgetKills(ids...)
	k.cleanupPod(uid)
}

// cleanupPod removes a gone pod's directory (volumes, etc-hosts,
// termination messages) and tokens. Its logs go with its containers.
func (k *Kubelet) cleanupPod(uid string) {
	k.tokens.forgetPod(uid)
	k.statuses.Delete(types.UID(uid))
	if uid == "" || strings.ContainsAny(uid, "/.") {
		return
	}
	dir := k.podDir(uid)
	if err := unmountUnder(dir); err != nil {
		// Removing would reach into what is still mounted: leave it.
		k.cfg.Logger.Warn("unmount pod volumes", "uid", uid, "err", err)
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		k.cfg.Logger.Warn("remove pod directory", "uid", uid, "err", err)
	}
	if err := removePodCgroups(k.cfg.CgroupRoot, uid); err != nil {
		k.cfg.Logger.Warn("remove pod cgroup", "uid", uid, "err", err)
	}
	// The burstable class's shares follow the pods that remain.
	if err := k.podCgroups(nil); err != nil {
		k.cfg.Logger.Warn("QoS cgroups", "err", err)
	}
}

// relistLoop lists the runtime every RelistPeriod and wakes the worker of
// every pod whose sandboxes or containers changed — including pods the
// API no longer has (their worker cleans up: orphan GC).
func (k *Kubelet) relistLoop(ctx context.Context) {
	t := k.cfg.Clock.NewTicker(k.cfg.RelistPeriod)
	defer t.Stop()
	for {
		if err := k.relist(ctx); err != nil && ctx.Err() == nil {
			k.cfg.Logger.Warn("relist", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
	}
}

func (k *Kubelet) relist(ctx context.Context) error {
	cctx, cancel := k.cri.ctx(ctx)
	defer cancel()
	sbs, err := k.cri.rt.ListPodSandbox(cctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	cs, err := k.cri.rt.ListContainers(cctx, &cri.ListContainersRequest{})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	parts := map[types.UID][]string{}
	live := map[string]bool{}
	for _, s := range sbs.Items {
		live[s.Id] = true
		if uid := s.Labels[labelPodUID]; uid != "" {
			parts[types.UID(uid)] = append(parts[types.UID(uid)], s.Id+"="+s.State.String())
		}
	}
	for _, c := range cs.Containers {
		live[c.Id] = true
		if uid := c.Labels[labelPodUID]; uid != "" {
			parts[types.UID(uid)] = append(parts[types.UID(uid)], c.Id+"="+c.State.String())
		}
	}
	k.obs.prune(live)
	now := map[types.UID]string{}
	for uid, p := range parts {
		sort.Strings(p)
		now[uid] = strings.Join(p, ",")
	}
	var changed []types.UID
	k.mu.Lock()
	for uid, fp := range now {
		if k.relisted[uid] != fp {
			changed = append(changed, uid)
		}
	}
	for uid := range k.relisted {
		if _, ok := now[uid]; !ok {
			changed = append(changed, uid)
		}
	}
	k.relisted = now
	k.mu.Unlock()
	slices.Sort(changed)
	for _, uid := range changed {
		k.trigger(uid)
	}
	return nil
}
