package registry

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func pdbWith(mutate func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: objMeta("web"),
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: new(intstr.FromInt32(2)), Selector: matchLabels(map[string]string{"app": "web"})}}
	mutate(pdb)
	return pdb
}

func TestPDBValidate(t *testing.T) {
	always := policyv1.AlwaysAllow
	for _, tc := range []struct {
		name   string
		mutate func(*policyv1.PodDisruptionBudget)
		want   []string
	}{
		{name: "min available", mutate: func(p *policyv1.PodDisruptionBudget) {}},
		{name: "max unavailable percent", mutate: func(p *policyv1.PodDisruptionBudget) {
			p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, new(intstr.FromString("25%"))
		}},
		{name: "neither is fine", mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = nil }},
		{name: "both", mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = new(intstr.FromInt32(1)) },
			want: []string{"spec: Invalid value"}},
		{name: "negative", mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = new(intstr.FromInt32(-1)) },
			want: []string{"spec.minAvailable: Invalid value"}},
		{name: "over 100%", mutate: func(p *policyv1.PodDisruptionBudget) {
			p.Spec.MinAvailable, p.Spec.MaxUnavailable = nil, new(intstr.FromString("150%"))
		}, want: []string{"spec.maxUnavailable: Invalid value"}},
		{name: "not a percent", mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = new(intstr.FromString("half")) },
			want: []string{"spec.minAvailable: Invalid value"}},
		{name: "no selector matches nothing but is valid", mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.Selector = nil }},
		{name: "bad selector value", mutate: func(p *policyv1.PodDisruptionBudget) {
			p.Spec.Selector = matchLabels(map[string]string{"app": "no spaces"})
		}, want: []string{"spec.selector.matchLabels: Invalid value"}},
		{name: "eviction policy", mutate: func(p *policyv1.PodDisruptionBudget) { p.Spec.UnhealthyPodEvictionPolicy = &always }},
		{name: "unknown eviction policy", mutate: func(p *policyv1.PodDisruptionBudget) {
			p.Spec.UnhealthyPodEvictionPolicy = new(policyv1.UnhealthyPodEvictionPolicyType("Sometimes"))
		}, want: []string{"spec.unhealthyPodEvictionPolicy: Unsupported value"}},
		// Upstream checks a budget's name only as a path segment.
		{name: "non-DNS name", mutate: func(p *policyv1.PodDisruptionBudget) { p.Name = "Web_Budget" }},
		{name: "slash in name", mutate: func(p *policyv1.PodDisruptionBudget) { p.Name = "a/b" },
			want: []string{"metadata.name: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := runCreate(mustResource(t, "policy", "poddisruptionbudgets"), pdbWith(tc.mutate))
			expectErrs(t, errs, tc.want...)
		})
	}
}

func TestPDBMessages(t *testing.T) {
	r := mustResource(t, "policy", "poddisruptionbudgets")
	both := pdbWith(func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = new(intstr.FromInt32(1)) })
	expectErrWith(t, runCreate(r, both), "spec: Invalid value", "minAvailable and maxUnavailable cannot be both set")
	over := pdbWith(func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = new(intstr.FromString("101%")) })
	expectErrWith(t, runCreate(r, over), "spec.minAvailable: Invalid value", "must not be greater than 100%")
	policy := pdbWith(func(p *policyv1.PodDisruptionBudget) {
		p.Spec.UnhealthyPodEvictionPolicy = new(policyv1.UnhealthyPodEvictionPolicyType("x"))
	})
	expectErrWith(t, runCreate(r, policy), "spec.unhealthyPodEvictionPolicy: Unsupported value", `supported values: "AlwaysAllow", "IfHealthyBudget"`)
}

func TestPDBCreateDropsStatus(t *testing.T) {
	pdb := pdbWith(func(p *policyv1.PodDisruptionBudget) { p.Status.DisruptionsAllowed = 5 })
	expectErrs(t, runCreate(mustResource(t, "policy", "poddisruptionbudgets"), pdb))
	if pdb.Status.DisruptionsAllowed != 0 {
		t.Errorf("status kept on create: %+v", pdb.Status)
	}
}

func TestPDBUpdate(t *testing.T) {
	r := mustResource(t, "policy", "poddisruptionbudgets")
	old := pdbWith(func(p *policyv1.PodDisruptionBudget) {})
	markStored(&old.ObjectMeta)
	t.Run("selector may change", func(t *testing.T) {
		pdb := old.DeepCopy()
		pdb.Spec.Selector = matchLabels(map[string]string{"app": "api"})
		pdb.Spec.MinAvailable = new(intstr.FromString("50%"))
		expectErrs(t, runUpdate(r, pdb, old))
	})
	t.Run("still exclusive", func(t *testing.T) {
		pdb := old.DeepCopy()
		pdb.Spec.MaxUnavailable = new(intstr.FromInt32(1))
		expectErrs(t, runUpdate(r, pdb, old), "spec: Invalid value")
	})
	t.Run("stored invalid selector may stay", func(t *testing.T) {
		// The relaxation covers values in expressions, as upstream's.
		bad := old.DeepCopy()
		bad.Spec.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"no spaces"}}}}
		expectErrs(t, runCreate(r, bad.DeepCopy()), "spec.selector.matchExpressions[0].values[0]: Invalid value")
		pdb := bad.DeepCopy()
		pdb.Labels = map[string]string{"edited": "true"}
		expectErrs(t, runUpdate(r, pdb, bad))
	})
	t.Run("name is immutable", func(t *testing.T) {
		pdb := old.DeepCopy()
		pdb.Name = "other"
		expectErrs(t, runUpdate(r, pdb, old), "metadata.name: Invalid value")
	})
}

func TestPDBStatusUpdate(t *testing.T) {
	r := mustResource(t, "policy", "poddisruptionbudgets")
	old := pdbWith(func(p *policyv1.PodDisruptionBudget) {})
	for _, tc := range []struct {
		name   string
		status policyv1.PodDisruptionBudgetStatus
		want   []string
	}{
		{name: "counts", status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3,
			Conditions: []metav1.Condition{{Type: "DisruptionAllowed", Status: metav1.ConditionTrue, Reason: "SufficientPods", LastTransitionTime: metav1.Now()}}}},
		{name: "negative counts", status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: -1, ExpectedPods: -2},
			want: []string{"status.disruptionsAllowed: Invalid value", "status.expectedPods: Invalid value"}},
		{name: "condition without reason", status: policyv1.PodDisruptionBudgetStatus{
			Conditions: []metav1.Condition{{Type: "DisruptionAllowed", Status: metav1.ConditionTrue, LastTransitionTime: metav1.Now()}}},
			want: []string{"status.conditions[0].reason: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pdb := old.DeepCopy()
			pdb.Status = tc.status
			expectErrs(t, r.ValidateStatusUpdate(pdb, old), tc.want...)
		})
	}
}
