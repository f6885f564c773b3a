package replicaset

import (
	"math"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
)

// The pure half of the controller: given a ReplicaSet, its pods and the
// time, what to do. Nothing here talks to the API server.

// replicas is spec.replicas with the API's default of 1.
func replicas(rs *appsv1.ReplicaSet) int {
	return int(ptr.Deref(rs.Spec.Replicas, 1))
}

// isActive: the pod counts as a replica. Terminal pods (Succeeded,
// Failed) will never run again and terminating ones are going away.
func isActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed && p.DeletionTimestamp == nil
}

// isTerminating: deleted but not yet stopped (status.terminatingReplicas).
func isTerminating(p *corev1.Pod) bool {
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// scale is what manageReplicas must do to reach spec.replicas from
// active pods: create > 0 pods, or delete > 0 of them, never more than
// burst in one sync so a huge change is spread over several syncs, each
// waiting to see the previous one's effect.
func scale(active, want, burst int) (create, del int) {
	switch diff := active - want; {
	case diff < 0:
		return min(-diff, burst), 0
	case diff > 0:
		return 0, min(diff, burst)
	}
	return 0, 0
}

// claimPlan sorts candidate pods (owned by the ReplicaSet, or orphans in
// its namespace) into what the ReplicaSet keeps, adopts and releases.
type claimPlan struct {
	owned   []*corev1.Pod // controlled by rs and matching its selector
	adopt   []*corev1.Pod // orphans matching the selector
	release []*corev1.Pod // controlled by rs but no longer matching
}

// planClaims decides ownership as upstream's controller-ref manager does:
// a pod controlled by someone else is never touched; an orphan is adopted
// only if it matches and neither it nor the ReplicaSet is being deleted;
// an owned pod that stopped matching is released, unless the ReplicaSet is
// being deleted (the garbage collector then deals with its pods).
func planClaims(rs *appsv1.ReplicaSet, selector labels.Selector, pods []*corev1.Pod) claimPlan {
	m := matcherFor(selector)
	return planClaimsBy(rs, func(p *corev1.Pod) bool { return m.matches(p.Labels) }, pods)
}

// planClaimsBy is planClaims with the selector as a function.
func planClaimsBy(rs *appsv1.ReplicaSet, selects func(*corev1.Pod) bool, pods []*corev1.Pod) claimPlan {
	var p claimPlan
	for _, pod := range pods {
		match := selects(pod)
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
			switch {
			case ref.UID != rs.UID:
			case match:
				p.owned = append(p.owned, pod)
			case rs.DeletionTimestamp == nil:
				p.release = append(p.release, pod)
			}
			continue
		}
		if match && rs.DeletionTimestamp == nil && pod.DeletionTimestamp == nil && pod.Namespace == rs.Namespace {
			p.adopt = append(p.adopt, pod)
		}
	}
	return p
}

// labelMatcher is a label selector made quick for the loops over every
// pod of a ReplicaSet, which run on each sync: a selector made only of
// "key = value" requirements (matchLabels, the usual case) is checked by
// map lookups; any other falls back to the selector itself.
type labelMatcher struct {
	pairs    []labelPair
	fallback labels.Selector
}

type labelPair struct{ key, value string }

func matcherFor(sel labels.Selector) labelMatcher {
	reqs, selectable := sel.Requirements()
	if !selectable {
		return labelMatcher{fallback: sel}
	}
	m := labelMatcher{pairs: make([]labelPair, 0, len(reqs))}
	for _, r := range reqs {
		vals := r.ValuesUnsorted()
		switch op := r.Operator(); {
		case (op == selection.Equals || op == selection.DoubleEquals || op == selection.In) && len(vals) == 1:
			m.pairs = append(m.pairs, labelPair{r.Key(), vals[0]})
		default:
			return labelMatcher{fallback: sel}
		}
	}
	return m
}

// matcherForSet matches the labels that include every one of set's.
func matcherForSet(set map[string]string) labelMatcher {
	m := labelMatcher{pairs: make([]labelPair, 0, len(set))}
	for k, v := range set {
		m.pairs = append(m.pairs, labelPair{k, v})
	}
	return m
}

func (m labelMatcher) matches(l map[string]string) bool {
	if m.fallback != nil {
		return m.fallback.Matches(labels.Set(l))
	}
	for _, p := range m.pairs {
		if v, ok := l[p.key]; !ok || v != p.value {
			return false
		}
	}
	return true
}

