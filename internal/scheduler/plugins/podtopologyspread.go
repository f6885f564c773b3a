package plugins

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// PodTopologySpreadName is the plugin's name in profiles.
const PodTopologySpreadName = "PodTopologySpread"

// Filter reasons, as upstream.
const (
	ErrReasonTopologySpread             = "node(s) didn't match pod topology spread constraints"
	ErrReasonTopologySpreadMissingLabel = ErrReasonTopologySpread + " (missing required label)"
)

// ptsSystemDefaults are upstream's System default constraints.
var ptsSystemDefaults = []corev1.TopologySpreadConstraint{
	{TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.ScheduleAnyway, MaxSkew: 3},
	{TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway, MaxSkew: 5},
}

// PodTopologySpread spreads matching pods evenly across topology domains
// (zones, hosts, ...), as pod.spec.topologySpreadConstraints ask.
//
// For one constraint, a domain is a value of its topologyKey label. The
// eligible domains are those of nodes that carry every constraint's key and
// pass the constraint's node inclusion policies (nodeAffinityPolicy Honor
// by default: the pod's nodeSelector/required affinity; nodeTaintsPolicy
// Ignore by default, Honor: no untolerated NoSchedule/NoExecute taint). A
// domain's count is the number of pods on its eligible nodes that are in
// the pod's namespace, not terminating, and match the constraint's
// selector (labelSelector plus the pod's values of matchLabelKeys).
//
// DoNotSchedule constraints filter: placing the pod on node n must keep
//
//	count(domain of n) + (1 if the pod matches its own selector) - min ≤ maxSkew
//
// where min is the smallest eligible domain count, or 0 while there are
// fewer eligible domains than minDomains. ScheduleAnyway constraints score:
// each node gets Σ count(domain)·log(#domains+2) + (maxSkew-1) over the
// constraints, and NormalizeScore reverses it so emptier domains win.
//
// A pod without constraints of its own gets the profile's default
// constraints (System: ScheduleAnyway over hostname, maxSkew 3, and zone,
// maxSkew 5), with a selector built from the Services, ReplicaSets,
// StatefulSets and ReplicationControllers that select it; with no such
// owner it gets none.
//
// Cost: PreFilter and PreScore need counts over every node. They keep
// each node's counts from earlier cycles, keyed by the NodeInfo's
// Generation, and recount only nodes that changed (in parallel when many
// did), so a cycle costs a Generation compare per node plus the changed
// nodes (podtopologyspread_cache.go). Totals live in one small table per
// constraint (a slice searched linearly for few domains, a map for many);
// Filter and Score then do O(constraints) work per node without
// allocating.
//
// The fields are set by the factory and only read afterwards, except the
// counter, which locks itself.
type PodTopologySpread struct {
	handle          framework.Handle
	parallelizer    framework.Parallelizer
	defaults        []corev1.TopologySpreadConstraint
	systemDefaulted bool

	// Listers used to build default selectors; nil when there are no
	// default constraints.
	services     corelisters.ServiceLister
	controllers  corelisters.ReplicationControllerLister
	replicaSets  appslisters.ReplicaSetLister
	statefulSets appslisters.StatefulSetLister

	// counter remembers per-node counts across cycles (see
	// podtopologyspread_cache.go).
	counter ptsCounter
}

var (
	_ framework.PreFilterPlugin     = (*PodTopologySpread)(nil)
	_ framework.PreFilterExtensions = (*PodTopologySpread)(nil)
	_ framework.FilterPlugin        = (*PodTopologySpread)(nil)
	_ framework.PreScorePlugin      = (*PodTopologySpread)(nil)
	_ framework.ScorePlugin         = (*PodTopologySpread)(nil)
	_ framework.ScoreExtensions     = (*PodTopologySpread)(nil)
	_ framework.EnqueueExtensions   = (*PodTopologySpread)(nil)
)

