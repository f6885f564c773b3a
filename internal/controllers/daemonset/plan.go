package daemonset

import (
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The pure core: given a DaemonSet, the nodes, its pods by node, its
// current revision's hash and the time, which pods to create and delete,
// and what the status says. Nothing here talks to the API server.

// planInput is everything one sync decides from.
type planInput struct {
	ds    *appsv1.DaemonSet
	nodes []*corev1.Node
	// pods are the set's pods by the node they are for (targetNode); ""
	// holds pods for no node at all. Terminal pods being deleted are left
	// out: they are gone as far as the set is concerned.
	pods map[string][]*corev1.Pod
	hash string // the current revision's
	now  time.Time
}

// dsPlan is the writes of one sync.
type dsPlan struct {
	create []string      // nodes that get a new pod
	delete []*corev1.Pod // pods to delete now
	// failed pods are deleted too, but the caller spaces out the deletes
	// per node (a kubelet rejecting the pod would otherwise make the set
	// fight it in a hot loop).
	failed []*corev1.Pod
}

func (p dsPlan) empty() bool { return len(p.create)+len(p.delete)+len(p.failed) == 0 }

// planManage puts one pod on every node that should run one and removes
// the rest, as upstream's manage step does:
//
//   - a node that should run the pod and has none gets one;
//   - on a node where the pod may stay, failed pods are deleted (to be
//     made again), succeeded ones too; of several running pods the
//     oldest stays (with maxSurge, the oldest of the new revision and,
//     while that is not yet available, the oldest old one);
//   - a node where the pod may not stay (selector, affinity, an
//     untolerated NoExecute taint) loses its pods;
//   - pods waiting for a node that no longer exists are deleted.
//
// A node whose only pod is terminating gets its new pod once that one is
// gone, so two never run at once (host ports) unless maxSurge allows it.
func planManage(in planInput) dsPlan {
	var p dsPlan
	surge := allowsSurge(in.ds)
	known := map[string]bool{}
	for _, node := range in.nodes {
		known[node.Name] = true
		run, cont := shouldRun(node, in.ds)
		pods := in.pods[node.Name]
		switch {
		case run && len(pods) == 0:
			p.create = append(p.create, node.Name)
		case cont:
			var running []*corev1.Pod
			for _, pod := range pods {
				switch {
				case pod.DeletionTimestamp != nil:
				case pod.Status.Phase == corev1.PodFailed:
					p.failed = append(p.failed, pod)
				case pod.Status.Phase == corev1.PodSucceeded:
					p.delete = append(p.delete, pod)
				default:
					running = append(running, pod)
				}
			}
			sortOldestFirst(running)
			if !surge {
				if len(running) > 1 {
					p.delete = append(p.delete, running[1:]...)
				}
				continue
			}
			if len(running) == 0 {
				if run {
					p.create = append(p.create, node.Name)
				}
				continue
			}
			p.delete = append(p.delete, surgeExtras(in, running)...)
		default:
			for _, pod := range pods {
				if pod.DeletionTimestamp == nil {
					p.delete = append(p.delete, pod)
				}
			}
		}
	}
	for node, pods := range in.pods {
		if known[node] {
			continue
		}
		for _, pod := range pods {
			// Bound pods of a deleted node are the pod GC's; unbound ones
			// would wait for it forever.
			if pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil {
				p.delete = append(p.delete, pod)
			}
		}
	}
	sortPods(p.delete)
	sortPods(p.failed)
	return p
}

// surgeExtras picks, of the running pods on one node (oldest first),
// those to delete while surging: at most two stay, the oldest new pod and
// the oldest old one, and the old one only while it is ready and the new
// one is not yet available.
func surgeExtras(in planInput, running []*corev1.Pod) []*corev1.Pod {
	var extras []*corev1.Pod
	var oldestNew, oldestOld *corev1.Pod
	for _, pod := range running {
		switch {
		case isUpdated(pod, in.ds, in.hash) && oldestNew == nil:
			oldestNew = pod
		case !isUpdated(pod, in.ds, in.hash) && oldestOld == nil:
			oldestOld = pod
		default:
			extras = append(extras, pod)
		}
	}
	if oldestNew != nil && oldestOld != nil &&
		(!isReady(oldestOld) || isAvailable(oldestNew, in.ds.Spec.MinReadySeconds, in.now)) {
		extras = append(extras, oldestOld)
	}
	return extras
}

// planRollingUpdate replaces pods of older revisions (RollingUpdate), as
// upstream does:
//
//   - without maxSurge, it deletes old pods (the manage step then makes
//     new ones) while at most maxUnavailable nodes are without an
//     available pod; an old pod that is not available anyway is replaced
//     at once;
//   - with maxSurge, it creates the new pod beside the old one on up to
//     maxSurge nodes at a time (at once where the old one is not
//     available), and deletes the old pod when the new one is available.
//
// Both counts are scaled from desiredNumberScheduled, rounding up; when
// both are 0, maxUnavailable is 1.
func planRollingUpdate(in planInput) dsPlan {
	var p dsPlan
	desired := 0
	nodes := map[string]*corev1.Node{}
	for _, node := range in.nodes {
		if run, _ := shouldRun(node, in.ds); run {
			desired++
			nodes[node.Name] = node
		}
	}
	maxSurge, maxUnavailable := rollingCounts(in.ds, desired)
	// Every node that should run the pod or has one, in a stable order.
	var names []string
	seen := map[string]bool{}
	for name := range nodes {
		names, seen[name] = append(names, name), true
	}
	for name := range in.pods {
		if name != "" && !seen[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	minReady := in.ds.Spec.MinReadySeconds

	if maxSurge == 0 {
		unavailable := 0
		var replace, candidates []*corev1.Pod
		for _, name := range names {
			newPod, oldPod, ok := podsOnNode(in, in.pods[name])
			switch {
			case !ok, newPod == nil && oldPod == nil, newPod != nil && oldPod != nil:
				// Being created, deleted or cleaned up by the manage step.
				unavailable++
			case newPod != nil:
				if !isAvailable(newPod, minReady, in.now) {
					unavailable++
				}
			case !isAvailable(oldPod, minReady, in.now):
				replace = append(replace, oldPod)
			default:
				candidates = append(candidates, oldPod)
			}
		}
		budget := max(0, min(maxUnavailable-unavailable, len(candidates)))
		p.delete = append(replace, candidates[:budget]...)
		return p
	}

	surging := 0
	var allowed, candidates []string
	for _, name := range names {
		newPod, oldPod, ok := podsOnNode(in, in.pods[name])
		switch {
		case !ok:
			surging++
		case oldPod == nil:
			// Up to date, or the manage step's to create.
		case newPod == nil:
			switch {
			case !isAvailable(oldPod, minReady, in.now):
				if nodes[name] == nil {
					// Unavailable and no longer wanted here: just remove it.
					p.delete = append(p.delete, oldPod)
					continue
				}
				allowed = append(allowed, name)
			default:
				candidates = append(candidates, name)
			}
		default:
			if !isAvailable(newPod, minReady, in.now) {
				surging++
				continue
			}
			p.delete = append(p.delete, oldPod)
		}
	}
	budget := max(0, min(maxSurge-surging, len(candidates)))
	p.create = append(allowed, candidates[:budget]...)
	return p
}

// podsOnNode splits the live pods on a node into the one of the current
// revision and the one of an older revision; ok is false when there are
// more of either (the manage step removes the extras first).
func podsOnNode(in planInput, pods []*corev1.Pod) (newPod, oldPod *corev1.Pod, ok bool) {
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if isUpdated(pod, in.ds, in.hash) {
			if newPod != nil {
				return nil, nil, false
			}
			newPod = pod
		} else {
			if oldPod != nil {
				return nil, nil, false
			}
			oldPod = pod
		}
	}
	return newPod, oldPod, true
}

// rollingCounts scales maxSurge and maxUnavailable to desired nodes.
func rollingCounts(ds *appsv1.DaemonSet, desired int) (maxSurge, maxUnavailable int) {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru != nil {
		if ru.MaxSurge != nil {
			maxSurge, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, desired, true)
		}
		if ru.MaxUnavailable != nil {
			maxUnavailable, _ = intstr.GetScaledValueFromIntOrPercent(ru.MaxUnavailable, desired, true)
		}
	}
	if desired > 0 && maxSurge == 0 && maxUnavailable == 0 {
		maxUnavailable = 1
	}
	return maxSurge, maxUnavailable
}

// allowsSurge: a rolling update that starts new pods beside old ones.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType {
		return false
	}
	s, _ := rollingCounts(ds, 1)
	return s > 0
}

