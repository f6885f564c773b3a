package disruption

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The pure half of the controller: a budget's numbers from its spec, its
// pods and their controllers' scales. Nothing here reads the API.

// DeletionTimeout is how long a pod that the eviction subresource put in
// status.disruptedPods is expected to take to get a deletionTimestamp.
// Until then it does not count as healthy (the eviction is in flight);
// after that the entry is dropped and the pod counts again.
const DeletionTimeout = 2 * time.Minute

// StalePodDisruptionTimeout is how long a DisruptionTarget=True condition
// may stand on a pod that is not being deleted before it is reset to
// False: whoever set it (an eviction, a preemption) gave up.
const StalePodDisruptionTimeout = 2 * time.Minute

// controllerScale is a pod controller and its desired replica count.
type controllerScale struct {
	uid      types.UID
	replicas int32
}

// scaleFinder returns the scale of the controller ref names in namespace,
// nil when no such controller exists (or it has another UID), and an
// error when the lookup itself failed.
type scaleFinder func(ref *metav1.OwnerReference, namespace string) (*controllerScale, error)

// budgetCounts computes status.expectedPods and status.desiredHealthy.
//
// An integer minAvailable needs no controller: the expected count is
// simply the number of selected pods. Every other form (a percentage
// minAvailable, any maxUnavailable) is relative to how many pods there
// should be, which only the pods' controllers know: the expected count is
// the sum of the scales of the distinct controllers of the selected pods.
// Pods without a controller are returned as unmanaged (and add nothing);
// a pod whose controller cannot be found is an error. Percentages round
// up: 50% of 3 is 2, for minAvailable and maxUnavailable alike.
func budgetCounts(spec *policyv1.PodDisruptionBudgetSpec, pods []*corev1.Pod, find scaleFinder) (expected, desired int32, unmanaged []string, err error) {
	switch {
	case spec.MaxUnavailable != nil:
		expected, unmanaged, err = expectedScale(pods, find)
		if err != nil {
			return 0, 0, unmanaged, err
		}
		maxUnavailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MaxUnavailable, int(expected), true)
		if err != nil {
			return 0, 0, unmanaged, err
		}
		return expected, max(expected-int32(maxUnavailable), 0), unmanaged, nil
	case spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.Int:
		return int32(len(pods)), spec.MinAvailable.IntVal, nil, nil
	case spec.MinAvailable != nil:
		expected, unmanaged, err = expectedScale(pods, find)
		if err != nil {
			return 0, 0, unmanaged, err
		}
		minAvailable, err := intstr.GetScaledValueFromIntOrPercent(spec.MinAvailable, int(expected), true)
		if err != nil {
			return 0, 0, unmanaged, err
		}
		return expected, int32(minAvailable), unmanaged, nil
	}
	// A budget with neither field expects nothing and so allows nothing.
	return 0, 0, nil, nil
}

// expectedScale sums the replicas of the controllers of pods, each
// controller once, and names the pods that have no controller.
func expectedScale(pods []*corev1.Pod, find scaleFinder) (int32, []string, error) {
	var unmanaged []string
	scales := map[types.UID]int32{}
	for _, pod := range pods {
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil {
			unmanaged = append(unmanaged, pod.Name)
			continue
		}
		if _, seen := scales[ref.UID]; seen {
			continue
		}
		s, err := find(ref, pod.Namespace)
		if err != nil {
			return 0, unmanaged, err
		}
		if s == nil {
			return 0, unmanaged, fmt.Errorf("found no controllers for pod %q", pod.Name)
		}
		// When the scale came from further up (a Deployment's, through
		// its ReplicaSet), the ReplicaSet is remembered as adding nothing,
		// so its other pods are not looked up again.
		if ref.UID != s.uid {
			scales[ref.UID] = 0
		}
		scales[s.uid] = s.replicas
	}
	var sum int32
	for _, n := range scales {
		sum += n
	}
	return sum, unmanaged, nil
}

// activeDisruptions keeps the entries of status.disruptedPods that are
// still in flight: the pod exists, is not yet being deleted, and was
// evicted less than DeletionTimeout ago. It returns when the earliest kept
// entry expires (zero if none), and the pods whose entry expired without
// their deletion starting (they get a NotDeleted event).
func activeDisruptions(pdb *policyv1.PodDisruptionBudget, pods []*corev1.Pod, now time.Time) (kept map[string]metav1.Time, recheck time.Time, overdue []*corev1.Pod) {
	kept = map[string]metav1.Time{}
	if pdb.Status.DisruptedPods == nil {
		return kept, time.Time{}, nil
	}
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		at, ok := pdb.Status.DisruptedPods[pod.Name]
		if !ok {
			continue
		}
		expires := at.Add(DeletionTimeout)
		if expires.Before(now) {
			overdue = append(overdue, pod)
			continue
		}
		kept[pod.Name] = at
		if recheck.IsZero() || expires.Before(recheck) {
			recheck = expires
		}
	}
	return kept, recheck, overdue
}

