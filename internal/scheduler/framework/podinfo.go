package framework

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// PodInfo is a pod with what the scheduler derives from it once, so that
// the per-node hot path does not re-parse selectors or re-sum requests.
// It is immutable after NewPodInfo; replace it when the pod changes.
type PodInfo struct {
	Pod *corev1.Pod
	// Requests is PodRequests(pod, false); NonZeroRequests applies the
	// scoring defaults for unset cpu/memory.
	Requests        *Resource
	NonZeroRequests *Resource
	// Affinity terms parsed from spec.affinity.podAffinity/podAntiAffinity.
	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	// ParseError is set when a selector in the pod could not be parsed;
	// such a pod is unschedulable with this error as the reason.
	ParseError error
}

// AffinityTerm is a parsed PodAffinityTerm. A pod p matches the term when
// p's namespace is in Namespaces (or matches NamespaceSelector) and p's
// labels match Selector.
type AffinityTerm struct {
	Namespaces sets.Set[string]
	Selector   labels.Selector
	// NamespaceSelector is nil when the term names no selector (only
	// Namespaces count); labels.Everything() for an empty selector {}.
	NamespaceSelector labels.Selector
	TopologyKey       string
}

// WeightedAffinityTerm is a preferred term with its weight (1-100).
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// Matches reports whether pod (whose namespace has nsLabels) matches the
// term. nsLabels are only consulted when the term has a NamespaceSelector.
func (t *AffinityTerm) Matches(pod *corev1.Pod, nsLabels labels.Set) bool {
	if !t.Namespaces.Has(pod.Namespace) {
		if t.NamespaceSelector == nil || !t.NamespaceSelector.Matches(nsLabels) {
			return false
		}
	}
	return t.Selector.Matches(labels.Set(pod.Labels))
}

// NewPodInfo derives a PodInfo.
func NewPodInfo(pod *corev1.Pod) *PodInfo {
	pi := &PodInfo{Pod: pod, Requests: PodRequests(pod, false), NonZeroRequests: PodRequests(pod, true)}
	aff := pod.Spec.Affinity
	if aff == nil {
		return pi
	}
	if a := aff.PodAffinity; a != nil {
		pi.RequiredAffinityTerms = pi.terms(a.RequiredDuringSchedulingIgnoredDuringExecution)
		pi.PreferredAffinityTerms = pi.weighted(a.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	if a := aff.PodAntiAffinity; a != nil {
		pi.RequiredAntiAffinityTerms = pi.terms(a.RequiredDuringSchedulingIgnoredDuringExecution)
		pi.PreferredAntiAffinityTerms = pi.weighted(a.PreferredDuringSchedulingIgnoredDuringExecution)
	}
	return pi
}

func (pi *PodInfo) terms(in []corev1.PodAffinityTerm) []AffinityTerm {
	if len(in) == 0 {
		return nil
	}
	out := make([]AffinityTerm, 0, len(in))
	for i := range in {
		t, err := NewAffinityTerm(pi.Pod, &in[i])
		if err != nil {
			pi.ParseError = err
			continue
		}
		out = append(out, t)
	}
	return out
}

func (pi *PodInfo) weighted(in []corev1.WeightedPodAffinityTerm) []WeightedAffinityTerm {
	if len(in) == 0 {
		return nil
	}
	out := make([]WeightedAffinityTerm, 0, len(in))
	for i := range in {
		t, err := NewAffinityTerm(pi.Pod, &in[i].PodAffinityTerm)
		if err != nil {
			pi.ParseError = err
			continue
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: in[i].Weight})
	}
	return out
}

// NewAffinityTerm parses a term of pod. With neither namespaces nor a
// namespace selector the term is about pod's own namespace. matchLabelKeys
// and mismatchLabelKeys add the pod's own values for those keys to the
// selector, as upstream does.
func NewAffinityTerm(pod *corev1.Pod, term *corev1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, err
	}
	if term.LabelSelector == nil {
		sel = labels.Nothing()
	}
	for _, k := range term.MatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, "=", []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	for _, k := range term.MismatchLabelKeys {
		if v, ok := pod.Labels[k]; ok {
			if r, err := labels.NewRequirement(k, "!=", []string{v}); err == nil {
				sel = sel.Add(*r)
			}
		}
	}
	t := AffinityTerm{Selector: sel, TopologyKey: term.TopologyKey, Namespaces: sets.New(term.Namespaces...)}
	if term.NamespaceSelector != nil {
		ns, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return AffinityTerm{}, err
		}
		t.NamespaceSelector = ns
	} else if len(term.Namespaces) == 0 {
		t.Namespaces.Insert(pod.Namespace)
	}
	return t, nil
}

// QueuedPodInfo is a pod in the scheduling queue.
type QueuedPodInfo struct {
	*PodInfo
	// Timestamp is when the pod was last added to the queue (arrival order).
	Timestamp time.Time
	// InitialAttemptTimestamp is when it was first popped, for e2e latency;
	// nil until then.
	InitialAttemptTimestamp *time.Time
	// Attempts counts scheduling attempts, for backoff.
	Attempts int
	// UnschedulablePlugins and PendingPlugins name the plugins that
	// rejected the pod in its last attempt; only events those plugins
	// registered can move it back to the active queue.
	UnschedulablePlugins sets.Set[string]
	PendingPlugins       sets.Set[string]
	// GatingPlugin is the PreEnqueue plugin holding the pod back, if any.
	GatingPlugin string
}
