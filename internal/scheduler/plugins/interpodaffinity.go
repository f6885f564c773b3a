package plugins

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// InterPodAffinityName is the name of the InterPodAffinity plugin.
const InterPodAffinityName = "InterPodAffinity"

// InterPodAffinity enforces spec.affinity.podAffinity / podAntiAffinity.
//
// Filter checks three things per node, as upstream does: the node's
// topology domain holds a pod matching all of the incoming pod's required
// affinity terms (or no such pod exists anywhere and the pod matches its
// own terms: the first pod of a self-affine group); the domain holds no
// pod matching one of its required anti-affinity terms; and no existing
// pod in the domain has a required anti-affinity term the incoming pod
// matches. Score adds the weights of preferred terms, both the incoming
// pod's and the existing pods' (plus hardPodAffinityWeight for existing
// pods' required affinity), and normalizes min-max to 0..100.
//
// # Why there is an index
//
// Upstream recomputes, every cycle, every existing pod against the
// incoming pod: O(pods) selector matches per pod scheduled, about a
// millisecond at 10k pods, which caps throughput well below what we need.
// Most of that work repeats: existing pods of one workload carry the same
// terms and the same labels. So the plugin keeps an index across cycles
// (ipaIndex) of
//
//   - term groups: existing pods' terms, grouped by the term's identity,
//     each with pod counts per value of the term's topology key;
//   - label groups: existing pods grouped by (namespace, labels), each
//     with pod counts per value of every topology key asked about so far.
//
// The index is brought up to date at the start of each cycle from the
// snapshot, touching only NodeInfos whose Generation changed since the
// last cycle (usually the one node the previous pod went to). A cycle then
// matches the incoming pod against each group once, not against each pod,
// and hands Filter and Score references to the matching groups' count
// maps: Filter is a handful of map lookups per node and allocates nothing.
//
// Concurrency contract: the count maps are shared with the cycle state and
// change only when PreFilter/PreScore of a later cycle syncs the index.
// This relies on the framework running one scheduling cycle at a time and
// not reading a cycle's Filter/Score state after the next cycle began,
// which is how the scheduler works (binding does not read this state).
//
// Files: the index is in interpodaffinity_index.go, PreFilter/Filter and
// the preemption extensions in interpodaffinity_filter.go, PreScore/Score
// in interpodaffinity_score.go.
type InterPodAffinity struct {
	h        framework.Handle
	nsLister corelisters.NamespaceLister
	// nsIndexer is nsLister's store, read directly by
	// ipaNamespaceLabels: a lister's Get of a missing namespace builds a
	// NotFound error (with fmt.Sprintf), twice a cycle.
	nsIndexer                 cache.Indexer
	hardWeight                int32
	ignorePreferredOfExisting bool
	idx                       *ipaIndex
}

var (
	_ framework.PreFilterPlugin     = (*InterPodAffinity)(nil)
	_ framework.FilterPlugin        = (*InterPodAffinity)(nil)
	_ framework.PreFilterExtensions = (*InterPodAffinity)(nil)
	_ framework.PreScorePlugin      = (*InterPodAffinity)(nil)
	_ framework.ScorePlugin         = (*InterPodAffinity)(nil)
	_ framework.EnqueueExtensions   = (*InterPodAffinity)(nil)
)

// NewInterPodAffinity builds the plugin. args is nil or
// *configv1.InterPodAffinityArgs (hardPodAffinityWeight defaults to 1).
func NewInterPodAffinity(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	hard := int32(1)
	ignore := false
	switch a := args.(type) {
	case nil:
	case *configv1.InterPodAffinityArgs:
		if a != nil {
			if a.HardPodAffinityWeight != nil {
				hard = *a.HardPodAffinityWeight
			}
			ignore = a.IgnorePreferredTermsOfExistingPods
		}
	default:
		return nil, fmt.Errorf("want args to be of type InterPodAffinityArgs, got %T", args)
	}
	if hard < 0 || hard > 100 {
		return nil, fmt.Errorf("hardPodAffinityWeight: Invalid value: %d: not in valid range [0-100]", hard)
	}
	nsInformer := h.SharedInformerFactory().Core().V1().Namespaces()
	return &InterPodAffinity{
		h:                         h,
		nsLister:                  nsInformer.Lister(),
		nsIndexer:                 nsInformer.Informer().GetIndexer(),
		hardWeight:                hard,
		ignorePreferredOfExisting: ignore,
		idx:                       newIPAIndex(int64(hard), h.Parallelizer()),
	}, nil
}

func (pl *InterPodAffinity) Name() string { return InterPodAffinityName }

// EventsToRegister: a scheduled pod appearing, changing labels or leaving
// can satisfy affinity or lift anti-affinity; a node appearing or getting
// labels can offer a new topology domain.
func (pl *InterPodAffinity) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{Event: framework.ClusterEvent{Resource: framework.AssignedPodResource, ActionType: framework.Add | framework.UpdatePodLabel | framework.Delete}, QueueingHintFn: pl.ipaHintPodChange},
		{Event: framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add | framework.UpdateNodeLabel | framework.UpdateNodeTaint}, QueueingHintFn: pl.ipaHintNodeChange},
	}, nil
}