// podFromTemplate is the pod a ReplicaSet creates: the template's
// labels, annotations, finalizers and spec, a generated name prefixed
// "<rs>-", and rs as controller.
func podFromTemplate(rs *appsv1.ReplicaSet, ref metav1.OwnerReference) *corev1.Pod {
	t := &rs.Spec.Template
	prefix := rs.Name + "-"
	if len(apivalidation.NameIsDNSSubdomain(prefix, true)) > 0 {
		prefix = rs.Name
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       rs.Namespace,
			GenerateName:    prefix,
			Labels:          copyMap(t.Labels),
			Annotations:     copyMap(t.Annotations),
			OwnerReferences: []metav1.OwnerReference{ref},
		},
		Spec: *t.Spec.DeepCopy(),
	}
	if len(t.Finalizers) > 0 {
		pod.Finalizers = append([]string(nil), t.Finalizers...)
	}
	return pod
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func isReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// availableIn is how long until a ready pod has been ready for
// minReadySeconds; zero or less means it is available. The API keeps the
// ready time in whole seconds, so "ready for minReadySeconds" means
// strictly after readyTime+minReadySeconds, as upstream counts it.
func availableIn(p *corev1.Pod, minReadySeconds int32, now time.Time) (time.Duration, bool) {
	c := readyCondition(p)
	if c == nil || c.Status != corev1.ConditionTrue {
		return 0, false
	}
	if minReadySeconds == 0 {
		return 0, true
	}
	if c.LastTransitionTime.IsZero() {
		return 0, false
	}
	at := c.LastTransitionTime.Add(time.Duration(minReadySeconds) * time.Second)
	if at.Before(now) {
		return 0, true
	}
	// At least a tick, so a caller requeueing after the wait never
	// requeues at once for a pod exactly at its threshold.
	return max(at.Sub(now), time.Millisecond), false
}

// calculateStatus counts the ReplicaSet's pods. active are its claimed
// active pods, terminating its pods being deleted. A manageReplicas error
// sets the ReplicaFailure condition (reason FailedCreate or FailedDelete,
// message the error); a clean sync removes it. withTerminating fills
// terminatingReplicas (ReplicationControllers have no such field).
// requeue, when positive, is when the next ready pod becomes available.
func calculateStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, now time.Time, withTerminating bool) (st appsv1.ReplicaSetStatus, requeue time.Duration) {
	template := matcherForSet(rs.Spec.Template.Labels)
	return calculateStatusBy(rs, active, terminating, manageErr, now, withTerminating, func(p *corev1.Pod) bool { return template.matches(p.Labels) })
}

// calculateStatusBy is calculateStatus with "carries every template
// label" as a function.
func calculateStatusBy(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, now time.Time, withTerminating bool, fullyLabeled func(*corev1.Pod) bool) (st appsv1.ReplicaSetStatus, requeue time.Duration) {
	st = *rs.Status.DeepCopy()
	var fully, ready, available int32
	for _, p := range active {
		if fullyLabeled(p) {
			fully++
		}
		if !isReady(p) {
			continue
		}
		ready++
		wait, ok := availableIn(p, rs.Spec.MinReadySeconds, now)
		if ok {
			available++
		} else if requeue == 0 || wait < requeue {
			requeue = wait
		}
	}
	st.Replicas = int32(len(active))
	st.FullyLabeledReplicas = fully
	st.ReadyReplicas = ready
	st.AvailableReplicas = available
	st.TerminatingReplicas = nil
	if withTerminating {
		st.TerminatingReplicas = ptr.To(int32(len(terminating)))
	}

	failure := -1
	for i, c := range st.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure {
			failure = i
		}
	}
	switch {
	case manageErr != nil && failure < 0:
		reason := ""
		if diff := len(active) - replicas(rs); diff < 0 {
			reason = "FailedCreate"
		} else if diff > 0 {
			reason = "FailedDelete"
		}
		st.Conditions = append(st.Conditions, appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetReplicaFailure,
			Status:             corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now),
			Reason:             reason,
			Message:            manageErr.Error(),
		})
	case manageErr == nil && failure >= 0:
		st.Conditions = append(st.Conditions[:failure:failure], st.Conditions[failure+1:]...)
		if len(st.Conditions) == 0 {
			st.Conditions = nil
		}
	}
	return st, requeue
}

// statusCurrent: writing st would change nothing (the steady state).
func statusCurrent(rs *appsv1.ReplicaSet, st appsv1.ReplicaSetStatus) bool {
	o := rs.Status
	return o.Replicas == st.Replicas &&
		o.FullyLabeledReplicas == st.FullyLabeledReplicas &&
		o.ReadyReplicas == st.ReadyReplicas &&
		o.AvailableReplicas == st.AvailableReplicas &&
		ptr.Equal(o.TerminatingReplicas, st.TerminatingReplicas) &&
		rs.Generation == o.ObservedGeneration &&
		equality.Semantic.DeepEqual(o.Conditions, st.Conditions)
}

