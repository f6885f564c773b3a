package nodelifecycle

import (
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
)

// evictionDeadline decides when a pod with tolerations must leave a node
// with the NoExecute taints, each of which started at start(taint).
//
// Each taint is matched with the first toleration that tolerates it. A
// taint none tolerates evicts at once: evict is true and at is zero. A
// toleration with tolerationSeconds lets the pod stay that long after
// its taint started (zero or negative: not at all); the earliest such
// deadline wins. When every taint is tolerated forever evict is false.
func evictionDeadline(taints []corev1.Taint, tolerations []corev1.Toleration, start func(*corev1.Taint) time.Time) (at time.Time, evict bool) {
	for i := range taints {
		t := &taints[i]
		tol := firstToleration(tolerations, t)
		if tol == nil {
			return time.Time{}, true
		}
		if tol.TolerationSeconds == nil {
			continue
		}
		d := start(t).Add(time.Duration(max(*tol.TolerationSeconds, 0)) * time.Second)
		if !evict || d.Before(at) {
			at, evict = d, true
		}
	}
	return at, evict
}

// noExecuteTaints are taints' NoExecute ones.
func noExecuteTaints(taints []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for _, t := range taints {
		if t.Effect == corev1.TaintEffectNoExecute {
			out = append(out, t)
		}
	}
	return out
}

// firstToleration returns the first of tolerations that tolerates t, or
// nil. Matching is the API's own (corev1.Toleration.ToleratesTaint): the
// Lt and Gt operators, behind a feature gate upstream that is off by
// default, match nothing, as in our scheduler.
func firstToleration(tolerations []corev1.Toleration, t *corev1.Taint) *corev1.Toleration {
	for i := range tolerations {
		if tolerations[i].ToleratesTaint(discardLog, t, false) {
			return &tolerations[i]
		}
	}
	return nil
}

// discardLog is the logger ToleratesTaint asks for: it logs only for the
// comparison operators, which are off.
var discardLog = logr.Discard()

// taintStart is when an eviction clock for taint t starts: its
// timeAdded, which the API stores to the second, refined by seen (when
// this process first saw the taint, zero if never) when that falls in
// the same second, so that tolerationSeconds is not cut short by the
// rounding. A taint without timeAdded starts when first seen, or now.
func taintStart(t *corev1.Taint, seen, now time.Time) time.Time {
	if t.TimeAdded == nil || t.TimeAdded.IsZero() {
		if seen.IsZero() {
			return now
		}
		return seen
	}
	added := t.TimeAdded.Time
	if !seen.Before(added) && seen.Before(added.Add(time.Second)) {
		return seen
	}
	return added
}
