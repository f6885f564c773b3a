package plugins

import (
	"context"
	"errors"
	"fmt"
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

const ptsPreFilterKey framework.StateKey = "PreFilter" + PodTopologySpreadName

// ptsPath is a domain and its count.
type ptsPath struct {
	value string
	num   int64
}

// ptsCriticalPaths keeps the two least-loaded domains: [0] always holds
// the minimum; [1] is at least [0] but not necessarily the second
// minimum. Two suffice because preemption only ever changes one node (one
// domain per constraint) on its own copy of the state, so after a removal
// the minimum is either the changed domain or the one kept.
type ptsCriticalPaths [2]ptsPath

func ptsNewCriticalPaths() ptsCriticalPaths {
	return ptsCriticalPaths{{num: math.MaxInt32}, {num: math.MaxInt32}}
}

// update records that domain value now has num pods.
func (p *ptsCriticalPaths) update(value string, num int64) {
	i := -1
	switch value {
	case p[0].value:
		i = 0
	case p[1].value:
		i = 1
	}
	if i >= 0 {
		p[i].num = num
		if p[0].num > p[1].num {
			p[0], p[1] = p[1], p[0]
		}
		return
	}
	switch {
	case num < p[0].num:
		p[1] = p[0]
		p[0] = ptsPath{value: value, num: num}
	case num < p[1].num:
		p[1] = ptsPath{value: value, num: num}
	}
}

// ptsPreFilterState is the DoNotSchedule spreading computed in PreFilter.
// constraints, selfMatch, required and eligibility never change and are
// shared by clones; domains and critical are changed by AddPod/RemovePod
// and deep-copied by Clone.
type ptsPreFilterState struct {
	constraints []ptsConstraint
	// selfMatch[i] is 1 when the pod matches constraint i's selector: it
	// will add itself to the domain it lands in.
	selfMatch   []int64
	required    *naRequired
	eligibility ptsEligibility
	domains     []ptsDomainCounts
	critical    []ptsCriticalPaths
	// rejectSkew and rejectMissingLabel are Filter's two rejections, made
	// once per cycle and returned for every rejected node: at large
	// scale most nodes are rejected, and a status each was most of this
	// plugin's garbage. They carry the plugin's name already, so the
	// framework's WithPlugin does not write to them.
	rejectSkew, rejectMissingLabel *framework.Status
}

func (s *ptsPreFilterState) Clone() framework.StateData {
	if s == nil {
		return nil
	}
	c := *s
	c.domains = make([]ptsDomainCounts, len(s.domains))
	for i := range s.domains {
		c.domains[i] = s.domains[i].clone()
	}
	c.critical = append([]ptsCriticalPaths(nil), s.critical...)
	return &c
}

// minMatch is the global minimum for constraint i: 0 while fewer domains
// than minDomains are eligible (the missing ones count as empty).
func (s *ptsPreFilterState) minMatch(i int) int64 {
	if s.domains[i].len() < int(s.constraints[i].minDomains) {
		return 0
	}
	return s.critical[i][0].num
}

// PreFilter counts, for each DoNotSchedule constraint, the matching pods
// per eligible domain over all nodes. Skip when the pod has no such
// constraint.
func (pl *PodTopologySpread) PreFilter(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, nodes []*framework.NodeInfo) (*framework.PreFilterResult, *framework.Status) {
	cs, err := pl.ptsConstraintsFor(pod, corev1.DoNotSchedule)
	if err != nil {
		return nil, framework.AsStatus(fmt.Errorf("obtaining pod's hard topology spread constraints: %w", err))
	}
	if len(cs) == 0 {
		return nil, skipPodTopologySpread
	}
	req := naRequiredOf(pod)
	s := &ptsPreFilterState{
		constraints: cs,
		selfMatch:   make([]int64, len(cs)),
		required:    &req,
		eligibility: ptsEligibilityOf(cs),
		domains:     make([]ptsDomainCounts, len(cs)),
		critical:    make([]ptsCriticalPaths, len(cs)),
		rejectSkew:  framework.NewStatus(framework.Unschedulable, ErrReasonTopologySpread).WithPlugin(PodTopologySpreadName),
		rejectMissingLabel: framework.NewStatus(framework.UnschedulableAndUnresolvable,
			ErrReasonTopologySpreadMissingLabel).WithPlugin(PodTopologySpreadName),
	}
	podLabels := labels.Set(pod.Labels)
	for i := range cs {
		if cs[i].selector.Matches(podLabels) {
			s.selfMatch[i] = 1
		}
	}

	sig := ptsSignature("filter", pod, cs, s.eligibility)
	err = pl.counter.count(ctx, pl.parallelizer, sig, len(cs), nodes, pl.snapshot(), func(ni *framework.NodeInfo, out []ptsContrib) {
		node := ni.Node()
		if node == nil {
			return
		}
		// A node missing any constraint's key is in no domain at all.
		for c := range cs {
			v, ok := ni.Label(cs[c].topologyKey)
			if !ok {
				return
			}
			out[c].value = v
		}
		affinityOK, taintsOK := s.eligibility.check(pod, &req, node)
		for c := range cs {
			if cs[c].includes(affinityOK, taintsOK) {
				out[c].count = ptsCountMatching(ni.Pods, &cs[c], pod.Namespace)
			}
		}
	}, func(e *ptsCacheEntry) {
		for c := range cs {
			s.domains[c] = e.liveDomains(c)
		}
	})
	if err != nil {
		return nil, framework.AsStatus(err)
	}
	for c := range cs {
		s.critical[c] = ptsNewCriticalPaths()
		d := &s.domains[c]
		for i := range d.values {
			s.critical[c].update(d.values[i], d.counts[i])
		}
	}
	state.Write(ptsPreFilterKey, s)
	return nil, nil
}

func (pl *PodTopologySpread) PreFilterExtensions() framework.PreFilterExtensions { return pl }

// AddPod accounts podInfoToAdd on nodeInfo in a copy of the state
// (nominated pods, preemption).
func (pl *PodTopologySpread) AddPod(_ context.Context, state *framework.CycleState, podToSchedule *corev1.Pod, podInfoToAdd *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := ptsReadPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.updateWithPod(podInfoToAdd.Pod, podToSchedule, nodeInfo.Node(), 1)
	return nil
}

// RemovePod forgets podInfoToRemove (a preemption victim) in a copy of the
// state.
func (pl *PodTopologySpread) RemovePod(_ context.Context, state *framework.CycleState, podToSchedule *corev1.Pod, podInfoToRemove *framework.PodInfo, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := ptsReadPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	s.updateWithPod(podInfoToRemove.Pod, podToSchedule, nodeInfo.Node(), -1)
	return nil
}

// updateWithPod applies delta for pod p on node to every constraint p
// counts for, as PreFilter would have counted it.
func (s *ptsPreFilterState) updateWithPod(p, podToSchedule *corev1.Pod, node *corev1.Node, delta int64) {
	if p.Namespace != podToSchedule.Namespace || node == nil || !ptsHasAllKeys(node.Labels, s.constraints) {
		return
	}
	affinityOK, taintsOK := s.eligibility.check(podToSchedule, s.required, node)
	set := labels.Set(p.Labels)
	for c := range s.constraints {
		con := &s.constraints[c]
		if !con.selector.Matches(set) || !con.includes(affinityOK, taintsOK) {
			continue
		}
		v := node.Labels[con.topologyKey]
		i := s.domains[c].add(v, delta)
		s.critical[c].update(v, s.domains[c].counts[i])
	}
}

func ptsReadPreFilter(state *framework.CycleState) (*ptsPreFilterState, error) {
	s, ok := state.Read(ptsPreFilterKey).(*ptsPreFilterState)
	if !ok || s == nil {
		return nil, fmt.Errorf("reading %q from cycle state: not found", ptsPreFilterKey)
	}
	return s, nil
}

// Filter checks every DoNotSchedule constraint on the node's domain.
func (pl *PodTopologySpread) Filter(_ context.Context, state *framework.CycleState, _ *corev1.Pod, nodeInfo *framework.NodeInfo) *framework.Status {
	s, err := ptsReadPreFilter(state)
	if err != nil {
		return framework.AsStatus(err)
	}
	if nodeInfo.Node() == nil {
		return framework.AsStatus(errors.New("node not found"))
	}
	for c := range s.constraints {
		con := &s.constraints[c]
		v, ok := nodeInfo.Label(con.topologyKey)
		if !ok {
			return s.rejectMissingLabel
		}
		skew := s.domains[c].get(v) + s.selfMatch[c] - s.minMatch(c)
		if skew > int64(con.maxSkew) {
			return s.rejectSkew
		}
	}
	return nil
}
