package registry

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

const admissionregistrationGroup = "admissionregistration.k8s.io"

func whValidHook(name string) admissionregistrationv1.ValidatingWebhook {
	return admissionregistrationv1.ValidatingWebhook{
		Name:         name,
		ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: new("https://hooks.example.com:8443/validate")},
		Rules: []admissionregistrationv1.RuleWithOperations{{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
		}},
		SideEffects:             new(admissionregistrationv1.SideEffectClassNone),
		AdmissionReviewVersions: []string{"v1"},
	}
}

func whValidating(hooks ...admissionregistrationv1.ValidatingWebhook) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "policy"}, Webhooks: hooks}
}

func whMutating(hooks ...admissionregistrationv1.MutatingWebhook) *admissionregistrationv1.MutatingWebhookConfiguration {
	return &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "injector"}, Webhooks: hooks}
}

func whMutatingHook(name string) admissionregistrationv1.MutatingWebhook {
	v := whValidHook(name)
	return admissionregistrationv1.MutatingWebhook{Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules,
		SideEffects: v.SideEffects, AdmissionReviewVersions: v.AdmissionReviewVersions}
}

func TestWebhookConfigurationDefaults(t *testing.T) {
	hook := whMutatingHook("inject.example.com")
	hook.ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "hooks", Name: "injector"}}
	c := whMutating(hook)
	mustResource(t, admissionregistrationGroup, "mutatingwebhookconfigurations").Default(c)
	w := c.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent ||
		*w.TimeoutSeconds != 10 || *w.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Errorf("defaults: failurePolicy %v matchPolicy %v timeout %v reinvocation %v", *w.FailurePolicy, *w.MatchPolicy, *w.TimeoutSeconds, *w.ReinvocationPolicy)
	}
	if w.NamespaceSelector == nil || w.ObjectSelector == nil || len(w.NamespaceSelector.MatchLabels) != 0 {
		t.Errorf("selectors not defaulted to {}: %v %v", w.NamespaceSelector, w.ObjectSelector)
	}
	if *w.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Errorf("scope = %v, want *", *w.Rules[0].Scope)
	}
	if *w.ClientConfig.Service.Port != 443 {
		t.Errorf("service port = %v, want 443", *w.ClientConfig.Service.Port)
	}
	if w.SideEffects == nil || *w.SideEffects != admissionregistrationv1.SideEffectClassNone {
		t.Errorf("sideEffects changed by defaulting: %v", w.SideEffects)
	}

	// Explicit values stay.
	ign := whValidHook("check.example.com")
	ign.FailurePolicy, ign.TimeoutSeconds = new(admissionregistrationv1.Ignore), new(int32(3))
	vc := whValidating(ign)
	mustResource(t, admissionregistrationGroup, "validatingwebhookconfigurations").Default(vc)
	if *vc.Webhooks[0].FailurePolicy != admissionregistrationv1.Ignore || *vc.Webhooks[0].TimeoutSeconds != 3 {
		t.Errorf("explicit values overwritten: %v %v", *vc.Webhooks[0].FailurePolicy, *vc.Webhooks[0].TimeoutSeconds)
	}
}