// NewPodTopologySpread builds the plugin. args is nil (System defaulting)
// or *configv1.PodTopologySpreadArgs; an empty defaultingType means System.
// When there are default constraints it requests the Service,
// ReplicationController, ReplicaSet and StatefulSet informers.
func NewPodTopologySpread(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	a := &configv1.PodTopologySpreadArgs{}
	switch v := args.(type) {
	case nil:
	case *configv1.PodTopologySpreadArgs:
		if v != nil {
			a = v.DeepCopy()
		}
	default:
		return nil, fmt.Errorf("%s: want args of type PodTopologySpreadArgs, got %T", PodTopologySpreadName, args)
	}
	if a.DefaultingType == "" {
		a.DefaultingType = configv1.SystemDefaulting
	}
	if err := ptsValidateArgs(a); err != nil {
		return nil, fmt.Errorf("%s: %w", PodTopologySpreadName, err)
	}
	pl := &PodTopologySpread{handle: h, parallelizer: h.Parallelizer(), defaults: a.DefaultConstraints}
	if a.DefaultingType == configv1.SystemDefaulting {
		pl.defaults = ptsSystemDefaults
		pl.systemDefaulted = true
	}
	if len(pl.defaults) > 0 {
		f := h.SharedInformerFactory()
		if f == nil {
			return nil, fmt.Errorf("%s: default constraints need a SharedInformerFactory", PodTopologySpreadName)
		}
		pl.services = f.Core().V1().Services().Lister()
		pl.controllers = f.Core().V1().ReplicationControllers().Lister()
		pl.replicaSets = f.Apps().V1().ReplicaSets().Lister()
		pl.statefulSets = f.Apps().V1().StatefulSets().Lister()
	}
	return pl, nil
}

// ptsValidateArgs checks what upstream's config validation checks.
func ptsValidateArgs(a *configv1.PodTopologySpreadArgs) error {
	switch a.DefaultingType {
	case configv1.SystemDefaulting:
		if len(a.DefaultConstraints) > 0 {
			return errors.New(`when .defaultingType is "System", .defaultConstraints must be empty`)
		}
		return nil
	case configv1.ListDefaulting:
	default:
		return fmt.Errorf("defaultingType %q is not supported (System, List)", a.DefaultingType)
	}
	type pair struct {
		key    string
		action corev1.UnsatisfiableConstraintAction
	}
	seen := map[pair]bool{}
	for i, c := range a.DefaultConstraints {
		switch {
		case c.MaxSkew <= 0:
			return fmt.Errorf("defaultConstraints[%d].maxSkew: must be greater than zero", i)
		case c.TopologyKey == "":
			return fmt.Errorf("defaultConstraints[%d].topologyKey: can not be empty", i)
		case c.WhenUnsatisfiable != corev1.DoNotSchedule && c.WhenUnsatisfiable != corev1.ScheduleAnyway:
			return fmt.Errorf("defaultConstraints[%d].whenUnsatisfiable: %q is not supported", i, c.WhenUnsatisfiable)
		case c.LabelSelector != nil:
			return fmt.Errorf("defaultConstraints[%d].labelSelector: constraints must not define a selector, as they are deduced for each pod", i)
		case c.MinDomains != nil && *c.MinDomains <= 0:
			return fmt.Errorf("defaultConstraints[%d].minDomains: must be greater than zero", i)
		}
		p := pair{c.TopologyKey, c.WhenUnsatisfiable}
		if seen[p] {
			return fmt.Errorf("defaultConstraints[%d]: duplicate {%s, %s}", i, c.TopologyKey, c.WhenUnsatisfiable)
		}
		seen[p] = true
	}
	return nil
}

func (pl *PodTopologySpread) Name() string { return PodTopologySpreadName }

// snapshot is the cycle's snapshot, nil without a handle.
func (pl *PodTopologySpread) snapshot() *framework.Snapshot {
	if pl.handle == nil {
		return nil
	}
	return pl.handle.Snapshot()
}

// ptsConstraint is a parsed TopologySpreadConstraint.
type ptsConstraint struct {
	maxSkew     int32
	minDomains  int32
	topologyKey string
	selector    labels.Selector
	// countable is false for a selector with no requirements: upstream
	// counts no existing pods against it.
	countable     bool
	honorAffinity bool
	honorTaints   bool
	// hostname: the key is kubernetes.io/hostname, every node its own
	// domain; scoring counts such domains per node, during Score.
	hostname bool
}