// isUpdated: the pod is of the current revision, by its hash label or,
// for pods from before revisions, its template generation.
func isUpdated(pod *corev1.Pod, ds *appsv1.DaemonSet, hash string) bool {
	if hash != "" && pod.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] == hash {
		return true
	}
	g, ok := templateGeneration(ds)
	return ok && pod.Labels[templateGenerationLabel] == strconv.FormatInt(g, 10)
}

// countStatus counts, node by node, what the status reports, and when
// the next ready pod becomes available (no event marks it).
func countStatus(in planInput) (appsv1.DaemonSetStatus, time.Duration) {
	var st appsv1.DaemonSetStatus
	var requeue time.Duration
	minReady := in.ds.Spec.MinReadySeconds
	for _, node := range in.nodes {
		run, _ := shouldRun(node, in.ds)
		pods := in.pods[node.Name]
		if !run {
			if len(pods) > 0 {
				st.NumberMisscheduled++
			}
			continue
		}
		st.DesiredNumberScheduled++
		if len(pods) == 0 {
			continue
		}
		st.CurrentNumberScheduled++
		sorted := append([]*corev1.Pod(nil), pods...)
		sortOldestFirst(sorted)
		pod := sorted[0]
		if isReady(pod) {
			st.NumberReady++
			if d := availableIn(pod, minReady, in.now); d == 0 {
				st.NumberAvailable++
			} else if d > 0 && (requeue == 0 || d < requeue) {
				requeue = d
			}
		}
		if isUpdated(pod, in.ds, in.hash) {
			st.UpdatedNumberScheduled++
		}
	}
	st.NumberUnavailable = st.DesiredNumberScheduled - st.NumberAvailable
	st.ObservedGeneration = in.ds.Generation
	return st, requeue
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// availableIn is how long until a ready pod has been ready for
// minReadySeconds: 0 once it has, negative if it is not ready.
func availableIn(p *corev1.Pod, minReadySeconds int32, now time.Time) time.Duration {
	for _, c := range p.Status.Conditions {
		if c.Type != corev1.PodReady {
			continue
		}
		if c.Status != corev1.ConditionTrue {
			return -1
		}
		if minReadySeconds <= 0 || c.LastTransitionTime.IsZero() {
			return 0
		}
		left := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second).Sub(now)
		if left < 0 {
			return 0
		}
		// Whole-second timestamps: available strictly after.
		return left + time.Millisecond
	}
	return -1
}

func isAvailable(p *corev1.Pod, minReadySeconds int32, now time.Time) bool {
	return availableIn(p, minReadySeconds, now) == 0
}

// sortOldestFirst: bound pods before unbound, then by creation, then name.
func sortOldestFirst(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := pods[i], pods[j]
		if (a.Spec.NodeName != "") != (b.Spec.NodeName != "") {
			return a.Spec.NodeName != ""
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

func sortPods(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return pods[i].Name < pods[j].Name })
}
