package registry

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func coreRL(kv ...string) corev1.ResourceList {
	l := corev1.ResourceList{}
	for i := 0; i+1 < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return l
}

func limitRangeWith(items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: objMeta("limits"), Spec: corev1.LimitRangeSpec{Limits: items}}
}

func TestLimitRangeDefaults(t *testing.T) {
	lr := limitRangeWith(
		corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Max: coreRL("cpu", "2"), Min: coreRL("memory", "64Mi")},
		corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: coreRL("cpu", "4")},
	)
	if errs := runCreate(mustResource(t, "", "limitranges"), lr); len(errs) != 0 {
		t.Fatalf("defaulted limit range does not validate: %v", errs.ToAggregate())
	}
	c, p := lr.Spec.Limits[0], lr.Spec.Limits[1]
	for _, tc := range []struct {
		name      string
		got, want string
	}{
		{"default limit from max", c.Default.Cpu().String(), "2"},
		{"default request from default limit", c.DefaultRequest.Cpu().String(), "2"},
		{"default request from min", c.DefaultRequest.Memory().String(), "64Mi"},
		{"no default limit without max", c.Default.Memory().String(), "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %s, want %s", tc.got, tc.want)
			}
		})
	}
	if p.Default != nil || p.DefaultRequest != nil {
		t.Errorf("pod item got defaults: %+v", p)
	}
}

func TestLimitRangeValidate(t *testing.T) {
	r := mustResource(t, "", "limitranges")
	container := func(mutate func(*corev1.LimitRangeItem)) corev1.LimitRangeItem {
		item := corev1.LimitRangeItem{Type: corev1.LimitTypeContainer}
		mutate(&item)
		return item
	}
	for _, tc := range []struct {
		name  string
		items []corev1.LimitRangeItem
		want  []string
	}{
		{"valid", []corev1.LimitRangeItem{container(func(i *corev1.LimitRangeItem) {
			i.Min, i.Max, i.Default, i.DefaultRequest = coreRL("cpu", "100m"), coreRL("cpu", "2"), coreRL("cpu", "1"), coreRL("cpu", "500m")
			i.MaxLimitRequestRatio = coreRL("cpu", "4")
		})}, nil},
		{"unknown type", []corev1.LimitRangeItem{{Type: "Node"}}, []string{"spec.limits[0].type: Invalid value"}},
		{"qualified type", []corev1.LimitRangeItem{{Type: "example.com/Thing"}}, nil},
		{"duplicate type", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod}, {Type: corev1.LimitTypePod}},
			[]string{"spec.limits[1].type: Duplicate value"}},
		{"min above max", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Min: coreRL("cpu", "2"), Max: coreRL("cpu", "1")}},
			[]string{"spec.limits[0].min[cpu]: Invalid value"}},
		{"default above max", []corev1.LimitRangeItem{container(func(i *corev1.LimitRangeItem) {
			i.Max, i.Default, i.DefaultRequest = coreRL("cpu", "1"), coreRL("cpu", "2"), coreRL("cpu", "1")
		})}, []string{"spec.limits[0].default[cpu]: Invalid value"}},
		{"defaulted request above max", []corev1.LimitRangeItem{container(func(i *corev1.LimitRangeItem) {
			i.Max, i.Default = coreRL("cpu", "1"), coreRL("cpu", "2")
		})}, []string{"spec.limits[0].default[cpu]: Invalid value", "spec.limits[0].defaultRequest[cpu]: Invalid value"}},
		{"min above default request", []corev1.LimitRangeItem{container(func(i *corev1.LimitRangeItem) {
			i.Min, i.DefaultRequest = coreRL("memory", "1Gi"), coreRL("memory", "512Mi")
		})}, []string{"spec.limits[0].defaultRequest[memory]: Invalid value"}},
		{"pod defaults", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Default: coreRL("cpu", "1"), DefaultRequest: coreRL("cpu", "1")}},
			[]string{"spec.limits[0].default: Forbidden", "spec.limits[0].defaultRequest: Forbidden"}},
		{"claim without storage bounds", []corev1.LimitRangeItem{{Type: corev1.LimitTypePersistentVolumeClaim}},
			[]string{"spec.limits[0].limits: Required value"}},
		{"claim with storage bound", []corev1.LimitRangeItem{{Type: corev1.LimitTypePersistentVolumeClaim, Max: coreRL("storage", "10Gi")}}, nil},
		{"container storage", []corev1.LimitRangeItem{{Type: corev1.LimitTypeContainer, Max: coreRL("storage", "1Gi")}},
			[]string{"spec.limits[0].max[storage]: Invalid value", "spec.limits[0].default[storage]: Invalid value", "spec.limits[0].defaultRequest[storage]: Invalid value"}},
		{"ratio below one", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, MaxLimitRequestRatio: coreRL("cpu", "500m")}},
			[]string{"spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value"}},
		{"ratio above max over min", []corev1.LimitRangeItem{{Type: corev1.LimitTypePod, Min: coreRL("cpu", "1"), Max: coreRL("cpu", "2"), MaxLimitRequestRatio: coreRL("cpu", "3")}},
			[]string{"spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value"}},
		{"extended resource request must equal limit", []corev1.LimitRangeItem{container(func(i *corev1.LimitRangeItem) {
			i.Default, i.DefaultRequest = coreRL("example.com/gpu", "2"), coreRL("example.com/gpu", "1")
		})}, []string{"spec.limits[0].defaultRequest[example.com/gpu]: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, limitRangeWith(tc.items...)), tc.want...)
		})
	}
	t.Run("messages", func(t *testing.T) {
		errs := runCreate(r, limitRangeWith(corev1.LimitRangeItem{Type: corev1.LimitTypePod,
			Min: coreRL("cpu", "2"), Max: coreRL("cpu", "1"), MaxLimitRequestRatio: coreRL("memory", "500m")}))
		expectErrWith(t, errs, "spec.limits[0].min[cpu]: Invalid value", "min value 2 is greater than max value 1")
		expectErrWith(t, errs, "spec.limits[0].maxLimitRequestRatio[memory]: Invalid value", "ratio 500m is less than 1")
	})
	t.Run("update", func(t *testing.T) {
		old := limitRangeWith(corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: coreRL("cpu", "1")})
		runCreate(r, old)
		markStored(&old.ObjectMeta)
		lr := old.DeepCopy()
		lr.Spec.Limits[0].Min = coreRL("cpu", "2")
		expectErrs(t, runUpdate(r, lr, old), "spec.limits[0].min[cpu]: Invalid value")
	})
}

