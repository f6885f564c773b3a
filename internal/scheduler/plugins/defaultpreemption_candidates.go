package plugins

// The pure half of DefaultPreemption: given the snapshot, the cycle state
// and the PDBs, which node and which victims. Nothing here writes to the
// API; prepare (defaultpreemption.go) does that for the one candidate
// picked.

import (
	"context"
	"fmt"
	"math"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// dpCandidate is a node where the pod fits once victims are evicted.
type dpCandidate struct {
	node string
	// victims are ordered most important first (see dpMoreImportant).
	victims []*corev1.Pod
	// numPDBViolations counts victims whose eviction exceeds a PDB's
	// disruptionsAllowed.
	numPDBViolations int
}

// dpPDB is a PodDisruptionBudget reduced to what the dry run reads, with
// its selector parsed once per PostFilter instead of once per pod.
type dpPDB struct {
	namespace string
	selector  labels.Selector
	allowed   int32
	// disrupted holds pods the eviction API already counted against the
	// budget; evicting them again does not use it up twice.
	disrupted map[string]metav1.Time
}

// dpParsePDBs keeps the PDBs that can match a pod: one with an invalid,
// nil or empty selector protects nothing (as upstream).
func dpParsePDBs(list []*policyv1.PodDisruptionBudget) []dpPDB {
	out := make([]dpPDB, 0, len(list))
	for _, b := range list {
		if b.Spec.Selector == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil || sel.Empty() {
			continue
		}
		out = append(out, dpPDB{
			namespace: b.Namespace,
			selector:  sel,
			allowed:   b.Status.DisruptionsAllowed,
			disrupted: b.Status.DisruptedPods,
		})
	}
	return out
}

// dryRun runs selectVictimsOnNode on copies of the potential nodes, in
// parallel, starting at offset and wrapping around. It stops once it
// holds want candidates of which at least one violates no PDB: looking
// further costs time and rarely finds a much better node. Candidates that
// violate no PDB come first in the result. statuses holds why each
// examined node that is not a candidate failed; errs the internal errors.
func (pl *dpPlugin) dryRun(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, potential []*framework.NodeInfo,
	pdbs []dpPDB, offset, want int) (candidates []*dpCandidate, statuses map[string]*framework.Status, errs []error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu                      sync.Mutex
		nonViolating, violating []*dpCandidate
	)
	statuses = map[string]*framework.Status{}
	now := pl.now()
	pl.h.Parallelizer().Until(ctx, len(potential), func(i int) {
		ni := potential[(offset+i)%len(potential)]
		victims, numViolations, st := pl.selectVictimsOnNode(ctx, state.Clone(), pod, ni.Clone(), pdbs, now)
		if st.IsSuccess() && len(victims) == 0 {
			st = framework.AsStatus(fmt.Errorf("expected at least one victim pod on node %q", ni.Name()))
		}
		mu.Lock()
		defer mu.Unlock()
		if !st.IsSuccess() {
			if st.Code() == framework.Error {
				errs = append(errs, st.AsError())
			}
			statuses[ni.Name()] = st
			return
		}
		c := &dpCandidate{node: ni.Name(), victims: victims, numPDBViolations: numViolations}
		if numViolations == 0 {
			if len(nonViolating) < want {
				nonViolating = append(nonViolating, c)
			}
		} else if len(violating) < want {
			violating = append(violating, c)
		}
		if len(nonViolating) > 0 && len(nonViolating)+len(violating) >= want {
			cancel()
		}
	})
	return append(nonViolating, violating...), statuses, errs
}

// selectVictimsOnNode finds the fewest, least important pods on ni whose
// eviction lets pod fit. ni and state are the caller's copies and are
// changed.
//
// It removes every lower-priority pod and checks the pod fits; if not, no
// eviction on this node helps (affinity of the pod to a victim is, as
// upstream, deliberately not considered). Then it adds the removed pods
// back one at a time, most important first, keeping each one that still
// leaves room: first those whose eviction would violate a PDB, so that
// evicting them is the last resort, then the rest. The pods not added back
// are the victims.
func (pl *dpPlugin) selectVictimsOnNode(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, ni *framework.NodeInfo,
	pdbs []dpPDB, now time.Time) ([]*corev1.Pod, int, *framework.Status) {
	prio := pl.priority(pod)
	var potential []*framework.PodInfo
	for _, pi := range ni.Pods {
		if pl.priority(pi.Pod) < prio {
			potential = append(potential, pi)
		}
	}
	if len(potential) == 0 {
		return nil, 0, framework.NewStatus(framework.UnschedulableAndUnresolvable, dpMsgNoVictims)
	}

	remove := func(pi *framework.PodInfo) error {
		if err := ni.RemovePod(pi.Pod); err != nil {
			return err
		}
		return pl.h.RunPreFilterExtensionRemovePod(ctx, state, pod, pi, ni).AsError()
	}
	for _, pi := range potential {
		if err := remove(pi); err != nil {
			return nil, 0, framework.AsStatus(err)
		}
	}
	if st := pl.h.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni); !st.IsSuccess() {
		return nil, 0, st
	}

	sort.SliceStable(potential, func(i, j int) bool {
		return dpMoreImportant(potential[i].Pod, potential[j].Pod, pl.priority, now)
	})
	violating, nonViolating := dpSplitByPDB(potential, pdbs)

	var victims []*corev1.Pod
	// reprieve adds pi back and keeps it if the pod still fits.
	reprieve := func(pi *framework.PodInfo) (bool, error) {
		ni.AddPod(pi)
		if err := pl.h.RunPreFilterExtensionAddPod(ctx, state, pod, pi, ni).AsError(); err != nil {
			return false, err
		}
		if pl.h.RunFilterPluginsWithNominatedPods(ctx, state, pod, ni).IsSuccess() {
			return true, nil
		}
		victims = append(victims, pi.Pod)
		return false, remove(pi)
	}
	numViolations := 0
	for _, pi := range violating {
		kept, err := reprieve(pi)
		if err != nil {
			return nil, 0, framework.AsStatus(err)
		}
		if !kept {
			numViolations++
		}
	}
	for _, pi := range nonViolating {
		if _, err := reprieve(pi); err != nil {
			return nil, 0, framework.AsStatus(err)
		}
	}
	// Each group was visited in order; merged, they need one more sort so
	// victims[0] is the most important (dpPickCandidate relies on it).
	if len(violating) > 0 && len(nonViolating) > 0 {
		sort.SliceStable(victims, func(i, j int) bool {
			return dpMoreImportant(victims[i], victims[j], pl.priority, now)
		})
	}
	return victims, numViolations, nil
}

