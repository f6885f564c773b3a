package disruption

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func ownedBy(uid string) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs-" + uid, UID: types.UID(uid), Controller: new(true)}}
	}
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func deleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: t0} }

func mkPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func mkPods(n int, opts ...podOpt) []*corev1.Pod {
	var pods []*corev1.Pod
	for i := range n {
		pods = append(pods, mkPod(string(rune('a'+i)), opts...))
	}
	return pods
}

// mapFinder resolves controllers by UID to a scale; "err" fails.
func mapFinder(scales map[string]int32) scaleFinder {
	return func(ref *metav1.OwnerReference, _ string) (*controllerScale, error) {
		if ref.UID == "err" {
			return nil, errors.New("scale lookup failed")
		}
		n, ok := scales[string(ref.UID)]
		if !ok {
			return nil, nil
		}
		return &controllerScale{ref.UID, n}, nil
	}
}

func intOrStr(s string) *intstr.IntOrString {
	v := intstr.Parse(s)
	return &v
}

func TestBudgetCounts(t *testing.T) {
	scales := map[string]int32{"rs1": 3, "rs4": 4, "rs5": 5, "rs10": 10}
	for _, tc := range []struct {
		name             string
		minAvail, maxUn  string
		pods             []*corev1.Pod
		expected, wanted int32
		unmanaged        int
		err              string
	}{
		{name: "integer minAvailable counts the pods, no controller needed", minAvail: "2", pods: mkPods(3),
			expected: 3, wanted: 2},
		{name: "integer minAvailable above the pod count", minAvail: "5", pods: mkPods(3),
			expected: 3, wanted: 5},
		{name: "percent minAvailable of controller scale rounds up", minAvail: "50%", pods: mkPods(2, ownedBy("rs1")),
			expected: 3, wanted: 2},
		{name: "percent minAvailable 34% of 3 rounds up to 2", minAvail: "34%", pods: mkPods(3, ownedBy("rs1")),
			expected: 3, wanted: 2},
		{name: "percent minAvailable 100%", minAvail: "100%", pods: mkPods(1, ownedBy("rs10")),
			expected: 10, wanted: 10},
		{name: "percent maxUnavailable of 4", maxUn: "50%", pods: mkPods(4, ownedBy("rs4")),
			expected: 4, wanted: 2},
		{name: "percent maxUnavailable of 3 rounds up the unavailable", maxUn: "50%", pods: mkPods(3, ownedBy("rs1")),
			expected: 3, wanted: 1},
		{name: "percent maxUnavailable 10% of 5 rounds up to 1", maxUn: "10%", pods: mkPods(5, ownedBy("rs5")),
			expected: 5, wanted: 4},
		{name: "integer maxUnavailable uses the scale too", maxUn: "1", pods: mkPods(2, ownedBy("rs4")),
			expected: 4, wanted: 3},
		{name: "maxUnavailable above the scale gives 0, not negative", maxUn: "9", pods: mkPods(2, ownedBy("rs4")),
			expected: 4, wanted: 0},
		{name: "two controllers add up, each once",
			maxUn: "0", pods: append(mkPods(3, ownedBy("rs1")), mkPod("x", ownedBy("rs4")), mkPod("y", ownedBy("rs4"))),
			expected: 7, wanted: 7},
		{name: "unmanaged pods add nothing and are named", minAvail: "50%",
			pods:     append(mkPods(2, ownedBy("rs4")), mkPod("bare")),
			expected: 4, wanted: 2, unmanaged: 1},
		{name: "no pods expects nothing", maxUn: "1", pods: nil, expected: 0, wanted: 0},
		{name: "controller not found fails", minAvail: "50%", pods: mkPods(1, ownedBy("gone")),
			err: `found no controllers for pod "a"`},
		{name: "finder error fails", maxUn: "1", pods: mkPods(1, ownedBy("err")), err: "scale lookup failed"},
		{name: "neither field set expects nothing", pods: mkPods(3), expected: 0, wanted: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := &policyv1.PodDisruptionBudgetSpec{}
			if tc.minAvail != "" {
				spec.MinAvailable = intOrStr(tc.minAvail)
			}
			if tc.maxUn != "" {
				spec.MaxUnavailable = intOrStr(tc.maxUn)
			}
			expected, desired, unmanaged, err := budgetCounts(spec, tc.pods, mapFinder(scales))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if expected != tc.expected || desired != tc.wanted || len(unmanaged) != tc.unmanaged {
				t.Errorf("expected, desired, unmanaged = %d, %d, %v; want %d, %d, %d unmanaged",
					expected, desired, unmanaged, tc.expected, tc.wanted, tc.unmanaged)
			}
		})
	}
}