func quotaWith(mutate func(*corev1.ResourceQuota)) *corev1.ResourceQuota {
	rq := &corev1.ResourceQuota{ObjectMeta: objMeta("compute"),
		Spec: corev1.ResourceQuotaSpec{Hard: coreRL("pods", "10", "requests.cpu", "4", "limits.memory", "8Gi")}}
	mutate(rq)
	return rq
}

func TestResourceQuotaValidate(t *testing.T) {
	r := mustResource(t, "", "resourcequotas")
	selector := func(reqs ...corev1.ScopedResourceSelectorRequirement) *corev1.ScopeSelector {
		return &corev1.ScopeSelector{MatchExpressions: reqs}
	}
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.ResourceQuota)
		want   []string
	}{
		{"valid", func(*corev1.ResourceQuota) {}, nil},
		{"qualified and object count names", func(rq *corev1.ResourceQuota) {
			rq.Spec.Hard = coreRL("count/deployments.apps", "5", "requests.example.com/gpu", "2", "requests.hugepages-2Mi", "1Gi")
		}, nil},
		{"negative hard", func(rq *corev1.ResourceQuota) { rq.Spec.Hard = coreRL("requests.cpu", "-1") },
			[]string{"spec.hard[requests.cpu]: Invalid value"}},
		{"fraction of a pod", func(rq *corev1.ResourceQuota) { rq.Spec.Hard = coreRL("pods", "1500m") },
			[]string{"spec.hard[pods]: Invalid value"}},
		{"unknown resource", func(rq *corev1.ResourceQuota) { rq.Spec.Hard = coreRL("gpus", "1") },
			[]string{"spec.hard[gpus]: Invalid value", "spec.hard[gpus]: Invalid value"}},
		{"not a quota resource", func(rq *corev1.ResourceQuota) { rq.Spec.Hard = coreRL("storage", "1Gi") },
			[]string{"spec.hard[storage]: Invalid value"}},
		{"scoped to pod counts", func(rq *corev1.ResourceQuota) {
			rq.Spec.Hard = coreRL("pods", "5")
			rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		}, nil},
		{"unknown scope", func(rq *corev1.ResourceQuota) { rq.Spec.Scopes = []corev1.ResourceQuotaScope{"Sometimes"} },
			[]string{"spec.scopes: Invalid value"}},
		{"scope cannot limit resource", func(rq *corev1.ResourceQuota) {
			rq.Spec.Hard = coreRL("requests.cpu", "1")
			rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		}, []string{"spec.scopes: Invalid value"}},
		{"scope cannot limit two resources: one cause", func(rq *corev1.ResourceQuota) {
			rq.Spec.Hard = coreRL("requests.cpu", "1", "requests.memory", "1Gi")
			rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		}, []string{"spec.scopes: Invalid value"}},
		{"conflicting scopes", func(rq *corev1.ResourceQuota) {
			rq.Spec.Hard = coreRL("pods", "5")
			rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotTerminating}
		}, []string{"spec.scopes: Invalid value"}},
		{"priority class selector", func(rq *corev1.ResourceQuota) {
			rq.Spec.ScopeSelector = selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass,
				Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"}})
		}, nil},
		{"selector In without values", func(rq *corev1.ResourceQuota) {
			rq.Spec.ScopeSelector = selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass,
				Operator: corev1.ScopeSelectorOpIn})
		}, []string{"spec.scopeSelector.matchExpressions.values: Required value"}},
		{"selector Exists with values", func(rq *corev1.ResourceQuota) {
			rq.Spec.ScopeSelector = selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass,
				Operator: corev1.ScopeSelectorOpExists, Values: []string{"high"}})
		}, []string{"spec.scopeSelector.matchExpressions.values: Invalid value"}},
		{"terminating selector must use Exists", func(rq *corev1.ResourceQuota) {
			rq.Spec.ScopeSelector = selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeTerminating,
				Operator: corev1.ScopeSelectorOpDoesNotExist})
		}, []string{"spec.scopeSelector.matchExpressions.operator: Invalid value"}},
		{"unknown selector operator", func(rq *corev1.ResourceQuota) {
			rq.Spec.ScopeSelector = selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass,
				Operator: "Near"})
		}, []string{"spec.scopeSelector.matchExpressions.operator: Invalid value"}},
		{"volume attributes class scope limits claims", func(rq *corev1.ResourceQuota) {
			rq.Spec.Hard = coreRL("persistentvolumeclaims", "3", "requests.storage", "10Gi")
			rq.Spec.ScopeSelector = selector(corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopeVolumeAttributesClass,
				Operator: corev1.ScopeSelectorOpIn, Values: []string{"gold"}})
		}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, quotaWith(tc.mutate)), tc.want...)
		})
	}
	t.Run("messages", func(t *testing.T) {
		errs := runCreate(r, quotaWith(func(rq *corev1.ResourceQuota) {
			rq.Spec.Hard = coreRL("gpus", "1")
			rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotBestEffort}
		}))
		expectErrWith(t, errs, "spec.hard[gpus]: Invalid value", "must be a standard resource for quota")
		expectErrWith(t, errs, "spec.hard[gpus]: Invalid value", "must be a standard resource type or fully qualified")
		expectErrWith(t, errs, "spec.scopes: Invalid value", "conflicting scopes")
	})
	t.Run("status cleared on create", func(t *testing.T) {
		rq := quotaWith(func(rq *corev1.ResourceQuota) { rq.Status.Used = coreRL("pods", "3") })
		runCreate(r, rq)
		if rq.Status.Used != nil {
			t.Errorf("status kept: %+v", rq.Status)
		}
	})
}