// countHealthy counts the pods that are Ready, not being deleted and not
// being evicted. unhealthyPodEvictionPolicy plays no part here: it only
// changes which pods the eviction subresource may evict.
func countHealthy(pods []*corev1.Pod, disrupted map[string]metav1.Time, now time.Time) int32 {
	var n int32
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			continue
		}
		if at, ok := disrupted[pod.Name]; ok && at.Add(DeletionTimeout).After(now) {
			continue
		}
		if podReady(pod) {
			n++
		}
	}
	return n
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// desiredStatus is the status a budget should have. disruptionsAllowed is
// never negative, and is zero while the budget expects no pods: a budget
// whose first pods have just appeared must not allow evictions before its
// status was computed with them.
func desiredStatus(pdb *policyv1.PodDisruptionBudget, healthy, desired, expected int32, disrupted map[string]metav1.Time) policyv1.PodDisruptionBudgetStatus {
	allowed := healthy - desired
	if expected <= 0 || allowed < 0 {
		allowed = 0
	}
	st := policyv1.PodDisruptionBudgetStatus{
		CurrentHealthy:     healthy,
		DesiredHealthy:     desired,
		ExpectedPods:       expected,
		DisruptionsAllowed: allowed,
		DisruptedPods:      disrupted,
		ObservedGeneration: pdb.Generation,
		Conditions:         append([]metav1.Condition(nil), pdb.Status.Conditions...),
	}
	setAllowedCondition(&st)
	return st
}

// setAllowedCondition sets DisruptionAllowed from disruptionsAllowed.
func setAllowedCondition(st *policyv1.PodDisruptionBudgetStatus) {
	cond := metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.InsufficientPodsReason,
		ObservedGeneration: st.ObservedGeneration,
	}
	if st.DisruptionsAllowed > 0 {
		cond.Status, cond.Reason = metav1.ConditionTrue, policyv1.SufficientPodsReason
	}
	if st.Conditions == nil {
		st.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&st.Conditions, cond)
}

// statusCurrent reports whether pdb's status already says what want
// says, so that no write is needed. The condition counts only by status,
// reason and generation: its transition time and message are not
// rewritten for nothing.
func statusCurrent(pdb *policyv1.PodDisruptionBudget, want *policyv1.PodDisruptionBudgetStatus) bool {
	have := &pdb.Status
	if have.CurrentHealthy != want.CurrentHealthy || have.DesiredHealthy != want.DesiredHealthy ||
		have.ExpectedPods != want.ExpectedPods || have.DisruptionsAllowed != want.DisruptionsAllowed ||
		have.ObservedGeneration != pdb.Generation || !apiequality.Semantic.DeepEqual(have.DisruptedPods, want.DisruptedPods) {
		return false
	}
	cond := apimeta.FindStatusCondition(have.Conditions, policyv1.DisruptionAllowedCondition)
	if cond == nil {
		return false
	}
	if have.DisruptionsAllowed > 0 {
		return cond.Status == metav1.ConditionTrue && cond.Reason == policyv1.SufficientPodsReason
	}
	return cond.Status == metav1.ConditionFalse && cond.Reason == policyv1.InsufficientPodsReason
}

// failSafeStatus is what a budget says when its numbers could not be
// computed: no disruptions allowed, and why, in the condition (reason
// SyncFailed). The rest of the status is left as it was. changed is false
// when the status already says exactly that.
func failSafeStatus(pdb *policyv1.PodDisruptionBudget, cause error) (st policyv1.PodDisruptionBudgetStatus, changed bool) {
	st = *pdb.Status.DeepCopy()
	st.DisruptionsAllowed = 0
	if st.Conditions == nil {
		st.Conditions = []metav1.Condition{}
	}
	apimeta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type:               policyv1.DisruptionAllowedCondition,
		Status:             metav1.ConditionFalse,
		Reason:             policyv1.SyncFailedReason,
		Message:            cause.Error(),
		ObservedGeneration: st.ObservedGeneration,
	})
	return st, !apiequality.Semantic.DeepEqual(st, pdb.Status)
}

// staleDisruption reports whether pod carries a DisruptionTarget=True
// condition that this controller should eventually reset, and how long
// until it is stale. Conditions the kubelet set (TerminationByKubelet)
// are never stale: the kubelet may take arbitrarily long to act on them.
// Pods being deleted or already terminal keep theirs: the condition
// explains the ending.
func staleDisruption(pod *corev1.Pod, now time.Time) (has bool, wait time.Duration) {
	if pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false, 0
	}
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.DisruptionTarget {
			continue
		}
		if c.Status != corev1.ConditionTrue || c.Reason == corev1.PodReasonTerminationByKubelet {
			return false, 0
		}
		return true, max(StalePodDisruptionTimeout-now.Sub(c.LastTransitionTime.Time), 0)
	}
	return false, 0
}
