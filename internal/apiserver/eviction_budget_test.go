package apiserver

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEvictionSpend covers the budget decision of an eviction without a
// server: what each budget state answers and what a spent budget records.
func TestEvictionSpend(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	budget := func(mut func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
		pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Generation: 2},
			Status: policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 2, DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2}}
		if mut != nil {
			mut(pdb)
		}
		return pdb
	}
	for _, tc := range []struct {
		name    string
		pdb     *policyv1.PodDisruptionBudget
		code    int32
		message string
		cause   string
	}{
		{name: "allowed", pdb: budget(nil)},
		{name: "spent", pdb: budget(func(p *policyv1.PodDisruptionBudget) { p.Status.DisruptionsAllowed = 0 }), code: http.StatusTooManyRequests,
			message: "Cannot evict pod as it would violate the pod's disruption budget.", cause: "The disruption budget web needs 2 healthy pods and has 3 currently"},
		{name: "not yet observed", pdb: budget(func(p *policyv1.PodDisruptionBudget) { p.Status.ObservedGeneration = 1 }), code: http.StatusTooManyRequests,
			cause: "The disruption budget web is still being processed by the server."},
		{name: "negative", pdb: budget(func(p *policyv1.PodDisruptionBudget) { p.Status.DisruptionsAllowed = -1 }), code: http.StatusForbidden,
			message: "pdb disruptions allowed is negative"},
		{name: "too many unconfirmed", pdb: budget(func(p *policyv1.PodDisruptionBudget) {
			p.Status.DisruptedPods = map[string]metav1.Time{}
			for i := range evictionMaxDisruptedPods + 1 {
				p.Status.DisruptedPods[strings.Repeat("x", i+1)] = metav1.NewTime(now)
			}
		}), code: http.StatusForbidden, message: "DisruptedPods map too big"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.pdb.Status.DisruptionsAllowed
			err := evictionSpend(tc.pdb, "web-0", now)
			if tc.code == 0 {
				if err != nil {
					t.Fatal(err)
				}
				if tc.pdb.Status.DisruptionsAllowed != before-1 || !tc.pdb.Status.DisruptedPods["web-0"].Time.Equal(now) {
					t.Errorf("status after spending: %+v", tc.pdb.Status)
				}
				c := apimeta.FindStatusCondition(tc.pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
				if c == nil || c.Status != metav1.ConditionFalse || c.Reason != policyv1.InsufficientPodsReason {
					t.Errorf("DisruptionAllowed condition after the last disruption: %+v", c)
				}
				return
			}
			st, ok := err.(apierrors.APIStatus)
			if !ok || st.Status().Code != tc.code || !strings.Contains(st.Status().Message, tc.message) {
				t.Fatalf("got %v, want %d with %q", err, tc.code, tc.message)
			}
			if tc.cause != "" {
				causes := st.Status().Details.Causes
				if len(causes) != 1 || causes[0].Type != policyv1.DisruptionBudgetCause || causes[0].Message != tc.cause {
					t.Errorf("causes = %+v, want %q", causes, tc.cause)
				}
			}
			if tc.pdb.Status.DisruptionsAllowed != before {
				t.Errorf("refused eviction changed the budget: %+v", tc.pdb.Status)
			}
		})
	}
}

// TestEvictionSkipsBudget: an unready pod goes without spending a
// disruption when the budget is met without it, or always under
// unhealthyPodEvictionPolicy AlwaysAllow; a ready pod never does.
func TestEvictionSkipsBudget(t *testing.T) {
	ready := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	unready := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}}
	met := policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 2, DesiredHealthy: 2}
	short := policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 2}
	always, ifHealthy := policyv1.AlwaysAllow, policyv1.IfHealthyBudget
	for _, tc := range []struct {
		name   string
		pod    *corev1.Pod
		status policyv1.PodDisruptionBudgetStatus
		policy *policyv1.UnhealthyPodEvictionPolicyType
		want   bool
	}{
		{"ready pod", ready, met, &always, false},
		{"unready, budget met", unready, met, nil, true},
		{"unready, budget short", unready, short, nil, false},
		{"unready, budget short, IfHealthyBudget", unready, short, &ifHealthy, false},
		{"unready, budget short, AlwaysAllow", unready, short, &always, true},
		{"unready, nothing desired", unready, policyv1.PodDisruptionBudgetStatus{}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pdb := &policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{UnhealthyPodEvictionPolicy: tc.policy}, Status: tc.status}
			if got := evictionSkipsBudget(tc.pod, pdb); got != tc.want {
				t.Errorf("evictionSkipsBudget = %v, want %v", got, tc.want)
			}
		})
	}
	for phase, want := range map[corev1.PodPhase]bool{corev1.PodPending: true, corev1.PodSucceeded: true, corev1.PodFailed: true, corev1.PodRunning: false} {
		if got := evictionIgnoresBudget(&corev1.Pod{Status: corev1.PodStatus{Phase: phase}}); got != want {
			t.Errorf("evictionIgnoresBudget(%s) = %v, want %v", phase, got, want)
		}
	}
}

func TestStreamLogOptions(t *testing.T) {
	for _, tc := range []struct {
		query string
		want  string
	}{
		{query: "container=app&follow=true&tailLines=10&sinceSeconds=5&limitBytes=100&timestamps=1"},
		{query: "tailLines=-1", want: "tailLines: Invalid value: -1: must be greater than or equal to 0"},
		{query: "tailLines=ten", want: `tailLines: Invalid value: "ten"`},
		{query: "sinceSeconds=5&sinceTime=2026-01-02T03:04:05Z", want: "at most one of `sinceTime` or `sinceSeconds` may be specified"},
		{query: "stream=Stdout&tailLines=3", want: "`tailLines` and specific `stream` are mutually exclusive for now"},
		{query: "stream=Both", want: `stream: Unsupported value: "Both"`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			_, err := streamLogOptions(q, "web")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