func TestResourceQuotaUpdate(t *testing.T) {
	r := mustResource(t, "", "resourcequotas")
	stored := func() *corev1.ResourceQuota {
		rq := quotaWith(func(rq *corev1.ResourceQuota) {
			rq.Spec.Hard = coreRL("pods", "5")
			rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}
		})
		runCreate(r, rq)
		markStored(&rq.ObjectMeta)
		return rq
	}
	t.Run("hard may change", func(t *testing.T) {
		old := stored()
		rq := old.DeepCopy()
		rq.Spec.Hard = coreRL("pods", "50")
		expectErrs(t, runUpdate(r, rq, old))
	})
	t.Run("scopes are immutable", func(t *testing.T) {
		old := stored()
		rq := old.DeepCopy()
		rq.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeNotTerminating}
		errs := runUpdate(r, rq, old)
		expectErrs(t, errs, "spec.scopes: Invalid value")
		expectErrWith(t, errs, "spec.scopes: Invalid value", "field is immutable")
	})
	t.Run("status", func(t *testing.T) {
		old := stored()
		rq := old.DeepCopy()
		rq.Status = corev1.ResourceQuotaStatus{Hard: coreRL("pods", "5"), Used: coreRL("pods", "2")}
		expectErrs(t, r.ValidateStatusUpdate(rq, old))
		rq.Status.Used = coreRL("pods", "-1", "cpus", "1")
		expectErrs(t, r.ValidateStatusUpdate(rq, old), "status.used[pods]: Invalid value",
			"status.used[cpus]: Invalid value", "status.used[cpus]: Invalid value")
	})
}