func TestExpectedScaleLooksUpEachControllerOnce(t *testing.T) {
	calls := 0
	find := func(ref *metav1.OwnerReference, _ string) (*controllerScale, error) {
		calls++
		// Every ReplicaSet resolves to one Deployment of 6.
		return &controllerScale{"deploy", 6}, nil
	}
	pods := append(mkPods(3, ownedBy("rs-old")), mkPod("x", ownedBy("rs-new")), mkPod("y", ownedBy("rs-new")))
	n, _, err := expectedScale(pods, find)
	if err != nil {
		t.Fatal(err)
	}
	if n != 6 {
		t.Errorf("expected = %d, want 6 (the Deployment once, not per ReplicaSet)", n)
	}
	if calls != 2 {
		t.Errorf("finder called %d times, want 2 (once per ReplicaSet)", calls)
	}
}

func TestCountHealthy(t *testing.T) {
	recent := metav1.NewTime(t0.Add(-time.Minute))
	old := metav1.NewTime(t0.Add(-3 * time.Minute))
	for _, tc := range []struct {
		name      string
		pods      []*corev1.Pod
		disrupted map[string]metav1.Time
		want      int32
	}{
		{name: "all ready", pods: mkPods(3), want: 3},
		{name: "not ready does not count", pods: []*corev1.Pod{mkPod("a"), mkPod("b", notReady), mkPod("c")}, want: 2},
		{name: "being deleted does not count", pods: []*corev1.Pod{mkPod("a"), mkPod("b", deleting)}, want: 1},
		{name: "no conditions is not ready", pods: []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}}, want: 0},
		{name: "recently evicted does not count", pods: mkPods(3), disrupted: map[string]metav1.Time{"a": recent}, want: 2},
		{name: "evicted long ago counts again", pods: mkPods(3), disrupted: map[string]metav1.Time{"a": old}, want: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := countHealthy(tc.pods, tc.disrupted, t0); got != tc.want {
				t.Errorf("currentHealthy = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestActiveDisruptions(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{Status: policyv1.PodDisruptionBudgetStatus{DisruptedPods: map[string]metav1.Time{
		"fresh":   metav1.NewTime(t0.Add(-30 * time.Second)),
		"fresher": metav1.NewTime(t0.Add(-10 * time.Second)),
		"overdue": metav1.NewTime(t0.Add(-3 * time.Minute)),
		"dying":   metav1.NewTime(t0.Add(-10 * time.Second)),
		"gone":    metav1.NewTime(t0.Add(-10 * time.Second)),
	}}}
	pods := []*corev1.Pod{mkPod("fresh"), mkPod("fresher"), mkPod("overdue"), mkPod("dying", deleting), mkPod("other")}
	kept, recheck, overdue := activeDisruptions(pdb, pods, t0)
	if len(kept) != 2 || kept["fresh"].Time.IsZero() || kept["fresher"].Time.IsZero() {
		t.Errorf("kept = %v, want fresh and fresher only", kept)
	}
	if want := t0.Add(90 * time.Second); !recheck.Equal(want) {
		t.Errorf("recheck = %v, want %v (when the oldest kept entry expires)", recheck, want)
	}
	if len(overdue) != 1 || overdue[0].Name != "overdue" {
		t.Errorf("overdue = %v, want [overdue]", overdue)
	}

	kept, recheck, overdue = activeDisruptions(&policyv1.PodDisruptionBudget{}, pods, t0)
	if len(kept) != 0 || !recheck.IsZero() || overdue != nil || kept == nil {
		t.Errorf("no entries: kept=%v recheck=%v overdue=%v", kept, recheck, overdue)
	}
}