// ptsConstraintsFor returns the pod's constraints with the given action:
// its own when it has any, else the defaults.
func (pl *PodTopologySpread) ptsConstraintsFor(pod *corev1.Pod, action corev1.UnsatisfiableConstraintAction) ([]ptsConstraint, error) {
	if len(pod.Spec.TopologySpreadConstraints) > 0 {
		return ptsParseConstraints(pod.Spec.TopologySpreadConstraints, pod.Labels, action)
	}
	cs, err := ptsParseConstraints(pl.defaults, pod.Labels, action)
	if err != nil || len(cs) == 0 {
		return nil, err
	}
	sel := pl.ptsDefaultSelector(pod)
	if sel.Empty() {
		return nil, nil
	}
	for i := range cs {
		cs[i].selector = sel
		cs[i].countable = true
	}
	return cs, nil
}

func ptsParseConstraints(in []corev1.TopologySpreadConstraint, podLabels map[string]string, action corev1.UnsatisfiableConstraintAction) ([]ptsConstraint, error) {
	var out []ptsConstraint
	for i := range in {
		c := &in[i]
		if c.WhenUnsatisfiable != action {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(c.LabelSelector)
		if err != nil {
			return nil, err
		}
		sel = ptsWithMatchLabelKeys(sel, c.MatchLabelKeys, podLabels)
		pc := ptsConstraint{
			maxSkew:       c.MaxSkew,
			minDomains:    1,
			topologyKey:   c.TopologyKey,
			selector:      sel,
			countable:     !sel.Empty(),
			honorAffinity: c.NodeAffinityPolicy == nil || *c.NodeAffinityPolicy == corev1.NodeInclusionPolicyHonor,
			honorTaints:   c.NodeTaintsPolicy != nil && *c.NodeTaintsPolicy == corev1.NodeInclusionPolicyHonor,
			hostname:      c.TopologyKey == corev1.LabelHostname,
		}
		if c.MinDomains != nil {
			pc.minDomains = *c.MinDomains
		}
		out = append(out, pc)
	}
	return out, nil
}

// ptsWithMatchLabelKeys narrows sel to pods sharing the pod's values for
// keys (those the pod has), e.g. pod-template-hash so that each rollout
// revision spreads on its own. A selector matching nothing stays so.
func ptsWithMatchLabelKeys(sel labels.Selector, keys []string, podLabels map[string]string) labels.Selector {
	if len(keys) == 0 {
		return sel
	}
	reqs, selectable := sel.Requirements()
	if !selectable {
		return sel
	}
	set := labels.Set{}
	for _, k := range keys {
		if v, ok := podLabels[k]; ok {
			set[k] = v
		}
	}
	if len(set) == 0 {
		return sel
	}
	return labels.SelectorFromSet(set).Add(reqs...)
}

var (
	ptsRCKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")
	ptsRSKind = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	ptsSSKind = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
)

// ptsDefaultSelector is the selector of the pod's "siblings": the union of
// the selectors of the Services selecting it and of its controller (RC, RS
// or StatefulSet). Empty when it has neither.
func (pl *PodTopologySpread) ptsDefaultSelector(pod *corev1.Pod) labels.Selector {
	set := labels.Set{}
	if pl.services != nil {
		if svcs, err := pl.services.Services(pod.Namespace).List(labels.Everything()); err == nil {
			for _, svc := range svcs {
				// A Service with no selector selects nothing, not everything.
				if svc.Spec.Selector == nil {
					continue
				}
				if labels.ValidatedSetSelector(svc.Spec.Selector).Matches(labels.Set(pod.Labels)) {
					set = labels.Merge(set, svc.Spec.Selector)
				}
			}
		}
	}
	sel := labels.SelectorFromSet(set)
	owner := metav1.GetControllerOfNoCopy(pod)
	if owner == nil || pl.services == nil {
		return sel
	}
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return sel
	}
	var ls *metav1.LabelSelector
	switch gv.WithKind(owner.Kind) {
	case ptsRCKind:
		if rc, err := pl.controllers.ReplicationControllers(pod.Namespace).Get(owner.Name); err == nil {
			return labels.SelectorFromSet(labels.Merge(set, rc.Spec.Selector))
		}
		return sel
	case ptsRSKind:
		if rs, err := pl.replicaSets.ReplicaSets(pod.Namespace).Get(owner.Name); err == nil {
			ls = rs.Spec.Selector
		}
	case ptsSSKind:
		if ss, err := pl.statefulSets.StatefulSets(pod.Namespace).Get(owner.Name); err == nil {
			ls = ss.Spec.Selector
		}
	}
	if ls == nil {
		return sel
	}
	other, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return sel
	}
	if reqs, ok := other.Requirements(); ok {
		sel = sel.Add(reqs...)
	}
	return sel
}

