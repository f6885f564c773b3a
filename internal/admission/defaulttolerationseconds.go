package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// DefaultTolerationSeconds gives every pod a grace period before taint
// based eviction: unless the pod already tolerates them, it tolerates the
// NoExecute taints node.kubernetes.io/not-ready and
// node.kubernetes.io/unreachable for 300 s (kube-apiserver's
// --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds). A node that blips is then
// not emptied at once; one that stays down is, after five minutes.
//
// A toleration with an empty key or effect matches any, so it counts as
// tolerating the taint already.
type DefaultTolerationSeconds struct {
	// NotReadySeconds and UnreachableSeconds are the tolerations'
	// seconds; nil means 300.
	NotReadySeconds    *int64
	UnreachableSeconds *int64
}

func (DefaultTolerationSeconds) Name() string { return "DefaultTolerationSeconds" }

// dtsDefaultSeconds is upstream's default for both flags.
const dtsDefaultSeconds = 300

// Admit implements Mutator.
func (p DefaultTolerationSeconds) Admit(_ context.Context, a *Attributes) error {
	if a.Resource.GroupResource() != podsResource || a.Subresource != "" || (a.Operation != Create && a.Operation != Update) {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	notReady, unreachable := false, false
	for _, t := range pod.Spec.Tolerations {
		if t.Effect != corev1.TaintEffectNoExecute && t.Effect != "" {
			continue
		}
		notReady = notReady || t.Key == corev1.TaintNodeNotReady || t.Key == ""
		unreachable = unreachable || t.Key == corev1.TaintNodeUnreachable || t.Key == ""
	}
	if !notReady {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, dtsToleration(corev1.TaintNodeNotReady, p.NotReadySeconds))
	}
	if !unreachable {
		pod.Spec.Tolerations = append(pod.Spec.Tolerations, dtsToleration(corev1.TaintNodeUnreachable, p.UnreachableSeconds))
	}
	return nil
}

func dtsToleration(key string, seconds *int64) corev1.Toleration {
	s := int64(dtsDefaultSeconds)
	if seconds != nil {
		s = *seconds
	}
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s}
}
