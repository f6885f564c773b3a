package registry

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const admissionGroup = "admissionregistration.k8s.io"

func vapPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "replicas"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
					},
				}},
			},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= 5"}},
		},
	}
}

func vapBinding() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "replicas-binding"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "replicas",
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
}

func TestValidatingAdmissionPolicyDefaults(t *testing.T) {
	p := vapPolicy()
	expectErrs(t, runCreate(mustResource(t, admissionGroup, "validatingadmissionpolicies"), p))
	if p.Spec.FailurePolicy == nil || *p.Spec.FailurePolicy != admissionregistrationv1.Fail {
		t.Errorf("failurePolicy = %v, want Fail", p.Spec.FailurePolicy)
	}
	mc := p.Spec.MatchConstraints
	if mc.MatchPolicy == nil || *mc.MatchPolicy != admissionregistrationv1.Equivalent {
		t.Errorf("matchPolicy = %v, want Equivalent", mc.MatchPolicy)
	}
	if mc.NamespaceSelector == nil || mc.ObjectSelector == nil {
		t.Errorf("selectors not defaulted to {}: %v %v", mc.NamespaceSelector, mc.ObjectSelector)
	}
	if s := mc.ResourceRules[0].Scope; s == nil || *s != admissionregistrationv1.AllScopes {
		t.Errorf("scope = %v, want *", s)
	}
}

func TestValidatingAdmissionPolicyValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*admissionregistrationv1.ValidatingAdmissionPolicy)
		want   []string
		detail string
	}{
		{name: "valid"},
		{name: "params, variables, messageExpression and audit annotation", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "max", Expression: "int(params.data.max)"}}
			p.Spec.Validations = []admissionregistrationv1.Validation{{Expression: "object.spec.replicas <= variables.max",
				MessageExpression: "'at most ' + string(variables.max)", Reason: new(metav1.StatusReasonInvalid)}}
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "high", ValueExpression: "'replicas: ' + string(object.spec.replicas)"}}
		}},
		{name: "syntax error", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.spec.replicas <="
		}, want: []string{"spec.validations[0].expression: Invalid value"}, detail: "compilation failed: ERROR: <input>:1:"},
		{name: "params without paramKind", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "object.spec.replicas <= params.max"
		}, want: []string{"spec.validations[0].expression: Invalid value"}, detail: "undeclared reference to 'params'"},
		{name: "not a bool", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "'yes'"
		}, want: []string{"spec.validations[0].expression: Invalid value"}, detail: "must evaluate to bool"},
		{name: "unknown variable", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Expression = "variables.nope"
		}, want: []string{"spec.validations[0].expression: Invalid value"}, detail: "nope"},
		{name: "messageExpression must be a string", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].MessageExpression = "1"
		}, want: []string{"spec.validations[0].messageExpression: Invalid value"}, detail: "must evaluate to string"},
		{name: "message with a line break", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Message = "too\nmany"
		}, want: []string{"spec.validations[0].message: Invalid value"}, detail: "message must not contain line breaks"},
		{name: "unknown reason", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations[0].Reason = new(metav1.StatusReason("Teapot"))
		}, want: []string{"spec.validations[0].reason: Unsupported value"}},
		{name: "no validations", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Validations = nil
		}, want: []string{"spec.validations: Required value", "spec.auditAnnotations: Required value"}},
		{name: "no matchConstraints", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints = nil
		}, want: []string{"spec.matchConstraints: Required value"}},
		{name: "no resourceRules", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules = nil
		}, want: []string{"spec.matchConstraints.resourceRules: Required value"}},
		{name: "bad rule", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			r := &p.Spec.MatchConstraints.ResourceRules[0]
			r.Operations = []admissionregistrationv1.OperationType{"*", "PATCH"}
			r.APIVersions = nil
			r.Resources = []string{"*/*", "pods"}
			r.Scope = new(admissionregistrationv1.ScopeType("Global"))
		}, want: []string{"spec.matchConstraints.resourceRules[0].operations: Invalid value",
			"spec.matchConstraints.resourceRules[0].operations[1]: Unsupported value",
			"spec.matchConstraints.resourceRules[0].apiVersions: Required value",
			"spec.matchConstraints.resourceRules[0].resources: Invalid value",
			"spec.matchConstraints.resourceRules[0].scope: Unsupported value"}},
		{name: "bad matchPolicy", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.MatchPolicy = new(admissionregistrationv1.MatchPolicyType("Loose"))
		}, want: []string{"spec.matchConstraints.matchPolicy: Unsupported value"}},
		{name: "bad paramKind", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "a/b/c"}
		}, want: []string{"spec.paramKind.apiVersion: Invalid value", "spec.paramKind.kind: Required value"}},
		{name: "bad failurePolicy", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.FailurePolicy = new(admissionregistrationv1.FailurePolicyType("Maybe"))
		}, want: []string{"spec.failurePolicy: Unsupported value"}},
		{name: "matchConditions", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{
				{Name: "not-kube-system", Expression: "request.namespace != 'kube-system'"},
				{Name: "not-kube-system", Expression: "true"},
				{Name: "bad", Expression: "1 +"},
			}
		}, want: []string{"spec.matchConditions[1].name: Duplicate value", "spec.matchConditions[2].expression: Invalid value"}},
		{name: "variable names", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.Variables = []admissionregistrationv1.Variable{{Name: "in", Expression: "1"}, {Name: "", Expression: ""}}
		}, want: []string{"spec.variables[0].name: Invalid value", "spec.variables[1].name: Required value",
			"spec.variables[1].expression: Required value"}},
		{name: "audit annotations", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{
				{Key: "a", ValueExpression: "1"}, {Key: "a", ValueExpression: "'x'"}, {Key: "b/c", ValueExpression: "null"}}
		}, want: []string{"spec.auditAnnotations[0].valueExpression: Invalid value",
			"spec.auditAnnotations[1].key: Duplicate value", "spec.auditAnnotations[2].key: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := vapPolicy()
			if tc.mutate != nil {
				tc.mutate(p)
			}
			errs := runCreate(mustResource(t, admissionGroup, "validatingadmissionpolicies"), p)
			expectErrs(t, errs, tc.want...)
			if tc.detail != "" {
				expectErrWith(t, errs, tc.want[0], tc.detail)
			}
		})
	}
}