// ptsHasAllKeys reports whether a node carries every constraint's key;
// nodes that do not are outside every domain.
func ptsHasAllKeys(nodeLabels map[string]string, cs []ptsConstraint) bool {
	for i := range cs {
		if _, ok := nodeLabels[cs[i].topologyKey]; !ok {
			return false
		}
	}
	return true
}

// ptsCountMatching counts the pods on a node that count for c: same
// namespace, not terminating, matching the selector.
func ptsCountMatching(pods []*framework.PodInfo, c *ptsConstraint, namespace string) int64 {
	if !c.countable {
		return 0
	}
	var n int64
	for _, pi := range pods {
		p := pi.Pod
		if p.Namespace != namespace || p.DeletionTimestamp != nil {
			continue
		}
		if c.selector.Matches(labels.Set(p.Labels)) {
			n++
		}
	}
	return n
}

// ptsEligibility evaluates a node's inclusion policies once for all
// constraints: affinity and taint checks are per pod, not per constraint.
type ptsEligibility struct {
	anyAffinity, anyTaints bool
}

func ptsEligibilityOf(cs []ptsConstraint) ptsEligibility {
	var e ptsEligibility
	for i := range cs {
		e.anyAffinity = e.anyAffinity || cs[i].honorAffinity
		e.anyTaints = e.anyTaints || cs[i].honorTaints
	}
	return e
}

// check returns whether the node passes the pod's required affinity and
// taints, computing only what some constraint honors.
func (e ptsEligibility) check(pod *corev1.Pod, req *naRequired, node *corev1.Node) (affinityOK, taintsOK bool) {
	affinityOK = !e.anyAffinity || req.match(node)
	taintsOK = true
	if e.anyTaints {
		_, bad := ttFindUntolerated(node.Spec.Taints, pod.Spec.Tolerations)
		taintsOK = !bad
	}
	return affinityOK, taintsOK
}

func (c *ptsConstraint) includes(affinityOK, taintsOK bool) bool {
	return (!c.honorAffinity || affinityOK) && (!c.honorTaints || taintsOK)
}

// ptsLinearDomains is how many domains are searched linearly before a map
// index is built: comparing a few short strings beats hashing.
const ptsLinearDomains = 8

// ptsDomainCounts counts matching pods per domain of one constraint.
type ptsDomainCounts struct {
	values []string
	counts []int64
	index  map[string]int32 // nil while len(values) <= ptsLinearDomains
}

func ptsNewDomainCounts(hint int) ptsDomainCounts {
	if hint <= ptsLinearDomains {
		return ptsDomainCounts{}
	}
	return ptsDomainCounts{
		values: make([]string, 0, hint),
		counts: make([]int64, 0, hint),
		index:  make(map[string]int32, hint),
	}
}

func (d *ptsDomainCounts) len() int { return len(d.values) }

// find returns the index of domain v, or -1.
func (d *ptsDomainCounts) find(v string) int {
	if d.index != nil {
		if i, ok := d.index[v]; ok {
			return int(i)
		}
		return -1
	}
	for i := range d.values {
		if d.values[i] == v {
			return i
		}
	}
	return -1
}

// get returns domain v's count, 0 for an unknown domain.
func (d *ptsDomainCounts) get(v string) int64 {
	if i := d.find(v); i >= 0 {
		return d.counts[i]
	}
	return 0
}

// add adds n to domain v, creating it, and returns its index.
func (d *ptsDomainCounts) add(v string, n int64) int {
	i := d.find(v)
	if i < 0 {
		i = len(d.values)
		d.values = append(d.values, v)
		d.counts = append(d.counts, 0)
		switch {
		case d.index != nil:
			d.index[v] = int32(i)
		case len(d.values) > ptsLinearDomains:
			d.index = make(map[string]int32, 2*len(d.values))
			for j, x := range d.values {
				d.index[x] = int32(j)
			}
		}
	}
	d.counts[i] += n
	return i
}