// podsToDelete picks n of pods to delete when scaling down, the ones
// whose loss hurts least first (see deletionOrder). related are the pods
// of every ReplicaSet with the same controller (e.g. a Deployment's old
// and new ReplicaSets): a pod on a node crowded with them goes first,
// which spreads the survivors.
func podsToDelete(pods, related []*corev1.Pod, n int, now time.Time) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range related {
		if isActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	o := deletionOrder{pods: append([]*corev1.Pod(nil), pods...), rank: make([]int, len(pods)), now: now}
	for i, p := range o.pods {
		o.rank[i] = onNode[p.Spec.NodeName]
	}
	sort.Sort(o)
	return o.pods[:n]
}

// deletionOrder sorts pods so that the first is the best to delete:
//
//  1. not yet on a node, before assigned;
//  2. Pending, then Unknown, then Running;
//  3. not ready before ready;
//  4. lower controller.kubernetes.io/pod-deletion-cost first;
//  5. more related pods on the same node first;
//  6. ready for less time first (in powers of two of the age, so pods
//     made ready in one rollout wave tie and the tie breaks at random by
//     UID rather than always killing the newest);
//  7. more container restarts first;
//  8. created more recently first (again on a log2 scale, ties by UID).
type deletionOrder struct {
	pods []*corev1.Pod
	rank []int
	now  time.Time
}

func (o deletionOrder) Len() int { return len(o.pods) }
func (o deletionOrder) Swap(i, j int) {
	o.pods[i], o.pods[j] = o.pods[j], o.pods[i]
	o.rank[i], o.rank[j] = o.rank[j], o.rank[i]
}

var phaseOrder = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

func (o deletionOrder) Less(i, j int) bool {
	a, b := o.pods[i], o.pods[j]
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return a.Spec.NodeName == ""
	}
	if pa, pb := phaseOrder[a.Status.Phase], phaseOrder[b.Status.Phase]; pa != pb {
		return pa < pb
	}
	ra, rb := isReady(a), isReady(b)
	if ra != rb {
		return !ra
	}
	if ca, cb := deletionCost(a), deletionCost(b); ca != cb {
		return ca < cb
	}
	if o.rank[i] != o.rank[j] {
		return o.rank[i] > o.rank[j]
	}
	if ra && rb {
		ta, tb := readyCondition(a).LastTransitionTime.Time, readyCondition(b).LastTransitionTime.Time
		if !ta.Equal(tb) {
			if less, decided := o.newerFirst(ta, tb, a, b); decided {
				return less
			}
		}
	}
	if xa, xb := maxRestarts(a), maxRestarts(b); xa != xb {
		return xa > xb
	}
	if ta, tb := a.CreationTimestamp.Time, b.CreationTimestamp.Time; !ta.Equal(tb) {
		if less, decided := o.newerFirst(ta, tb, a, b); decided {
			return less
		}
	}
	return false
}

// newerFirst orders two different times newest first, a zero time
// before any, comparing whole powers of two of their ages.
func (o deletionOrder) newerFirst(ta, tb time.Time, a, b *corev1.Pod) (less, decided bool) {
	if ta.IsZero() || tb.IsZero() {
		return ta.IsZero(), true
	}
	if o.now.IsZero() {
		return ta.After(tb), true
	}
	if d := log2Age(o.now, ta) - log2Age(o.now, tb); d != 0 {
		return d < 0, true
	}
	return a.UID < b.UID, true
}

func log2Age(now, t time.Time) int64 {
	d := now.Sub(t)
	if d <= 0 {
		return -1
	}
	return int64(math.Log2(float64(d)))
}

// deletionCost reads the pod-deletion-cost annotation; a missing or
// malformed one costs 0.
func deletionCost(p *corev1.Pod) int32 {
	v, ok := p.Annotations[corev1.PodDeletionCost]
	if !ok {
		return 0
	}
	c, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0
	}
	return int32(c)
}

// maxRestarts is the highest restart count of the pod's long-running
// containers (regular containers and restartable init containers).
func maxRestarts(p *corev1.Pod) int32 {
	var m int32
	for _, s := range p.Status.ContainerStatuses {
		m = max(m, s.RestartCount)
	}
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	for _, s := range p.Status.InitContainerStatuses {
		if sidecars[s.Name] {
			m = max(m, s.RestartCount)
		}
	}
	return m
}