func TestValidatingAdmissionPolicyBindingValidate(t *testing.T) {
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	for _, tc := range []struct {
		name   string
		mutate func(*admissionregistrationv1.ValidatingAdmissionPolicyBinding)
		want   []string
		detail string
	}{
		{name: "valid"},
		{name: "no actions", mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.ValidationActions = nil },
			want: []string{"spec.validationActions: Required value"}, detail: "at least one validation action is required"},
		{name: "deny and warn", mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{"Deny", "Warn"}
		}, want: []string{"spec.validationActions: Invalid value"}, detail: "must not contain both Deny and Warn"},
		{name: "duplicate and unknown", mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{"Audit", "Audit", "Log"}
		}, want: []string{"spec.validationActions[1]: Duplicate value", "spec.validationActions[2]: Unsupported value"}},
		{name: "no policy", mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) { b.Spec.PolicyName = "" },
			want: []string{"spec.policyName: Required value"}},
		{name: "paramRef by name", mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "default",
				ParameterNotFoundAction: new(admissionregistrationv1.DenyAction)}
		}},
		{name: "paramRef with name and selector", mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Selector: selector,
				ParameterNotFoundAction: new(admissionregistrationv1.AllowAction)}
		}, want: []string{"spec.paramRef.name: Forbidden", "spec.paramRef.selector: Forbidden"}},
		{name: "paramRef with neither and no action", mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{}
		}, want: []string{"spec.paramRef: Required value", "spec.paramRef.parameterNotFoundAction: Required value"}},
		{name: "matchResources are defaulted and checked", mutate: func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: "Sometimes"}}}}
		}, want: []string{"spec.matchResources.namespaceSelector.matchExpressions[0].operator: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := vapBinding()
			if tc.mutate != nil {
				tc.mutate(b)
			}
			errs := runCreate(mustResource(t, admissionGroup, "validatingadmissionpolicybindings"), b)
			expectErrs(t, errs, tc.want...)
			if tc.detail != "" {
				expectErrWith(t, errs, tc.want[0], tc.detail)
			}
		})
	}
}

func TestValidatingAdmissionPolicyTables(t *testing.T) {
	p := vapPolicy()
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	row := mustResource(t, admissionGroup, "validatingadmissionpolicies").Table.Row(p)
	if row[0] != "replicas" || row[1] != int64(1) || row[2] != "v1/ConfigMap" {
		t.Errorf("policy row = %v", row)
	}
	r := mustResource(t, admissionGroup, "validatingadmissionpolicybindings")
	b := vapBinding()
	if row := r.Table.Row(b); row[1] != "replicas" || row[2] != "<unset>" {
		t.Errorf("binding row = %v", row)
	}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits"}
	if row := r.Table.Row(b); row[2] != "*/limits" {
		t.Errorf("binding row = %v, want */limits", row)
	}
	b.Spec.ParamRef.Namespace = "default"
	if row := r.Table.Row(b); row[2] != "default/limits" {
		t.Errorf("binding row = %v, want default/limits", row)
	}
}

func TestValidatingAdmissionPolicyStatusUpdate(t *testing.T) {
	r := mustResource(t, admissionGroup, "validatingadmissionpolicies")
	if !r.HasStatus || !r.HasGeneration {
		t.Fatalf("HasStatus %v, HasGeneration %v: the plugin writes status.observedGeneration", r.HasStatus, r.HasGeneration)
	}
	old := vapPolicy()
	for _, tc := range []struct {
		name     string
		warnings []admissionregistrationv1.ExpressionWarning
		want     []string
	}{
		{name: "warnings", warnings: []admissionregistrationv1.ExpressionWarning{
			{FieldRef: "spec.validations[0].expression", Warning: "apps/v1, Kind=Deployment: ERROR: undefined field"}}},
		{name: "incomplete warning", warnings: []admissionregistrationv1.ExpressionWarning{{}},
			want: []string{"status.typeChecking.expressionWarnings[0].warning: Required value",
				"status.typeChecking.expressionWarnings[0].fieldRef: Required value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := old.DeepCopy()
			p.Status.ObservedGeneration = 1
			p.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: tc.warnings}
			expectErrs(t, r.ValidateStatusUpdate(p, old), tc.want...)
		})
	}
}