func TestValidatingWebhookConfigurationValidate(t *testing.T) {
	rule := func(ops []admissionregistrationv1.OperationType, groups, versions, resources []string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Operations: ops,
			Rule: admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources}}}
	}
	create := []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	core, v1 := []string{""}, []string{"v1"}
	for _, tc := range []struct {
		name   string
		mutate func(c *admissionregistrationv1.ValidatingWebhookConfiguration)
		want   []string
		detail string
	}{
		{name: "valid"},
		{name: "service reference with path", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "hooks", Name: "checker", Path: new("/validate/pods")}}
		}},
		{name: "match conditions", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{
				{Name: "not-system", Expression: `!request.userInfo.username.startsWith("system:")`},
				{Name: "labelled", Expression: `has(object.metadata.labels) && "app" in object.metadata.labels`},
			}
		}},
		{name: "two webhooks", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks = append(c.Webhooks, whValidHook("other.example.com"))
		}},
		{name: "bad configuration name", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) { c.Name = "Policy" },
			want: []string{"metadata.name: Invalid value"}},
		{name: "name not fully qualified", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) { c.Webhooks[0].Name = "check.example" },
			want: []string{"webhooks[0].name: Invalid value"}, detail: "should be a domain with at least three segments separated by dots"},
		{name: "name missing", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) { c.Webhooks[0].Name = "" },
			want: []string{"webhooks[0].name: Required value"}},
		{name: "name not a subdomain", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Name = "Check.example.com"
		},
			want: []string{"webhooks[0].name: Invalid value"}},
		{name: "duplicate names", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks = append(c.Webhooks, whValidHook("check.example.com"))
		}, want: []string{"webhooks[1].name: Duplicate value"}},
		{name: "no review versions", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].AdmissionReviewVersions = nil
		},
			want: []string{"webhooks[0].admissionReviewVersions: Required value"}, detail: "must specify one of v1, v1beta1"},
		{name: "unknown review version only", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].AdmissionReviewVersions = []string{"v2"}
		}, want: []string{"webhooks[0].admissionReviewVersions: Invalid value"}, detail: "must include at least one of v1, v1beta1"},
		{name: "duplicate review version", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].AdmissionReviewVersions = []string{"v1", "v1"}
		}, want: []string{"webhooks[0].admissionReviewVersions[1]: Invalid value"}, detail: "duplicate version"},
		{name: "no side effects", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) { c.Webhooks[0].SideEffects = nil },
			want: []string{"webhooks[0].sideEffects: Required value"}, detail: "must specify one of None, NoneOnDryRun"},
		{name: "side effects Some", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].SideEffects = new(admissionregistrationv1.SideEffectClassSome)
		}, want: []string{"webhooks[0].sideEffects: Unsupported value"}},
		{name: "both url and service", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "hooks", Name: "checker"}
		}, want: []string{"webhooks[0].clientConfig: Required value"}, detail: "exactly one of url or service is required"},
		{name: "neither url nor service", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) { c.Webhooks[0].ClientConfig.URL = nil },
			want: []string{"webhooks[0].clientConfig: Required value"}},
		{name: "http url", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.URL = new("http://hooks.example.com/validate")
		}, want: []string{"webhooks[0].clientConfig.url: Invalid value"}, detail: "'https' is the only allowed URL scheme"},
		{name: "url with query", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.URL = new("https://hooks.example.com/validate?x=1")
		}, want: []string{"webhooks[0].clientConfig.url: Invalid value"}, detail: "query parameters are not permitted in the URL"},
		{name: "url with fragment", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.URL = new("https://hooks.example.com/validate#here")
		}, want: []string{"webhooks[0].clientConfig.url: Invalid value"}, detail: "fragments are not permitted in the URL"},
		{name: "url with user", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.URL = new("https://me:secret@hooks.example.com/validate")
		}, want: []string{"webhooks[0].clientConfig.url: Invalid value"}, detail: "user information is not permitted in the URL"},
		{name: "url without host", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.URL = new("https:///validate")
		}, want: []string{"webhooks[0].clientConfig.url: Invalid value"}, detail: "host must be provided; desired format: https://host[/path]"},
		{name: "service without name and namespace", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{}}
		}, want: []string{"webhooks[0].clientConfig.service.name: Required value", "webhooks[0].clientConfig.service.namespace: Required value"}},
		{name: "service path without slash", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "hooks", Name: "checker", Path: new("validate")}}
		}, want: []string{"webhooks[0].clientConfig.service.path: Invalid value"}, detail: "must start with a '/'"},
		{name: "service path with a bad segment", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "hooks", Name: "checker", Path: new("/Validate")}}
		}, want: []string{"webhooks[0].clientConfig.service.path: Invalid value"}, detail: "segment[0]: a lowercase RFC 1123 subdomain"},
		{name: "service path with empty segment", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "hooks", Name: "checker", Path: new("/a//b")}}
		}, want: []string{"webhooks[0].clientConfig.service.path: Invalid value"}, detail: "segment[1] may not be empty"},
		{name: "service port out of range", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig = admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{
				Namespace: "hooks", Name: "checker", Port: new(int32(70000))}}
		}, want: []string{"webhooks[0].clientConfig.service.port: Invalid value"}, detail: "port is not valid"},
		{name: "timeout too long", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].TimeoutSeconds = new(int32(31))
		}, want: []string{"webhooks[0].timeoutSeconds: Invalid value"}, detail: "the timeout value must be between 1 and 30 seconds"},
		{name: "unknown failure policy", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].FailurePolicy = new(admissionregistrationv1.FailurePolicyType("Maybe"))
		}, want: []string{"webhooks[0].failurePolicy: Unsupported value"}},
		{name: "unknown match policy", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].MatchPolicy = new(admissionregistrationv1.MatchPolicyType("Fuzzy"))
		}, want: []string{"webhooks[0].matchPolicy: Unsupported value"}},
		{name: "no operations", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = rule(nil, core, v1, []string{"pods"})
		}, want: []string{"webhooks[0].rules[0].operations: Required value"}},
		{name: "star with other operations", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = rule([]admissionregistrationv1.OperationType{"*", "CREATE"}, core, v1, []string{"pods"})
		}, want: []string{"webhooks[0].rules[0].operations: Invalid value"}},
		{name: "unknown operation", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = rule([]admissionregistrationv1.OperationType{"PATCH"}, core, v1, []string{"pods"})
		}, want: []string{"webhooks[0].rules[0].operations[0]: Unsupported value"}},
		{name: "no api groups", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = rule(create, nil, v1, []string{"pods"})
		}, want: []string{"webhooks[0].rules[0].apiGroups: Required value"}},
		{name: "empty api version", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = rule(create, core, []string{""}, []string{"pods"})
		}, want: []string{"webhooks[0].rules[0].apiVersions[0]: Required value"}},
		{name: "no resources", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = rule(create, core, v1, nil)
		}, want: []string{"webhooks[0].rules[0].resources: Required value"}},
		{name: "star with other resources", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = rule(create, core, v1, []string{"*", "pods"})
		}, want: []string{"webhooks[0].rules[0].resources: Invalid value"}, detail: "if '*' is present, must not specify other resources without subresources"},
		{name: "star slash star with other resources", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = rule(create, core, v1, []string{"*/*", "pods/status"})
		}, want: []string{"webhooks[0].rules[0].resources: Invalid value"}, detail: "if '*/*' is present, must not specify other resources"},
		{name: "subresource wildcard covers another", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = rule(create, core, v1, []string{"pods/*", "pods/status"})
		}, want: []string{"webhooks[0].rules[0].resources[1]: Invalid value"}, detail: "if 'pods/*' is present, must not specify pods/status"},
		{name: "pods and pods subresources", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules = rule(create, core, v1, []string{"pods", "pods/*"})
		}},
		{name: "unknown scope", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].Rules[0].Scope = new(admissionregistrationv1.ScopeType("Galaxy"))
		}, want: []string{"webhooks[0].rules[0].scope: Unsupported value"}},
		{name: "bad namespace selector", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Near"}}}
		}, want: []string{"webhooks[0].namespaceSelector.matchExpressions[0].operator: Invalid value"}},
		{name: "bad object selector label", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"-bad": "x"}}
		}, want: []string{"webhooks[0].objectSelector.matchLabels: Invalid value"}},
		{name: "match condition without name", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Expression: "true"}}
		}, want: []string{"webhooks[0].matchConditions[0].name: Required value"}},
		{name: "match condition name not qualified", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "no spaces", Expression: "true"}}
		}, want: []string{"webhooks[0].matchConditions[0].name: Invalid value"}},
		{name: "duplicate match condition", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "true"}, {Name: "a", Expression: "false"}}
		}, want: []string{"webhooks[0].matchConditions[1].name: Duplicate value"}},
		{name: "match condition that does not compile", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: "object.metadata.name =="}}
		}, want: []string{"webhooks[0].matchConditions[0].expression: Invalid value"}, detail: "compilation failed"},
		{name: "match condition not a bool", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: `"yes"`}}
		}, want: []string{"webhooks[0].matchConditions[0].expression: Invalid value"}, detail: "must evaluate to bool"},
		{name: "match condition with unknown variable", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a", Expression: `params.x == 1`}}
		}, want: []string{"webhooks[0].matchConditions[0].expression: Invalid value"}, detail: "undeclared reference"},
		{name: "match condition using the authorizer", mutate: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
			c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "a",
				Expression: `authorizer.group('').resource('pods').namespace('default').check('create').allowed()`}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := whValidating(whValidHook("check.example.com"))
			if tc.mutate != nil {
				tc.mutate(c)
			}
			errs := runCreate(mustResource(t, admissionregistrationGroup, "validatingwebhookconfigurations"), c)
			expectErrs(t, errs, tc.want...)
			if tc.detail != "" {
				expectErrWith(t, errs, tc.want[0], tc.detail)
			}
		})
	}
}

func TestMutatingWebhookConfigurationValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(c *admissionregistrationv1.MutatingWebhookConfiguration)
		want   []string
	}{
		{name: "valid"},
		{name: "reinvoke if needed", mutate: func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ReinvocationPolicy = new(admissionregistrationv1.IfNeededReinvocationPolicy)
		}},
		{name: "unknown reinvocation policy", mutate: func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ReinvocationPolicy = new(admissionregistrationv1.ReinvocationPolicyType("Always"))
		}, want: []string{"webhooks[0].reinvocationPolicy: Unsupported value"}},
		{name: "shared rules apply", mutate: func(c *admissionregistrationv1.MutatingWebhookConfiguration) {
			c.Webhooks[0].ClientConfig.URL = new("http://hooks.example.com/")
			c.Webhooks[0].SideEffects = nil
		}, want: []string{"webhooks[0].clientConfig.url: Invalid value", "webhooks[0].sideEffects: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := whMutating(whMutatingHook("inject.example.com"))
			if tc.mutate != nil {
				tc.mutate(c)
			}
			expectErrs(t, runCreate(mustResource(t, admissionregistrationGroup, "mutatingwebhookconfigurations"), c), tc.want...)
		})
	}
}

// An update may keep what the stored object already got away with, but
// not introduce it.
func TestWebhookConfigurationUpdate(t *testing.T) {
	r := mustResource(t, admissionregistrationGroup, "validatingwebhookconfigurations")
	loose := whValidating(whValidHook("check.example.com"), whValidHook("check.example.com"))
	loose.Webhooks[0].SideEffects = new(admissionregistrationv1.SideEffectClassUnknown)
	loose.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "old", Expression: "legacyFn()"}}
	r.Default(loose)
	markStored(&loose.ObjectMeta)

	strict := whValidating(whValidHook("check.example.com"))
	r.Default(strict)
	markStored(&strict.ObjectMeta)
	for _, tc := range []struct {
		name string
		old  *admissionregistrationv1.ValidatingWebhookConfiguration
		edit func(c *admissionregistrationv1.ValidatingWebhookConfiguration)
		want []string
	}{
		{name: "loose object keeps its duplicates, side effects and stored expression", old: loose,
			edit: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[1].TimeoutSeconds = new(int32(5))
			}},
		{name: "loose object still may not add a bad expression", old: loose,
			edit: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[1].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "new", Expression: "other()"}}
			}, want: []string{"webhooks[1].matchConditions[0].expression: Invalid value"}},
		{name: "strict object may not gain a duplicate", old: strict,
			edit: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks = append(c.Webhooks, c.Webhooks[0])
			}, want: []string{"webhooks[1].name: Duplicate value"}},
		{name: "loose object may use Some, not an unknown class", old: loose,
			edit: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[1].SideEffects = new(admissionregistrationv1.SideEffectClass("Bogus"))
			}, want: []string{"webhooks[1].sideEffects: Unsupported value"}},
		{name: "strict object may not gain unknown side effects", old: strict,
			edit: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[0].SideEffects = new(admissionregistrationv1.SideEffectClassSome)
			}, want: []string{"webhooks[0].sideEffects: Unsupported value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := tc.old.DeepCopy()
			tc.edit(c)
			expectErrs(t, runUpdate(r, c, tc.old), tc.want...)
		})
	}
}

func TestWebhookConfigurationTable(t *testing.T) {
	for _, tc := range []struct {
		resource string
		obj      runtime.Object
		name     string
		hooks    int64
	}{
		{"validatingwebhookconfigurations", whValidating(whValidHook("a.example.com"), whValidHook("b.example.com")), "policy", 2},
		{"mutatingwebhookconfigurations", whMutating(whMutatingHook("a.example.com")), "injector", 1},
	} {
		t.Run(tc.resource, func(t *testing.T) {
			tbl := mustResource(t, admissionregistrationGroup, tc.resource).Table
			var names []string
			for _, c := range tbl.Columns {
				names = append(names, c.Name)
			}
			if len(names) != 3 || names[0] != "Name" || names[1] != "Webhooks" || names[2] != "Age" {
				t.Fatalf("columns = %v, want Name Webhooks Age", names)
			}
			if row := tbl.Row(tc.obj); row[0] != tc.name || row[1] != tc.hooks || row[2] != "<unknown>" {
				t.Errorf("row = %v", row)
			}
		})
	}
}
