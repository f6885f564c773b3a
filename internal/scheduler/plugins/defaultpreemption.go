package plugins

// DefaultPreemption is the PostFilter plugin: when no node fits a pod, it
// looks for a node where evicting lower-priority pods would make room,
// evicts them, and nominates the node for the pod. The pod itself is not
// bound here; it goes back to the queue and is scheduled once the victims
// are gone (the nominated node keeps the room reserved for it meanwhile,
// see Handle.RunFilterPluginsWithNominatedPods).
//
// One PostFilter call runs four steps, as upstream kube-scheduler does:
//
//  1. eligibility: a pod with preemptionPolicy Never never preempts, and a
//     pod that already preempted and whose victims are still terminating
//     waits for them instead of evicting more;
//  2. dry run (defaultpreemption_candidates.go): on a copy of each node
//     whose rejection was Unschedulable, find the fewest, least important
//     victims that make the pod fit;
//  3. pick the best candidate node by a fixed order of criteria;
//  4. prepare: delete the victims and clear the nomination of
//     lower-priority pods nominated to the same node.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	policylisters "k8s.io/client-go/listers/policy/v1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// DefaultPreemptionName is the plugin's name in profiles and statuses.
const DefaultPreemptionName = "DefaultPreemption"

// Defaults of configv1.DefaultPreemptionArgs.
const (
	dpDefaultMinCandidateNodesPercentage int32 = 10
	dpDefaultMinCandidateNodesAbsolute   int32 = 100
)

// User-facing reasons, worded as upstream so FailedScheduling events read
// the same.
const (
	dpMsgNoVictims         = "No preemption victims found for incoming pod"
	dpMsgNotHelpful        = "Preemption is not helpful for scheduling"
	dpMsgPolicyNever       = "not eligible due to preemptionPolicy=Never."
	dpMsgTerminatingVictim = "not eligible due to a terminating pod on the nominated node."
)

// dpPlugin implements DefaultPreemption.
type dpPlugin struct {
	h framework.Handle
	// minPercentage and minAbsolute bound how many candidate nodes the
	// dry run collects before it stops looking (see dpNumCandidates).
	minPercentage int32
	minAbsolute   int32

	pdbLister policylisters.PodDisruptionBudgetLister
	pcLister  schedulinglisters.PriorityClassLister

	// offset picks where in the list of potential nodes the dry run
	// starts, so that repeated preemptions spread over the cluster
	// instead of always hitting the first nodes. Tests fix it.
	offset func(n int) int
	now    func() time.Time
}

var _ framework.PostFilterPlugin = (*dpPlugin)(nil)

// NewDefaultPreemption builds the plugin. args is nil (defaults) or a
// *configv1.DefaultPreemptionArgs; unset fields take the defaults 10% and
// 100 nodes. It requests the PodDisruptionBudget and PriorityClass
// informers from h's factory.
func NewDefaultPreemption(_ context.Context, args runtime.Object, h framework.Handle) (framework.Plugin, error) {
	pct, abs := dpDefaultMinCandidateNodesPercentage, dpDefaultMinCandidateNodesAbsolute
	switch a := args.(type) {
	case nil:
	case *configv1.DefaultPreemptionArgs:
		if a != nil {
			if a.MinCandidateNodesPercentage != nil {
				pct = *a.MinCandidateNodesPercentage
			}
			if a.MinCandidateNodesAbsolute != nil {
				abs = *a.MinCandidateNodesAbsolute
			}
		}
	default:
		return nil, fmt.Errorf("got args of type %T, want *DefaultPreemptionArgs", args)
	}
	if err := dpValidateArgs(pct, abs); err != nil {
		return nil, err
	}
	pl := &dpPlugin{
		h:             h,
		minPercentage: pct,
		minAbsolute:   abs,
		offset:        rand.IntN,
		now:           time.Now,
	}
	if f := h.SharedInformerFactory(); f != nil {
		pl.pdbLister = f.Policy().V1().PodDisruptionBudgets().Lister()
		pl.pcLister = f.Scheduling().V1().PriorityClasses().Lister()
	}
	return pl, nil
}

func dpValidateArgs(pct, abs int32) error {
	var errs field.ErrorList
	pctPath, absPath := field.NewPath("minCandidateNodesPercentage"), field.NewPath("minCandidateNodesAbsolute")
	if pct < 0 || pct > 100 {
		errs = append(errs, field.Invalid(pctPath, pct, "not in valid range [0, 100]"))
	}
	if abs < 0 {
		errs = append(errs, field.Invalid(absPath, abs, "not in valid range [0, inf)"))
	}
	if pct == 0 && abs == 0 {
		errs = append(errs,
			field.Invalid(pctPath, pct, "cannot be zero at the same time as minCandidateNodesAbsolute"),
			field.Invalid(absPath, abs, "cannot be zero at the same time as minCandidateNodesPercentage"))
	}
	return errs.ToAggregate()
}

func (pl *dpPlugin) Name() string { return DefaultPreemptionName }

