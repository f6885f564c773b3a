package quota

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	resourcehelper "k8s.io/component-helpers/resource"
)

// What a pod costs in quota, and which scopes it falls under.

// podCountName is the object-count name of pods: every pod in storage,
// terminal or not, unlike "pods".
const podCountName corev1.ResourceName = "count/pods"

// podResources are the fixed names the pod evaluator measures; hugepages
// and extended resources are matched by prefix (podMatching).
var podResources = []corev1.ResourceName{
	podCountName, corev1.ResourcePods,
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage,
	corev1.ResourceRequestsCPU, corev1.ResourceRequestsMemory, corev1.ResourceRequestsEphemeralStorage,
	corev1.ResourceLimitsCPU, corev1.ResourceLimitsMemory, corev1.ResourceLimitsEphemeralStorage,
}

func podMatching(input []corev1.ResourceName) []corev1.ResourceName {
	out := intersect(input, podResources)
	for _, n := range input {
		s := string(n)
		if strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) ||
			isQuotaExtendedResource(n) {
			out = append(out, n)
		}
	}
	return out
}

// podCharged reports whether a pod still uses compute quota at now, and
// when that will stop by itself (zero: not by the passing of time).
// Terminal pods are free. So is a pod stuck terminating (its node lost,
// say) once its deletionTimestamp plus its grace period has passed, so
// that it does not block its own replacement; upstream adds the grace to
// the deletionTimestamp (which already includes it), and so do we.
func podCharged(pod *corev1.Pod, now time.Time) (charged bool, until time.Time) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false, time.Time{}
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if now.After(end) {
			return false, time.Time{}
		}
		return true, end
	}
	return true, time.Time{}
}

// PodUsage is what one pod counts against quota at now: count/pods
// always; while charged, "pods" and its compute — requests under both
// their bare name (cpu, memory, ephemeral-storage, hugepages-*) and
// requests.*, limits under limits.*, extended resources under
// requests.<name>.
func PodUsage(pod *corev1.Pod, now time.Time) (corev1.ResourceList, time.Time) {
	out := corev1.ResourceList{podCountName: one()}
	charged, until := podCharged(pod, now)
	if !charged {
		return out, time.Time{}
	}
	requests, limits := resourcehelper.PodRequests(pod, podSizing), resourcehelper.PodLimits(pod, podSizing)
	out[corev1.ResourcePods] = one()
	for _, pair := range []struct{ bare, req, lim corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[pair.bare]; ok {
			out[pair.bare] = q
			out[pair.req] = q
		}
		if q, ok := limits[pair.bare]; ok {
			out[pair.lim] = q
		}
	}
	for name, q := range requests {
		switch {
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			out[name] = q
			out[corev1.DefaultResourceRequestsPrefix+name] = q
		case isExtendedResource(name):
			out[corev1.DefaultResourceRequestsPrefix+name] = q
		}
	}
	return out, until
}

// podSizing is how quota sizes a pod, as upstream's quota does, with
// component-helpers: the larger of the steady state (app containers plus
// sidecars) and the peak of the init sequence (each init container plus
// the sidecars started before it), pod-level resources in place of the
// containers' for the resources they name, plus the pod overhead (on
// limits, only where a limit is set). A container being resized counts
// at the larger of its spec and what its status reports, so that neither
// the old nor the new size escapes quota.
var podSizing = resourcehelper.PodResourcesOptions{UseStatusResources: true}

// podMatchesScope reports whether pod falls under one scope requirement
// (a spec.scopes entry is the requirement with operator Exists).
func podMatchesScope(pod *corev1.Pod, req corev1.ScopedResourceSelectorRequirement) (bool, error) {
	switch req.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return PodTerminating(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !PodTerminating(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return podBestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !podBestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if req.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		sel, err := scopeSelector(req)
		if err != nil {
			return false, err
		}
		var set labels.Set
		if pod.Spec.PriorityClassName != "" {
			set = labels.Set{string(corev1.ResourceQuotaScopePriorityClass): pod.Spec.PriorityClassName}
		}
		return sel.Matches(set), nil
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod), nil
	}
	return false, nil
}

// PodTerminating: "Terminating" in quota means a pod with a deadline
// (activeDeadlineSeconds), i.e. one that will end by itself — not one
// being deleted.
func PodTerminating(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// podBestEffort: the pod's QoS class, as the API server recorded it or,
// failing that, as it follows from the spec: BestEffort when no container
// (and not the pod) requests or limits any cpu or memory.
func podBestEffort(pod *corev1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == corev1.PodQOSBestEffort
	}
	setsCPUOrMemory := func(lists ...corev1.ResourceList) bool {
		for _, l := range lists {
			for name, q := range l {
				if (name == corev1.ResourceCPU || name == corev1.ResourceMemory) && q.Sign() > 0 {
					return true
				}
			}
		}
		return false
	}
	if r := pod.Spec.Resources; r != nil && setsCPUOrMemory(r.Requests, r.Limits) {
		return false
	}
	for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range cs {
			if setsCPUOrMemory(cs[i].Resources.Requests, cs[i].Resources.Limits) {
				return false
			}
		}
	}
	return true
}

// crossNamespaceAffinity: any pod (anti-)affinity term that names
// namespaces or selects them, i.e. reaches beyond the pod's own.
func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) > 0 || t.NamespaceSelector != nil }
	check := func(req []corev1.PodAffinityTerm, pref []corev1.WeightedPodAffinityTerm) bool {
		for i := range req {
			if cross(&req[i]) {
				return true
			}
		}
		for i := range pref {
			if cross(&pref[i].PodAffinityTerm) {
				return true
			}
		}
		return false
	}
	if pa := a.PodAffinity; pa != nil && check(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution) {
		return true
	}
	if pa := a.PodAntiAffinity; pa != nil && check(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution) {
		return true
	}
	return false
}
