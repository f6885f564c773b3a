package nodelifecycle

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The NoExecute taints this controller owns. A node has at most one.
var (
	notReadyNoExecute    = corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	unreachableNoExecute = corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}
)

// conditionTaints maps a node condition in a status to the NoSchedule
// taint key it calls for.
var conditionTaints = map[corev1.NodeConditionType]map[corev1.ConditionStatus]string{
	corev1.NodeReady: {
		corev1.ConditionFalse:   corev1.TaintNodeNotReady,
		corev1.ConditionUnknown: corev1.TaintNodeUnreachable,
	},
	corev1.NodeMemoryPressure:     {corev1.ConditionTrue: corev1.TaintNodeMemoryPressure},
	corev1.NodeDiskPressure:       {corev1.ConditionTrue: corev1.TaintNodeDiskPressure},
	corev1.NodePIDPressure:        {corev1.ConditionTrue: corev1.TaintNodePIDPressure},
	corev1.NodeNetworkUnavailable: {corev1.ConditionTrue: corev1.TaintNodeNetworkUnavailable},
}

// noScheduleKeys are the NoSchedule taint keys this controller owns;
// others' NoSchedule taints are left alone.
var noScheduleKeys = map[string]bool{
	corev1.TaintNodeNotReady:           true,
	corev1.TaintNodeUnreachable:        true,
	corev1.TaintNodeMemoryPressure:     true,
	corev1.TaintNodeDiskPressure:       true,
	corev1.TaintNodePIDPressure:        true,
	corev1.TaintNodeNetworkUnavailable: true,
	corev1.TaintNodeUnschedulable:      true,
}

// noScheduleTaints returns node's taints with the owned NoSchedule ones
// made to match its conditions and spec.unschedulable, new ones stamped
// with now; changed is false when nothing needs to change.
func noScheduleTaints(node *corev1.Node, now time.Time) (taints []corev1.Taint, changed bool) {
	want := map[string]bool{}
	for _, c := range node.Status.Conditions {
		if key, ok := conditionTaints[c.Type][c.Status]; ok {
			want[key] = true
		}
	}
	if node.Spec.Unschedulable {
		want[corev1.TaintNodeUnschedulable] = true
	}
	have := map[string]bool{}
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule && noScheduleKeys[t.Key] {
			if !want[t.Key] {
				changed = true
				continue
			}
			have[t.Key] = true
		}
		taints = append(taints, t)
	}
	// Map order would make the taint order, and so the writes, random.
	for _, c := range []string{
		corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, corev1.TaintNodeMemoryPressure,
		corev1.TaintNodeDiskPressure, corev1.TaintNodePIDPressure, corev1.TaintNodeNetworkUnavailable,
		corev1.TaintNodeUnschedulable,
	} {
		if want[c] && !have[c] {
			taints = append(taints, stamped(corev1.Taint{Key: c, Effect: corev1.TaintEffectNoSchedule}, now))
			changed = true
		}
	}
	return taints, changed
}

// noExecuteAction is what a node's NoExecute taints need this pass.
type noExecuteAction int

const (
	// noExecuteKeep: the taints are right (or the node has no Ready
	// condition yet, and nothing can be said).
	noExecuteKeep noExecuteAction = iota
	// noExecuteQueue: the node needs its taint; adding it waits for the
	// zone's rate limiter.
	noExecuteQueue
	// noExecuteSwap: the node has the other taint of the pair; swap at
	// once, it was already rate limited when first added.
	noExecuteSwap
	// noExecuteRemove: the node is Ready; remove both taints.
	noExecuteRemove
)

// noExecuteFor decides node's NoExecute taints from its Ready condition.
// want is the taint it should carry (for Queue and Swap).
func noExecuteFor(node *corev1.Node) (noExecuteAction, corev1.Taint) {
	var want, other corev1.Taint
	switch readyStatus(node) {
	case corev1.ConditionFalse:
		want, other = notReadyNoExecute, unreachableNoExecute
	case corev1.ConditionUnknown:
		want, other = unreachableNoExecute, notReadyNoExecute
	case corev1.ConditionTrue:
		if hasTaint(node, notReadyNoExecute) || hasTaint(node, unreachableNoExecute) {
			return noExecuteRemove, corev1.Taint{}
		}
		return noExecuteKeep, corev1.Taint{}
	default:
		return noExecuteKeep, corev1.Taint{}
	}
	switch {
	case hasTaint(node, want):
		return noExecuteKeep, want
	case hasTaint(node, other):
		return noExecuteSwap, want
	}
	return noExecuteQueue, want
}

// hasTaint reports whether node has a taint with t's key and effect.
func hasTaint(node *corev1.Node, t corev1.Taint) bool {
	for i := range node.Spec.Taints {
		if node.Spec.Taints[i].MatchTaint(&t) {
			return true
		}
	}
	return false
}

// swapTaints returns taints without those matching remove (by key and
// effect) and with add, stamped with now, in place of any match.
func swapTaints(taints []corev1.Taint, add []corev1.Taint, remove []corev1.Taint, now time.Time) []corev1.Taint {
	out := make([]corev1.Taint, 0, len(taints)+len(add))
	for _, t := range taints {
		drop := false
		for i := range remove {
			drop = drop || t.MatchTaint(&remove[i])
		}
		for i := range add {
			drop = drop || t.MatchTaint(&add[i])
		}
		if !drop {
			out = append(out, t)
		}
	}
	for _, t := range add {
		out = append(out, stamped(t, now))
	}
	return out
}

// stamped is t with timeAdded now, which taint eviction counts
// tolerationSeconds from.
func stamped(t corev1.Taint, now time.Time) corev1.Taint {
	ts := metav1.NewTime(now)
	t.TimeAdded = &ts
	return t
}

// taintsPatch is a merge patch replacing node's taints, valid only
// against the resourceVersion they were computed from: taints have no
// merge key, so the whole list is written and a concurrent change must
// fail (409) rather than be lost.
func taintsPatch(node *corev1.Node, taints []corev1.Taint) ([]byte, error) {
	if taints == nil {
		taints = []corev1.Taint{}
	}
	type meta struct {
		ResourceVersion string `json:"resourceVersion"`
	}
	type spec struct {
		Taints []corev1.Taint `json:"taints"`
	}
	return json.Marshal(struct {
		Metadata meta `json:"metadata"`
		Spec     spec `json:"spec"`
	}{meta{node.ResourceVersion}, spec{taints}})
}