// PostFilter tries to make room for pod by preemption. Outcomes:
//
//   - (result with the node, Success): victims were deleted; the scheduler
//     sets the pod's status.nominatedNodeName to result.NominatedNodeName.
//   - (result with "", Unschedulable): no node can be helped by
//     preemption; the message counts why, per node. The empty name tells
//     the scheduler to clear any earlier nomination.
//   - (nil, Unschedulable): the pod may not preempt now (policy Never, or
//     its earlier victims are still terminating); keep its nomination.
//   - (nil, Error): an API or internal failure; retried with backoff.
//
// Every non-empty message is prefixed "preemption: ", as upstream.
func (pl *dpPlugin) PostFilter(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, filtered framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	res, st := pl.preempt(ctx, state, pod, filtered)
	switch {
	case st.Code() == framework.Error:
		return res, framework.AsStatus(fmt.Errorf("preemption: %w", st.AsError()))
	case st.Message() != "":
		return res, framework.NewStatus(st.Code(), "preemption: "+st.Message())
	}
	return res, st
}

func (pl *dpPlugin) preempt(ctx context.Context, state *framework.CycleState, pod *corev1.Pod, filtered framework.NodeToStatus) (*framework.PostFilterResult, *framework.Status) {
	if ok, msg := pl.eligible(pod, filtered); !ok {
		slog.Debug("pod is not eligible for preemption", "pod", pod.Namespace+"/"+pod.Name, "reason", msg)
		return nil, framework.NewStatus(framework.Unschedulable, msg)
	}

	allNodes := pl.h.Snapshot().List()
	if len(allNodes) == 0 {
		return nil, framework.AsStatus(errors.New("no nodes available"))
	}
	// Only a node some filter called Unschedulable can be helped by
	// removing pods; UnschedulableAndUnresolvable (and nodes PreFilter
	// excluded, absent from the map) cannot.
	var potential []*framework.NodeInfo
	for _, ni := range allNodes {
		if filtered[ni.Name()].Code() == framework.Unschedulable {
			potential = append(potential, ni)
		}
	}

	var candidates []*dpCandidate
	statuses := map[string]*framework.Status{}
	if len(potential) > 0 {
		pdbs, err := pl.listPDBs()
		if err != nil {
			return nil, framework.AsStatus(err)
		}
		offset := pl.offset(len(potential))
		want := dpNumCandidates(len(potential), pl.minPercentage, pl.minAbsolute)
		var errs []error
		candidates, statuses, errs = pl.dryRun(ctx, state, pod, potential, pdbs, offset, want)
		if len(candidates) == 0 && len(errs) > 0 {
			return nil, framework.AsStatus(errors.Join(errs...))
		}
	}
	if len(candidates) == 0 {
		return &framework.PostFilterResult{}, framework.NewStatus(framework.Unschedulable, dpNoCandidateMessage(len(allNodes), statuses))
	}

	best := dpPickCandidate(candidates, pl.priority, pl.now())
	slog.Debug("preemption target chosen", "pod", pod.Namespace+"/"+pod.Name, "node", best.node, "victims", len(best.victims))
	if st := pl.prepare(ctx, best, pod); !st.IsSuccess() {
		return nil, st
	}
	return &framework.PostFilterResult{NominatedNodeName: best.node}, nil
}

// eligible reports whether pod may preempt now, and why not.
func (pl *dpPlugin) eligible(pod *corev1.Pod, filtered framework.NodeToStatus) (bool, string) {
	if p := pod.Spec.PreemptionPolicy; p != nil && *p == corev1.PreemptNever {
		return false, dpMsgPolicyNever
	}
	nom := pod.Status.NominatedNodeName
	if nom == "" {
		return true, ""
	}
	// The nominated node no longer fits in a way preemption cannot fix
	// (absent from the map counts as such): look elsewhere.
	if st, ok := filtered[nom]; !ok || st.Code() == framework.UnschedulableAndUnresolvable {
		return true, ""
	}
	// The pod preempted before: while the victims it chose are still
	// terminating, evicting more would only over-evict. Once they are
	// gone the pod either fits or preempts afresh.
	ni, err := pl.h.Snapshot().Get(nom)
	if err != nil {
		return true, ""
	}
	prio := pl.priority(pod)
	for _, pi := range ni.Pods {
		if pl.priority(pi.Pod) < prio && dpTerminatingByPreemption(pi.Pod) {
			return false, dpMsgTerminatingVictim
		}
	}
	return true, ""
}

// dpTerminatingByPreemption reports whether p is being deleted because a
// scheduler preempted it (the DisruptionTarget condition prepare sets).
func dpTerminatingByPreemption(p *corev1.Pod) bool {
	if p.DeletionTimestamp == nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			return c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler
		}
	}
	return false
}

// priority is the pod's priority: spec.priority as the Priority admission
// plugin resolved it, or, for a pod that never went through that plugin,
// its priority class's value; 0 otherwise.
func (pl *dpPlugin) priority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	if name := pod.Spec.PriorityClassName; name != "" && pl.pcLister != nil {
		if pc, err := pl.pcLister.Get(name); err == nil {
			return pc.Value
		}
	}
	return 0
}

