package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// Upstream's bounds on how many feasible nodes a cycle looks for before
// it stops filtering and scores what it found.
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// errNoNodes is the reason when the cluster has no nodes at all.
var errNoNodes = errors.New("no nodes available to schedule pods")

// FitError says why no node fits a pod; its Error() is the message users
// see in FailedScheduling events and the PodScheduled condition, in
// upstream's format.
type FitError struct {
	Pod         *corev1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// Diagnosis collects the rejections of one cycle.
type Diagnosis struct {
	NodeToStatus framework.NodeToStatus
	// AbsentStatus is the status of nodes not examined because PreFilter
	// narrowed the search.
	AbsentStatus         *framework.Status
	UnschedulablePlugins sets.Set[string]
	PendingPlugins       sets.Set[string]
	PreFilterMsg         string
	PostFilterMsg        string
}

func (d *Diagnosis) init() {
	if d.NodeToStatus == nil {
		d.NodeToStatus = framework.NodeToStatus{}
		d.UnschedulablePlugins = sets.New[string]()
		d.PendingPlugins = sets.New[string]()
	}
}

// Error renders "0/N nodes are available: <count> <reason>, .... <postfilter>."
// with reasons counted over nodes and sorted, as upstream.
func (f *FitError) Error() string {
	msg := fmt.Sprintf("0/%d nodes are available:", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		msg += " " + f.Diagnosis.PreFilterMsg + "."
	} else {
		counts := map[string]int{}
		for _, s := range f.Diagnosis.NodeToStatus {
			for _, r := range s.Reasons() {
				counts[r]++
			}
		}
		if f.Diagnosis.AbsentStatus != nil {
			if absent := f.NumAllNodes - len(f.Diagnosis.NodeToStatus); absent > 0 {
				for _, r := range f.Diagnosis.AbsentStatus.Reasons() {
					counts[r] += absent
				}
			}
		}
		reasons := make([]string, 0, len(counts))
		for r, n := range counts {
			reasons = append(reasons, strconv.Itoa(n)+" "+r)
		}
		sort.Strings(reasons)
		if len(reasons) > 0 {
			msg += " " + strings.Join(reasons, ", ") + "."
		}
	}
	if f.Diagnosis.PostFilterMsg != "" {
		msg += " " + f.Diagnosis.PostFilterMsg
	}
	return msg
}

// scheduleResult is where a cycle put a pod.
type scheduleResult struct {
	node      string
	evaluated int
	feasible  int
}

// scheduleOne pops one pod and runs its scheduling cycle; binding runs in
// its own goroutine so the next cycle starts at once.
func (s *Scheduler) scheduleOne(ctx context.Context) error {
	// The pool's helpers wait for the next cycle's sections only during
	// a burst (see framework.Pool).
	s.parallel.Busy(s.queue.Backlog())
	qpi, err := s.queue.Pop(ctx)
	if err != nil {
		return err
	}
	s.parallel.Busy(true)
	pod := qpi.Pod
	prof := s.profileFor(pod)
	if prof == nil || s.skipPod(pod) {
		s.queue.Done(pod.UID)
		return nil
	}
	start := s.clock.Now()
	cycle := s.queue.SchedulingCycle()
	state := framework.NewCycleState()
	state.RecordPluginMetrics = s.rand.IntN(100) < pluginMetricsSamplePercent
	res, err := s.schedulePod(ctx, prof, state, pod)
	if err != nil {
		s.handleFailure(ctx, prof, state, qpi, err, cycle, start)
		return nil
	}
	// Assume: the cache accounts the pod on the node now, so the next
	// cycle sees it without waiting for the bind to come back.
	assumed, api := assumedPod(qpi.PodInfo, res.node)
	if err := s.cache.AssumePod(api); err != nil {
		s.handleFailure(ctx, prof, state, qpi, err, cycle, start)
		return nil
	}
	if st := prof.runReserve(ctx, state, assumed, res.node); !st.IsSuccess() {
		prof.runUnreserve(ctx, state, assumed, res.node)
		s.forget(assumed)
		s.handleFailure(ctx, prof, state, qpi, statusError(st), cycle, start)
		return nil
	}
	if st := prof.runPermit(ctx, state, assumed, res.node); !st.IsSuccess() && st.Code() != framework.Wait {
		prof.runUnreserve(ctx, state, assumed, res.node)
		s.forget(assumed)
		s.handleFailure(ctx, prof, state, qpi, statusError(st), cycle, start)
		return nil
	}
	// A nominated pod that found a place no longer holds its nomination.
	if pod.Status.NominatedNodeName != "" {
		s.queue.DeleteNominatedPodIfExists(pod)
	}
	s.binding.Add(1)
	go func() {
		defer s.binding.Done()
		s.bindingCycle(ctx, prof, state, qpi, assumed, res.node, start, cycle)
	}()
	return nil
}

// assumedPod returns the pod as the cache assumes it, placed on node, and
// its PodInfo. Upstream deep-copies the pod here; only spec.nodeName
// differs, so this copies the Pod struct (and with it the Spec struct)
// and shares everything below it (labels, containers, affinity, status)
// with the informer's object. That is sound because the scheduler never
// writes into a pod it did not allocate: informer objects are read-only
// by client-go's contract, and every plugin that changes an API object
// (volume binding) deep-copies that object first. The PodInfo shares the
// derived requests and parsed terms of pi, which are immutable and do
// not depend on spec.nodeName.
func assumedPod(pi *framework.PodInfo, node string) (*corev1.Pod, *framework.PodInfo) {
	assumed := new(corev1.Pod)
	*assumed = *pi.Pod
	assumed.Spec.NodeName = node
	api := new(framework.PodInfo)
	*api = *pi
	api.Pod = assumed
	return assumed, api
}

// bindingCycle waits for Permit, runs PreBind/Bind/PostBind and, on
// failure, undoes the assumption and requeues the pod.
func (s *Scheduler) bindingCycle(ctx context.Context, prof *Profile, state *framework.CycleState, qpi *framework.QueuedPodInfo, assumed *corev1.Pod, node string, start time.Time, cycle int64) {
	fail := func(st *framework.Status) {
		prof.runUnreserve(ctx, state, assumed, node)
		s.forget(assumed)
		// The freed room may let other pods in.
		s.queue.MoveAllToActiveOrBackoffQueue(ctx, framework.ClusterEvent{Resource: framework.AssignedPodResource, ActionType: framework.Delete, Label: "AssignedPodDelete"}, assumed, nil)
		s.handleFailure(ctx, prof, state, qpi, statusError(st), cycle, start)
	}
	if st := prof.waiting.wait(assumed.UID); !st.IsSuccess() {
		fail(st)
		return
	}
	if st := prof.runPreBind(ctx, state, assumed, node); !st.IsSuccess() {
		fail(st)
		return
	}
	bindStart := s.clock.Now()
	if st := prof.runBind(ctx, state, assumed, node); !st.IsSuccess() {
		fail(st)
		return
	}
	since(prof.metrics.bind, bindStart)
	s.cache.FinishBinding(assumed)
	s.queue.Done(assumed.UID)
	prof.metrics.scheduled.Inc()
	since(prof.metrics.durScheduled, start)
	if s.onAttempt != nil {
		s.onAttempt(assumed, "scheduled", s.clock.Since(start))
	}
	if qpi.InitialAttemptTimestamp != nil {
		e2eDuration.WithLabelValues(attemptsLabel(qpi.Attempts)).Observe(s.clock.Since(*qpi.InitialAttemptTimestamp).Seconds())
	}
	if s.recordEvents {
		prof.handle.recorder.Eventf(assumed, nil, corev1.EventTypeNormal, "Scheduled", "Binding",
			"Successfully assigned %s/%s to %s", assumed.Namespace, assumed.Name, node)
	}
	prof.runPostBind(ctx, state, assumed, node)
}

func attemptsLabel(n int) string {
	if n >= 15 {
		return "15+"
	}
	return strconv.Itoa(n)
}

func (s *Scheduler) forget(pod *corev1.Pod) {
	if err := s.cache.ForgetPod(pod); err != nil {
		s.log.Error("forgetting assumed pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
}

func statusError(st *framework.Status) error {
	if st.IsRejected() {
		return &statusErr{st}
	}
	return st.AsError()
}

// statusErr carries a rejecting status (from Reserve, Permit, PreBind)
// so the failure handler can record its plugin.
type statusErr struct{ st *framework.Status }

func (e *statusErr) Error() string { return e.st.Message() }

// schedulePod runs the algorithm: filter, then score, then pick.
func (s *Scheduler) schedulePod(ctx context.Context, prof *Profile, state *framework.CycleState, pod *corev1.Pod) (scheduleResult, error) {
	if err := s.cache.UpdateSnapshot(s.snapshot); err != nil {
		return scheduleResult{}, err
	}
	all := s.snapshot.List()
	if len(all) == 0 {
		return scheduleResult{}, errNoNodes
	}
	feasible, diag, err := s.findFeasible(ctx, prof, state, pod, all)
	if err != nil {
		return scheduleResult{}, err
	}
	if len(feasible) == 0 {
		diag.init()
		return scheduleResult{}, &FitError{Pod: pod, NumAllNodes: len(all), Diagnosis: diag}
	}
	evaluated := s.lastProcessed
	if len(feasible) == 1 {
		return scheduleResult{node: feasible[0].Name(), evaluated: evaluated, feasible: 1}, nil
	}
	t := s.clock.Now()
	if st := prof.runPreScore(ctx, state, pod, feasible); !st.IsSuccess() {
		return scheduleResult{}, st.AsError()
	}
	since(prof.metrics.preScore, t)
	t = s.clock.Now()
	scores, st := prof.runScore(ctx, state, pod, feasible)
	if !st.IsSuccess() {
		return scheduleResult{}, st.AsError()
	}
	since(prof.metrics.score, t)
	return scheduleResult{node: s.selectHost(scores), evaluated: evaluated, feasible: len(feasible)}, nil
}

// selectHost picks the highest total score; ties are broken uniformly at
// random, as upstream, so equal nodes share load. Upstream samples a
// reservoir, one random number per tie; on a cluster of alike nodes most
// of the scored nodes tie, so this counts the ties and draws once, which
// picks each of them with the same probability.
func (s *Scheduler) selectHost(scores []framework.NodeScore) string {
	best, ties := scores[0].Score, 1
	for _, ns := range scores[1:] {
		switch {
		case ns.Score > best:
			best, ties = ns.Score, 1
		case ns.Score == best:
			ties++
		}
	}
	k := 0
	if ties > 1 {
		k = s.rand.IntN(ties)
	}
	for _, ns := range scores {
		if ns.Score != best {
			continue
		}
		if k == 0 {
			return ns.Name
		}
		k--
	}
	return "" // unreachable: scores holds ties entries of score best
}

// numFeasibleNodesToFind is upstream's adaptive percentage: all nodes
// below 100, else 50% minus 1% per 125 nodes (at least 5%), at least 100.
func numFeasibleNodesToFind(percentage int32, numAll int) int {
	if numAll < minFeasibleNodesToFind {
		return numAll
	}
	p := int(percentage)
	if p <= 0 {
		p = 50 - numAll/125
		if p < minFeasibleNodesPercentageToFind {
			p = minFeasibleNodesPercentageToFind
		}
	}
	n := numAll * p / 100
	if n < minFeasibleNodesToFind {
		return minFeasibleNodesToFind
	}
	return n
}

// findFeasible runs PreFilter then Filter over nodes starting at a
// rotating offset until enough feasible nodes are found.
func (s *Scheduler) findFeasible(ctx context.Context, prof *Profile, state *framework.CycleState, pod *corev1.Pod, all []*framework.NodeInfo) ([]*framework.NodeInfo, Diagnosis, error) {
	// The diagnosis is filled only when no node fits; a pod that fits
	// allocates none of it.
	var diag Diagnosis
	t := s.clock.Now()
	pre, st := prof.runPreFilter(ctx, state, pod, all)
	since(prof.metrics.preFilter, t)
	if !st.IsSuccess() {
		if !st.IsRejected() {
			return nil, diag, st.AsError()
		}
		diag.init()
		diag.PreFilterMsg = st.Message()
		if st.Code() == framework.Pending {
			diag.PendingPlugins.Insert(st.Plugin())
		} else {
			diag.UnschedulablePlugins.Insert(st.Plugin())
		}
		for _, n := range all {
			diag.NodeToStatus[n.Name()] = st
		}
		return nil, diag, nil
	}
	// A nominated node (after preemption) is tried first, alone.
	if nn := pod.Status.NominatedNodeName; nn != "" {
		if ni, err := s.snapshot.Get(nn); err == nil && (pre == nil || pre.NodeNames.Has(nn)) {
			if st := prof.filterWithNominated(ctx, state, pod, ni); st.IsSuccess() {
				return []*framework.NodeInfo{ni}, diag, nil
			}
		}
	}
	nodes := all
	if pre != nil && pre.NodeNames != nil {
		nodes = make([]*framework.NodeInfo, 0, pre.NodeNames.Len())
		for name := range pre.NodeNames {
			if ni, err := s.snapshot.Get(name); err == nil {
				nodes = append(nodes, ni)
			}
		}
		diag.AbsentStatus = framework.NewStatus(framework.UnschedulableAndUnresolvable, "node(s) didn't satisfy plugin(s) PreFilter result")
	}
	if len(prof.filter) == 0 {
		return nodes, diag, nil
	}
	want := numFeasibleNodesToFind(prof.PercentageOfNodesToScore, len(nodes))
	// Buffers reused across cycles (cycles run one at a time). statuses
	// is all nil between cycles: this cycle clears what it wrote.
	feasible := grow(&s.feasibleBuf, want)
	statuses := grow(&s.statusBuf, len(nodes))
	// found and processed are shared by the filter goroutines; they are
	// updated once per range of nodes, not per node, so that two cores do
	// not pass one cache line back and forth for every node.
	var found, processed, scanned atomic.Int64
	start := int(s.nextStartNodeIndex % uint64(len(nodes)))
	hasNominated := s.queue.HasNominatedPods()
	t = s.clock.Now()
	prof.handle.parallel.UntilChunks(ctx, len(nodes), feasibleChunk, func(lo, hi int) bool {
		var local [feasibleChunk]*framework.NodeInfo
		nlocal, done := 0, lo
		for i := lo; i < hi; i++ {
			// Another range may have found the rest already.
			if found.Load() >= int64(want) {
				break
			}
			idx := (start + i) % len(nodes)
			ni := nodes[idx]
			var st *framework.Status
			if hasNominated {
				st = prof.filterWithNominated(ctx, state, pod, ni)
			} else {
				st = prof.runFilters(ctx, state, pod, ni)
			}
			done++
			if st.IsSuccess() {
				local[nlocal] = ni
				nlocal++
				// Stop at the number still wanted, as a per-node
				// counter would.
				if int64(nlocal)+found.Load() >= int64(want) {
					break
				}
				continue
			}
			statuses[idx] = st
		}
		atomicMax(&scanned, int64(done))
		processed.Add(int64(done - lo))
		if nlocal == 0 {
			return found.Load() < int64(want)
		}
		k := int(found.Add(int64(nlocal)))
		base := k - nlocal
		if base < want {
			copy(feasible[base:min(k, want)], local[:nlocal])
		}
		// Enough found: no further range is handed out.
		return k < want
	})
	since(prof.metrics.filter, t)
	n := min(int(found.Load()), want)
	feasible = feasible[:n]
	s.nextStartNodeIndex += uint64(processed.Load())
	s.lastProcessed = int(processed.Load())
	if len(feasible) == 0 {
		diag.init()
	}
	var firstErr *framework.Status
	for i := range int(scanned.Load()) {
		idx := (start + i) % len(nodes)
		st := statuses[idx]
		if st == nil {
			continue
		}
		statuses[idx] = nil
		if !st.IsRejected() {
			firstErr = st
			continue
		}
		// Why each node failed only matters when none fits (preemption
		// and the FailedScheduling message).
		if len(feasible) > 0 {
			continue
		}
		diag.NodeToStatus[nodes[idx].Name()] = st
		if st.Code() == framework.Pending {
			diag.PendingPlugins.Insert(st.Plugin())
		} else {
			diag.UnschedulablePlugins.Insert(st.Plugin())
		}
	}
	if firstErr != nil && len(feasible) == 0 {
		return nil, diag, firstErr.AsError()
	}
	return feasible, diag, nil
}

// feasibleChunk is how many nodes one filter goroutine takes at a time:
// small enough that the goroutines overshoot the wanted count by little
// (upstream's chunks are larger), large enough that the shared counters
// are touched rarely.
const feasibleChunk = 16

// atomicMax raises v to at least x.
func atomicMax(v *atomic.Int64, x int64) {
	for {
		cur := v.Load()
		if cur >= x || v.CompareAndSwap(cur, x) {
			return
		}
	}
}

// handleFailure runs PostFilter (preemption) for unschedulable pods,
// requeues the pod, and tells the user why: a FailedScheduling event and
// the PodScheduled=False condition.
func (s *Scheduler) handleFailure(ctx context.Context, prof *Profile, state *framework.CycleState, qpi *framework.QueuedPodInfo, err error, cycle int64, start time.Time) {
	pod := qpi.Pod
	reason := corev1.PodReasonSchedulerError
	nominated := ""
	clearNomination := false
	var fitErr *FitError
	var se *statusErr
	switch {
	case errors.As(err, &fitErr):
		reason = corev1.PodReasonUnschedulable
		qpi.UnschedulablePlugins = fitErr.Diagnosis.UnschedulablePlugins
		qpi.PendingPlugins = fitErr.Diagnosis.PendingPlugins
		prof.metrics.unschedulable.Inc()
		since(prof.metrics.durUnschedulable, start)
		if len(prof.postFilter) > 0 {
			t := s.clock.Now()
			for _, pf := range prof.postFilter {
				res, st := pf.PostFilter(ctx, state, pod, fitErr.Diagnosis.NodeToStatus)
				if st.IsSuccess() && res != nil && res.NominatedNodeName != "" {
					nominated = res.NominatedNodeName
					break
				}
				// A result naming no node withdraws an earlier nomination.
				if res != nil && res.NominatedNodeName == "" && pod.Status.NominatedNodeName != "" {
					clearNomination = true
				}
				if !st.IsSuccess() && st.Message() != "" {
					fitErr.Diagnosis.PostFilterMsg = st.Message()
				}
			}
			since(prof.metrics.postFilterDur, t)
		}
	case errors.Is(err, errNoNodes):
		reason = corev1.PodReasonUnschedulable
		qpi.UnschedulablePlugins = sets.New[string]()
		prof.metrics.unschedulable.Inc()
		since(prof.metrics.durUnschedulable, start)
	case errors.As(err, &se):
		reason = corev1.PodReasonUnschedulable
		qpi.UnschedulablePlugins = sets.New(se.st.Plugin())
		prof.metrics.unschedulable.Inc()
		since(prof.metrics.durUnschedulable, start)
	default:
		qpi.UnschedulablePlugins = nil
		prof.metrics.errored.Inc()
		since(prof.metrics.durError, start)
	}
	if s.onAttempt != nil {
		result := "unschedulable"
		if reason == corev1.PodReasonSchedulerError {
			result = "error"
		}
		s.onAttempt(pod, result, s.clock.Since(start))
	}
	msg := err.Error()
	if errors.Is(err, errNoNodes) {
		msg = "0/0 nodes are available: " + msg + "."
	}
	// Requeue unless the pod was deleted or bound meanwhile.
	if current, ok := s.pendingPod(pod); ok {
		qpi.PodInfo = framework.NewPodInfo(current)
		switch {
		case nominated != "":
			s.queue.AddNominatedPod(qpi.PodInfo, nominated)
		case clearNomination:
			s.queue.DeleteNominatedPodIfExists(current)
		}
		if err := s.queue.AddUnschedulableIfNotPresent(ctx, qpi, cycle); err != nil {
			s.log.Error("requeueing pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
	}
	s.queue.Done(pod.UID)
	if reason == corev1.PodReasonSchedulerError {
		s.log.Error("scheduling pod", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	if s.recordEvents {
		prof.handle.recorder.Eventf(pod, nil, corev1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", msg)
	}
	s.updatePodStatus(ctx, pod, reason, msg, nominated, clearNomination)
}