// dpMoreImportant orders pods by priority, then by how long they have
// run: evicting a pod that just started loses less work.
func dpMoreImportant(a, b *corev1.Pod, prio func(*corev1.Pod) int32, now time.Time) bool {
	pa, pb := prio(a), prio(b)
	if pa != pb {
		return pa > pb
	}
	return dpStartTime(a, now).Before(dpStartTime(b, now))
}

// dpStartTime is when the pod started; a pod that has not started yet
// (assumed, or bound but pending) counts as starting now.
func dpStartTime(p *corev1.Pod, now time.Time) time.Time {
	if p.Status.StartTime != nil {
		return p.Status.StartTime.Time
	}
	return now
}

// dpSplitByPDB splits pods, keeping their order, into those whose
// eviction would take some matching PDB below zero disruptions allowed
// (evicting them in this order) and the rest.
func dpSplitByPDB(pods []*framework.PodInfo, pdbs []dpPDB) (violating, nonViolating []*framework.PodInfo) {
	allowed := make([]int32, len(pdbs))
	for i := range pdbs {
		allowed[i] = pdbs[i].allowed
	}
	for _, pi := range pods {
		p := pi.Pod
		violates := false
		// A pod without labels matches no (non-empty) selector.
		if len(p.Labels) > 0 {
			for i := range pdbs {
				b := &pdbs[i]
				if b.namespace != p.Namespace || !b.selector.Matches(labels.Set(p.Labels)) {
					continue
				}
				if _, ok := b.disrupted[p.Name]; ok {
					continue
				}
				allowed[i]--
				if allowed[i] < 0 {
					violates = true
				}
			}
		}
		if violates {
			violating = append(violating, pi)
		} else {
			nonViolating = append(nonViolating, pi)
		}
	}
	return violating, nonViolating
}

// dpRank is a candidate's standing under upstream's criteria, in order of
// precedence; each breaks the ties of the ones before it.
type dpRank struct {
	pdbViolations int   // fewer is better
	highest       int32 // priority of the most important victim; lower is better
	sum           int64 // sum of victim priorities, each shifted to be >= 0; lower is better
	count         int   // fewer victims is better
	start         int64 // earliest start (ns) among the highest-priority victims; later is better
}

func (a dpRank) better(b dpRank) bool {
	switch {
	case a.pdbViolations != b.pdbViolations:
		return a.pdbViolations < b.pdbViolations
	case a.highest != b.highest:
		return a.highest < b.highest
	case a.sum != b.sum:
		return a.sum < b.sum
	case a.count != b.count:
		return a.count < b.count
	}
	return a.start > b.start
}

func dpRankOf(c *dpCandidate, prio func(*corev1.Pod) int32, now time.Time) dpRank {
	r := dpRank{pdbViolations: c.numPDBViolations, count: len(c.victims), highest: math.MinInt32, start: math.MinInt64}
	var earliest time.Time
	for i, v := range c.victims {
		p := prio(v)
		// Shifting by 2^31 makes every term positive, so two victims at a
		// negative priority never sum below one.
		r.sum += int64(p) + math.MaxInt32 + 1
		st := dpStartTime(v, now)
		if i == 0 || p > r.highest {
			r.highest, earliest = p, st
		} else if p == r.highest && st.Before(earliest) {
			earliest = st
		}
	}
	if len(c.victims) > 0 {
		r.start = earliest.UnixNano()
	}
	return r
}

// dpPickCandidate returns the best candidate, the first one on full ties.
func dpPickCandidate(cands []*dpCandidate, prio func(*corev1.Pod) int32, now time.Time) *dpCandidate {
	if len(cands) == 0 {
		return nil
	}
	best, bestRank := cands[0], dpRankOf(cands[0], prio, now)
	for _, c := range cands[1:] {
		if r := dpRankOf(c, prio, now); r.better(bestRank) {
			best, bestRank = c, r
		}
	}
	return best
}