// dpNumCandidates is how many candidates the dry run collects before it
// stops: a percentage of the potential nodes, at least minAbsolute, at
// most all of them.
func dpNumCandidates(numNodes int, pct, minAbsolute int32) int {
	n := numNodes * int(pct) / 100
	n = max(n, int(minAbsolute))
	return min(n, numNodes)
}

// dpNoCandidateMessage renders the FailedScheduling message upstream gives
// when preemption found nothing: "0/N nodes are available: " and a sorted
// histogram of per-node reasons. Nodes the dry run did not report on
// (not Unschedulable, or never examined) count as "Preemption is not
// helpful for scheduling".
func dpNoCandidateMessage(numAll int, statuses map[string]*framework.Status) string {
	counts := map[string]int{}
	for _, st := range statuses {
		for _, r := range st.Reasons() {
			counts[r]++
		}
	}
	if absent := numAll - len(statuses); absent > 0 {
		counts[dpMsgNotHelpful] += absent
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	msg := fmt.Sprintf("0/%d nodes are available:", numAll)
	if len(parts) > 0 {
		msg += " " + strings.Join(parts, ", ") + "."
	}
	return msg
}

// listPDBs returns every PodDisruptionBudget, parsed for the dry run.
func (pl *dpPlugin) listPDBs() ([]dpPDB, error) {
	if pl.pdbLister == nil {
		return nil, nil
	}
	list, err := pl.pdbLister.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	return dpParsePDBs(list), nil
}

// prepare carries out the chosen candidate: delete its victims (in
// parallel; the first failure stops the rest and fails the call), then
// clear the nomination of lower-priority pods nominated to the node, which
// may no longer fit there. Clearing is best effort: a failure only delays
// those pods, so it is logged, not returned.
func (pl *dpPlugin) prepare(ctx context.Context, c *dpCandidate, pod *corev1.Pod) *framework.Status {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu       sync.Mutex
		firstErr error
	)
	pl.h.Parallelizer().Until(ctx, len(c.victims), func(i int) {
		victim := c.victims[i]
		if victim.DeletionTimestamp != nil {
			return // graceful deletion already under way
		}
		if err := pl.preemptPod(ctx, c.node, pod, victim); err != nil {
			mu.Lock()
			if firstErr == nil {
				firstErr = err
			}
			mu.Unlock()
			cancel()
		}
	})
	if firstErr != nil {
		return framework.AsStatus(firstErr)
	}
	if err := ctx.Err(); err != nil {
		return framework.AsStatus(err)
	}

	prio := pl.priority(pod)
	for _, pi := range pl.h.NominatedPodsForNode(c.node) {
		p := pi.Pod
		if pl.priority(p) >= prio || p.Status.NominatedNodeName == "" {
			continue
		}
		if err := dpPatchStatus(ctx, pl.h, p, map[string]any{"nominatedNodeName": nil}); err != nil && !apierrors.IsNotFound(err) {
			slog.Warn("preemption: cannot clear nominatedNodeName", "pod", p.Namespace+"/"+p.Name, "node", c.node, "err", err)
		}
	}
	return nil
}

// preemptPod evicts one victim: mark it with the DisruptionTarget
// condition (so that it, the preemptor's next attempt and controllers can
// tell why it goes), delete it with its default grace period, and record
// an event on it. A victim already gone is not an error.
func (pl *dpPlugin) preemptPod(ctx context.Context, node string, preemptor, victim *corev1.Pod) error {
	if !dpHasPreemptionCondition(victim) {
		cond := map[string]any{
			"type":               string(corev1.DisruptionTarget),
			"status":             string(corev1.ConditionTrue),
			"reason":             corev1.PodReasonPreemptionByScheduler,
			"message":            preemptor.Spec.SchedulerName + ": preempting to accommodate a higher priority pod",
			"lastTransitionTime": metav1.NewTime(pl.now()).Rfc3339Copy(),
		}
		if err := dpPatchStatus(ctx, pl.h, victim, map[string]any{"conditions": []any{cond}}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("adding DisruptionTarget condition to %s/%s: %w", victim.Namespace, victim.Name, err)
		}
	}
	err := pl.h.ClientSet().CoreV1().Pods(victim.Namespace).Delete(ctx, victim.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting preemption victim %s/%s: %w", victim.Namespace, victim.Name, err)
	}
	slog.Debug("preempted pod", "preemptor", preemptor.Namespace+"/"+preemptor.Name, "victim", victim.Namespace+"/"+victim.Name, "node", node)
	if rec := pl.h.EventRecorder(); rec != nil {
		rec.Eventf(victim, preemptor, corev1.EventTypeNormal, "Preempted", "Preempting", "Preempted by pod %v on node %v", preemptor.UID, node)
	}
	return nil
}

func dpHasPreemptionCondition(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler {
			return true
		}
	}
	return false
}

// dpPatchStatus sends a strategic merge patch of the pod's status
// subresource; conditions merge by type, and a nil value removes a field.
func dpPatchStatus(ctx context.Context, h framework.Handle, p *corev1.Pod, status map[string]any) error {
	body, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = h.ClientSet().CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, body, metav1.PatchOptions{}, "status")
	return err
}