func (pl *InterPodAffinity) ipaHintPodChange(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, _ := oldObj.(*corev1.Pod)
	newPod, _ := newObj.(*corev1.Pod)
	if oldPod == nil && newPod == nil {
		return framework.Queue, fmt.Errorf("unexpected objects %T, %T", oldObj, newObj)
	}
	if (newPod != nil && newPod.Spec.NodeName == "") || (oldPod != nil && oldPod.Spec.NodeName == "") {
		return framework.QueueSkip, nil
	}
	pi := framework.NewPodInfo(pod)
	aff, anti := pi.RequiredAffinityTerms, pi.RequiredAntiAffinityTerms
	switch {
	case oldPod != nil && newPod != nil:
		if !ipaMatchesAll(aff, oldPod) && ipaMatchesAll(aff, newPod) {
			return framework.Queue, nil
		}
		if ipaMatchesAny(anti, oldPod) && !ipaMatchesAny(anti, newPod) {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	case newPod != nil:
		if ipaMatchesAll(aff, newPod) {
			return framework.Queue, nil
		}
		return framework.QueueSkip, nil
	default:
		if ipaMatchesAny(anti, oldPod) {
			return framework.Queue, nil
		}
		// Upstream stops here; a deleted pod whose own anti-affinity
		// rejected the target also unblocks it, so queue for that too.
		old := framework.NewPodInfo(oldPod)
		for i := range old.RequiredAntiAffinityTerms {
			if old.RequiredAntiAffinityTerms[i].Matches(pod, nil) {
				return framework.Queue, nil
			}
		}
		return framework.QueueSkip, nil
	}
}

func (pl *InterPodAffinity) ipaHintNodeChange(pod *corev1.Pod, _, newObj interface{}) (framework.QueueingHint, error) {
	node, ok := newObj.(*corev1.Node)
	if !ok {
		return framework.Queue, fmt.Errorf("unexpected object %T", newObj)
	}
	pi := framework.NewPodInfo(pod)
	if len(pi.RequiredAffinityTerms)+len(pi.RequiredAntiAffinityTerms) == 0 {
		// Rejected by existing pods' anti-affinity: any new domain may do.
		return framework.Queue, nil
	}
	for _, terms := range [][]framework.AffinityTerm{pi.RequiredAffinityTerms, pi.RequiredAntiAffinityTerms} {
		for i := range terms {
			if _, ok := node.Labels[terms[i].TopologyKey]; ok {
				return framework.Queue, nil
			}
		}
	}
	return framework.QueueSkip, nil
}

// ipaMatchesAll reports whether pod matches every term (false for none):
// affinity needs one pod satisfying all terms at once.
func ipaMatchesAll(terms []framework.AffinityTerm, pod *corev1.Pod) bool {
	if len(terms) == 0 {
		return false
	}
	for i := range terms {
		if !terms[i].Matches(pod, nil) {
			return false
		}
	}
	return true
}

func ipaMatchesAny(terms []framework.AffinityTerm, pod *corev1.Pod) bool {
	for i := range terms {
		if terms[i].Matches(pod, nil) {
			return true
		}
	}
	return false
}

// ipaParseTerms parses an incoming pod's terms.
func ipaParseTerms(pod *corev1.Pod, in []corev1.PodAffinityTerm) ([]framework.AffinityTerm, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make([]framework.AffinityTerm, 0, len(in))
	for i := range in {
		t, err := framework.NewAffinityTerm(pod, &in[i])
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// ipaResolveNamespaces folds each namespace selector of an incoming pod's
// term into its Namespaces set, through the namespace lister, so that
// matching an existing pod never needs that pod's namespace labels. The
// empty selector {} stays: it matches every namespace.
func (pl *InterPodAffinity) ipaResolveNamespaces(t *framework.AffinityTerm) error {
	if t.NamespaceSelector == nil || t.NamespaceSelector.Empty() {
		return nil
	}
	nss, err := pl.nsLister.List(t.NamespaceSelector)
	if err != nil {
		return err
	}
	for _, ns := range nss {
		t.Namespaces.Insert(ns.Name)
	}
	t.NamespaceSelector = nil
	return nil
}

// ipaNamespaceLabels returns the labels of the pod's namespace, or none
// when the namespace is not (yet) known.
func (pl *InterPodAffinity) ipaNamespaceLabels(ns string) labels.Set {
	obj, ok, err := pl.nsIndexer.GetByKey(ns)
	if err != nil || !ok {
		return nil
	}
	n, _ := obj.(*corev1.Namespace)
	if n == nil {
		return nil
	}
	return n.Labels
}

// ipaSyncedKey marks in a cycle's state which index sides were synced, so
// that PreScore does not rescan the snapshot PreFilter already scanned.
const ipaSyncedKey framework.StateKey = "InterPodAffinity/synced"

type ipaSynced struct{ terms, labels bool }

func (s *ipaSynced) Clone() framework.StateData { return s }

func ipaMarkSynced(cs *framework.CycleState, terms, labels bool) {
	s, _ := cs.Read(ipaSyncedKey).(*ipaSynced)
	if s == nil {
		s = &ipaSynced{}
		cs.Write(ipaSyncedKey, s)
	}
	s.terms = s.terms || terms
	s.labels = s.labels || labels
}