func (d *ptsDomainCounts) clone() ptsDomainCounts {
	c := ptsDomainCounts{
		values: append([]string(nil), d.values...),
		counts: append([]int64(nil), d.counts...),
	}
	if d.index != nil {
		c.index = make(map[string]int32, len(d.index))
		for k, v := range d.index {
			c.index[k] = v
		}
	}
	return c
}

// --- queueing hints ---

// EventsToRegister: assigned pods appearing, leaving or changing labels
// change the counts; the pod gaining tolerations matters with
// nodeTaintsPolicy Honor; nodes appearing, leaving or changing labels or
// taints change the domains.
func (pl *PodTopologySpread) EventsToRegister(context.Context) ([]framework.ClusterEventWithHint, error) {
	return []framework.ClusterEventWithHint{
		{
			Event:          framework.ClusterEvent{Resource: framework.PodResource, ActionType: framework.Add | framework.UpdatePodLabel | framework.UpdatePodTolerations | framework.Delete},
			QueueingHintFn: pl.ptsHintPod,
		},
		{
			Event:          framework.ClusterEvent{Resource: framework.NodeResource, ActionType: framework.Add | framework.Delete | framework.UpdateNodeLabel | framework.UpdateNodeTaint},
			QueueingHintFn: pl.ptsHintNode,
		},
	}, nil
}

// ptsInvolved: only the pod itself or assigned pods of its namespace can
// change its spreading.
func ptsInvolved(incoming, pod *corev1.Pod) bool {
	return incoming.UID == pod.UID || (incoming.Spec.NodeName != "" && incoming.Namespace == pod.Namespace)
}

func (pl *PodTopologySpread) ptsHintPod(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldPod, newPod, err := naAsPair[*corev1.Pod](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	if (newPod != nil && !ptsInvolved(newPod, pod)) || (oldPod != nil && !ptsInvolved(oldPod, pod)) {
		return framework.QueueSkip, nil
	}
	cs, err := pl.ptsConstraintsFor(pod, corev1.DoNotSchedule)
	if err != nil {
		return framework.Queue, err
	}
	matchesAny := func(l map[string]string) bool {
		for i := range cs {
			if cs[i].selector.Matches(labels.Set(l)) {
				return true
			}
		}
		return false
	}
	switch {
	case oldPod != nil && newPod != nil:
		if newPod.UID == pod.UID && !equality.Semantic.DeepEqual(oldPod.Spec.Tolerations, newPod.Spec.Tolerations) {
			for i := range cs {
				if cs[i].honorTaints {
					return framework.Queue, nil
				}
			}
		}
		if equality.Semantic.DeepEqual(oldPod.Labels, newPod.Labels) {
			return framework.QueueSkip, nil
		}
		for i := range cs {
			if cs[i].selector.Matches(labels.Set(oldPod.Labels)) != cs[i].selector.Matches(labels.Set(newPod.Labels)) {
				return framework.Queue, nil
			}
		}
		return framework.QueueSkip, nil
	case newPod != nil:
		if matchesAny(newPod.Labels) {
			return framework.Queue, nil
		}
	case oldPod != nil:
		if matchesAny(oldPod.Labels) {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}

func (pl *PodTopologySpread) ptsHintNode(pod *corev1.Pod, oldObj, newObj interface{}) (framework.QueueingHint, error) {
	oldNode, newNode, err := naAsPair[*corev1.Node](oldObj, newObj)
	if err != nil {
		return framework.Queue, err
	}
	cs, err := pl.ptsConstraintsFor(pod, corev1.DoNotSchedule)
	if err != nil {
		return framework.Queue, err
	}
	oldOK := oldNode != nil && ptsHasAllKeys(oldNode.Labels, cs)
	newOK := newNode != nil && ptsHasAllKeys(newNode.Labels, cs)
	switch {
	case oldNode != nil && newNode != nil:
		if oldOK != newOK {
			return framework.Queue, nil
		}
		if newOK {
			for i := range cs {
				k := cs[i].topologyKey
				if oldNode.Labels[k] != newNode.Labels[k] {
					return framework.Queue, nil
				}
			}
			if !equality.Semantic.DeepEqual(oldNode.Spec.Taints, newNode.Spec.Taints) {
				return framework.Queue, nil
			}
		}
	case newNode != nil:
		if newOK {
			return framework.Queue, nil
		}
	case oldNode != nil:
		if oldOK {
			return framework.Queue, nil
		}
	}
	return framework.QueueSkip, nil
}