func TestDesiredStatus(t *testing.T) {
	for _, tc := range []struct {
		name                     string
		healthy, desired, expect int32
		wantAllowed              int32
		wantCond                 metav1.ConditionStatus
		wantReason               string
	}{
		{name: "one spare", healthy: 3, desired: 2, expect: 3, wantAllowed: 1, wantCond: metav1.ConditionTrue, wantReason: policyv1.SufficientPodsReason},
		{name: "none spare", healthy: 2, desired: 2, expect: 3, wantAllowed: 0, wantCond: metav1.ConditionFalse, wantReason: policyv1.InsufficientPodsReason},
		{name: "short never negative", healthy: 1, desired: 3, expect: 3, wantAllowed: 0, wantCond: metav1.ConditionFalse, wantReason: policyv1.InsufficientPodsReason},
		{name: "nothing expected allows nothing", healthy: 2, desired: 0, expect: 0, wantAllowed: 0, wantCond: metav1.ConditionFalse, wantReason: policyv1.InsufficientPodsReason},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
			st := desiredStatus(pdb, tc.healthy, tc.desired, tc.expect, map[string]metav1.Time{})
			if st.DisruptionsAllowed != tc.wantAllowed || st.CurrentHealthy != tc.healthy || st.DesiredHealthy != tc.desired ||
				st.ExpectedPods != tc.expect || st.ObservedGeneration != 4 {
				t.Errorf("status = %+v", st)
			}
			c := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
			if c == nil || c.Status != tc.wantCond || c.Reason != tc.wantReason || c.ObservedGeneration != 4 {
				t.Errorf("condition = %+v, want %s/%s", c, tc.wantCond, tc.wantReason)
			}
			if statusCurrent(pdb, &st) {
				t.Error("a budget with an empty status is current")
			}
			pdb.Status = st
			if !statusCurrent(pdb, &st) {
				t.Error("a budget is not current with the status just computed")
			}
			pdb.Generation = 5
			if statusCurrent(pdb, &st) {
				t.Error("a budget with a new generation is current")
			}
		})
	}
}

func TestFailSafeStatus(t *testing.T) {
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	pdb.Status = desiredStatus(pdb, 3, 1, 3, nil)
	st, changed := failSafeStatus(pdb, errors.New(`found no controllers for pod "a"`))
	if !changed || st.DisruptionsAllowed != 0 || st.CurrentHealthy != 3 {
		t.Fatalf("fail-safe status = %+v, changed %v", st, changed)
	}
	c := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != policyv1.SyncFailedReason || c.Message != `found no controllers for pod "a"` {
		t.Errorf("condition = %+v", c)
	}
	pdb.Status = st
	if _, changed := failSafeStatus(pdb, errors.New(`found no controllers for pod "a"`)); changed {
		t.Error("the same failure again changes the status")
	}
	if statusCurrent(pdb, &policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 3, DesiredHealthy: 1, ExpectedPods: 3, ObservedGeneration: 2}) {
		t.Error("a failed budget is current once the numbers compute again")
	}
}

func TestStaleDisruption(t *testing.T) {
	cond := func(status corev1.ConditionStatus, reason string, age time.Duration) podOpt {
		return func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: status, Reason: reason, LastTransitionTime: metav1.NewTime(t0.Add(-age)),
			})
		}
	}
	phase := func(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		has  bool
		wait time.Duration
	}{
		{name: "no condition", pod: mkPod("a")},
		{name: "fresh eviction waits", pod: mkPod("a", cond(corev1.ConditionTrue, "EvictionByEvictionAPI", 30*time.Second)), has: true, wait: 90 * time.Second},
		{name: "old eviction is stale now", pod: mkPod("a", cond(corev1.ConditionTrue, "PreemptionByScheduler", 5*time.Minute)), has: true, wait: 0},
		{name: "already false", pod: mkPod("a", cond(corev1.ConditionFalse, "", 5*time.Minute))},
		{name: "kubelet's is never stale", pod: mkPod("a", cond(corev1.ConditionTrue, corev1.PodReasonTerminationByKubelet, time.Hour))},
		{name: "being deleted keeps it", pod: mkPod("a", deleting, cond(corev1.ConditionTrue, "EvictionByEvictionAPI", time.Hour))},
		{name: "terminal keeps it", pod: mkPod("a", phase(corev1.PodFailed), cond(corev1.ConditionTrue, "DeletionByTaintManager", time.Hour))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			has, wait := staleDisruption(tc.pod, t0)
			if has != tc.has || wait != tc.wait {
				t.Errorf("stale = %v after %v, want %v after %v", has, wait, tc.has, tc.wait)
			}
		})
	}
}
