package podgc

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Reason says why a pod is collected: the "reason" label of the
// metrics, with upstream's values.
type Reason string

const (
	ReasonTerminated              Reason = "terminated"
	ReasonTerminatingOutOfService Reason = "out-of-service"
	ReasonOrphaned                Reason = "orphaned"
	ReasonTerminatingUnscheduled  Reason = "unscheduled"
)

const (
	orphanedConditionReason  = "DeletionByPodGC"
	orphanedConditionMessage = "PodGC: node no longer exists"
	evictedReason            = "Evicted"
)

// deletion is one pod to mark Failed (with condition, if set) and force
// delete.
type deletion struct {
	pod       *corev1.Pod
	reason    Reason
	condition *corev1.PodCondition
}

// plan decides which pods to collect, in upstream's order: terminated
// pods beyond threshold (evicted first, then oldest; threshold <= 0 keeps
// all), terminating pods on NotReady nodes tainted out-of-service,
// pods bound to nodes in gone, and terminating pods never scheduled. A
// pod is listed once, under the first reason that applies. It reads its
// arguments and changes nothing.
func plan(pods []*corev1.Pod, nodes map[string]*corev1.Node, gone map[string]bool, threshold int) []deletion {
	var out []deletion
	seen := map[types.UID]bool{}
	add := func(p *corev1.Pod, r Reason, c *corev1.PodCondition) {
		if !seen[p.UID] {
			seen[p.UID] = true
			out = append(out, deletion{pod: p, reason: r, condition: c})
		}
	}

	if threshold > 0 {
		var terminated []*corev1.Pod
		for _, p := range pods {
			if terminal(p) {
				terminated = append(terminated, p)
			}
		}
		if n := len(terminated) - threshold; n > 0 {
			slices.SortFunc(terminated, byEvictionThenAge)
			for _, p := range terminated[:n] {
				add(p, ReasonTerminated, nil)
			}
		}
	}

	var outOfService []*corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil || p.Spec.NodeName == "" {
			continue
		}
		if n := nodes[p.Spec.NodeName]; n != nil && !nodeReady(n) && hasTaint(n, corev1.TaintNodeOutOfService) {
			outOfService = append(outOfService, p)
		}
	}
	slices.SortFunc(outOfService, byEvictionThenAge)
	for _, p := range outOfService {
		add(p, ReasonTerminatingOutOfService, nil)
	}

	for _, p := range pods {
		if p.Spec.NodeName != "" && gone[p.Spec.NodeName] {
			add(p, ReasonOrphaned, &corev1.PodCondition{
				Type:    corev1.DisruptionTarget,
				Status:  corev1.ConditionTrue,
				Reason:  orphanedConditionReason,
				Message: orphanedConditionMessage,
			})
		}
	}

	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Spec.NodeName == "" {
			add(p, ReasonTerminatingUnscheduled, nil)
		}
	}
	return out
}

func terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// byEvictionThenAge puts evicted pods first (they are nobody's record of
// work done), then the oldest, names breaking ties.
func byEvictionThenAge(a, b *corev1.Pod) int {
	ae, be := evicted(a), evicted(b)
	if ae != be {
		if ae {
			return -1
		}
		return 1
	}
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}

func evicted(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodFailed && p.Status.Reason == evictedReason
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// quarantine tracks node names that pods are bound to but the node
// informer does not know. A name becomes a candidate for a live check
// only after it was missing for the whole quarantine: the informer may
// simply not have seen a node registered a moment ago.
type quarantine struct {
	since map[string]time.Time
}

// due records the names pods are bound to that are missing from nodes,
// forgets names that reappeared or no pod names any more, and returns
// the names missing for at least period, sorted.
func (q *quarantine) due(pods []*corev1.Pod, nodes map[string]*corev1.Node, now time.Time, period time.Duration) []string {
	if q.since == nil {
		q.since = map[string]time.Time{}
	}
	missing := map[string]bool{}
	for _, p := range pods {
		if n := p.Spec.NodeName; n != "" && nodes[n] == nil {
			missing[n] = true
			if _, ok := q.since[n]; !ok {
				q.since[n] = now
			}
		}
	}
	var out []string
	for n, t := range q.since {
		switch {
		case !missing[n]:
			delete(q.since, n)
		case now.Sub(t) >= period:
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// failedStatus returns the status patch that marks p Failed with cond
// (nil: no condition), keeping cond's transition time when p already has
// it with the same status. ok is false when p is already terminal and
// needs no patch.
func failedStatus(p *corev1.Pod, cond *corev1.PodCondition, now metav1.Time) (corev1.PodStatus, bool) {
	if terminal(p) {
		return corev1.PodStatus{}, false
	}
	st := corev1.PodStatus{Phase: corev1.PodFailed}
	if cond != nil {
		c := *cond
		c.LastTransitionTime = now
		for _, old := range p.Status.Conditions {
			if old.Type == c.Type && old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
		}
		st.Conditions = []corev1.PodCondition{c}
	}
	return st, true
}
