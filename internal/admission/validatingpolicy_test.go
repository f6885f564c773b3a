package admission

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/auth"
)

// vapObjects is an ObjectSource over policies, bindings and config maps.
type vapObjects struct {
	items []runtime.Object
	lists int
}

func vapGVROf(o runtime.Object) schema.GroupVersionResource {
	switch o.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		return vapPoliciesGVR
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		return vapBindingsGVR
	case *corev1.ConfigMap:
		return schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	}
	return schema.GroupVersionResource{}
}

func (s *vapObjects) GetObject(_ context.Context, gvr schema.GroupVersionResource, ns, name string) (runtime.Object, error) {
	for _, o := range s.items {
		m := o.(metav1.Object)
		if vapGVROf(o) == gvr && m.GetNamespace() == ns && m.GetName() == name {
			return o, nil
		}
	}
	return nil, nil
}

func (s *vapObjects) ListObjects(_ context.Context, gvr schema.GroupVersionResource, ns string, _ bool) ([]runtime.Object, error) {
	s.lists++
	var out []runtime.Object
	for _, o := range s.items {
		if vapGVROf(o) == gvr && (ns == "" || o.(metav1.Object).GetNamespace() == ns) {
			out = append(out, o)
		}
	}
	return out, nil
}

var vapTestResources = []ResourceKind{
	{Resource: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Kind: "ConfigMap", Namespaced: true},
	{Resource: schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}, Kind: "HorizontalPodAutoscaler", Namespaced: true},
	{Resource: schema.GroupVersionResource{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"}, Kind: "HorizontalPodAutoscaler", Namespaced: true},
}

// vapHPAPolicy refuses autoscaling/v2 HPAs named web, with matchPolicy.
func vapHPAPolicy(mp admissionregistrationv1.MatchPolicyType) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := vapTestPolicy("hpa", admissionregistrationv1.Validation{Expression: "object.metadata.name != 'web'"})
	p.Spec.MatchConstraints.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{"autoscaling"}, APIVersions: []string{"v2"},
		Resources: []string{"horizontalpodautoscalers"}}
	p.Spec.MatchConstraints.MatchPolicy = &mp
	return p
}

func vapHPAv1() *Attributes {
	return &Attributes{Operation: Create, Kind: schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"},
		Resource: schema.GroupVersionResource{Group: "autoscaling", Version: "v1", Resource: "horizontalpodautoscalers"}, Namespace: "team", Name: "web",
		Object: &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web"}}}
}

func vapTestPolicy(name string, validations ...admissionregistrationv1.Validation) *admissionregistrationv1.ValidatingAdmissionPolicy {
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-" + name), Generation: 1, ResourceVersion: "10"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: new(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{"CREATE", "UPDATE"},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"}},
				}}},
			},
			Validations: validations,
		},
	}
}

func vapTestBinding(name, policy string, actions ...admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	if len(actions) == 0 {
		actions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "11"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: actions},
	}
}

func vapDeployment(ns, name string, replicas int32, labels map[string]string) *Attributes {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas}}
	return &Attributes{Operation: Create, Kind: appsv1.SchemeGroupVersion.WithKind("Deployment"),
		Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Namespace: ns, Name: name, Object: d,
		User: &auth.User{Name: "alice", Groups: []string{"dev"}}}
}

func TestValidatingPolicy(t *testing.T) {
	maxReplicas := admissionregistrationv1.Validation{Expression: "object.spec.replicas <= 5"}
	limits := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "limits", Labels: map[string]string{"kind": "limits"}},
		Data: map[string]string{"max": "3"}}
	withParams := func(p *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1.ValidatingAdmissionPolicy {
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		return p
	}
	paramRef := func(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, ref admissionregistrationv1.ParamRef) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
		b.Spec.ParamRef = &ref
		return b
	}
	namespaces := namespaces{
		"team": {ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"env": "prod"}}},
		"dev":  {ObjectMeta: metav1.ObjectMeta{Name: "dev", Labels: map[string]string{"env": "dev"}}},
	}
	for _, tc := range []struct {
		name     string
		objects  []runtime.Object
		attrs    *Attributes
		authz    auth.Authorizer
		wantErr  string // substring; "" admits
		wantCode int32
		warnings []string
		wantLog  string
	}{
		{name: "no bindings admit", objects: []runtime.Object{vapTestPolicy("p", maxReplicas)},
			attrs: vapDeployment("team", "web", 10, nil)},
		{name: "passing validation", objects: []runtime.Object{vapTestPolicy("p", maxReplicas), vapTestBinding("b", "p")},
			attrs: vapDeployment("team", "web", 3, nil)},
		{name: "failing validation denies with upstream's message", objects: []runtime.Object{vapTestPolicy("p", maxReplicas), vapTestBinding("b", "p")},
			attrs:   vapDeployment("team", "web", 10, nil),
			wantErr: `deployments.apps "web" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: failed expression: object.spec.replicas <= 5`, wantCode: 422},
		{name: "message and reason", objects: []runtime.Object{vapTestPolicy("p", admissionregistrationv1.Validation{
			Expression: "object.spec.replicas <= 5", Message: "too many replicas", Reason: new(metav1.StatusReasonForbidden)}), vapTestBinding("b", "p")},
			attrs: vapDeployment("team", "web", 10, nil), wantErr: "denied request: too many replicas", wantCode: 403},
		{name: "messageExpression", objects: []runtime.Object{vapTestPolicy("p", admissionregistrationv1.Validation{
			Expression: "object.spec.replicas <= 5", Message: "static", MessageExpression: "'replicas ' + string(object.spec.replicas) + ' > 5'"}), vapTestBinding("b", "p")},
			attrs: vapDeployment("team", "web", 10, nil), wantErr: "denied request: replicas 10 > 5"},
		{name: "failing messageExpression falls back to the message", objects: []runtime.Object{vapTestPolicy("p", admissionregistrationv1.Validation{
			Expression: "object.spec.replicas <= 5", Message: "static", MessageExpression: "object.missing"}), vapTestBinding("b", "p")},
			attrs: vapDeployment("team", "web", 10, nil), wantErr: "denied request: static"},
		{name: "warn admits with a warning", objects: []runtime.Object{vapTestPolicy("p", maxReplicas), vapTestBinding("b", "p", "Warn")},
			attrs:    vapDeployment("team", "web", 10, nil),
			warnings: []string{"Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': failed expression: object.spec.replicas <= 5"}},
		{name: "audit admits and logs", objects: []runtime.Object{vapTestPolicy("p", maxReplicas), vapTestBinding("b", "p", "Audit")},
			attrs:   vapDeployment("team", "web", 10, nil),
			wantLog: `msg="ValidatingAdmissionPolicy audit" policy=p binding=b message="failed expression: object.spec.replicas <= 5"`},
		{name: "binding of a missing policy", objects: []runtime.Object{vapTestBinding("b", "gone")},
			attrs: vapDeployment("team", "web", 10, nil)},
		{name: "other resources are not matched", objects: []runtime.Object{vapTestPolicy("p", maxReplicas), vapTestBinding("b", "p")},
			attrs: &Attributes{Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, Namespace: "team",
				Object: &corev1.Pod{}}},
		{name: "deletes are not matched", objects: []runtime.Object{vapTestPolicy("p", maxReplicas), vapTestBinding("b", "p")},
			attrs: func() *Attributes {
				a := vapDeployment("team", "web", 10, nil)
				a.Operation, a.OldObject, a.Object = Delete, a.Object, nil
				return a
			}()},
		{name: "binding namespaceSelector excludes", objects: []runtime.Object{vapTestPolicy("p", maxReplicas), func() runtime.Object {
			b := vapTestBinding("b", "p")
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
			return b
		}()}, attrs: vapDeployment("dev", "web", 10, nil)},
		{name: "binding namespaceSelector includes", objects: []runtime.Object{vapTestPolicy("p", maxReplicas), func() runtime.Object {
			b := vapTestBinding("b", "p")
			b.Spec.MatchResources = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}}
			return b
		}()}, attrs: vapDeployment("team", "web", 10, nil), wantErr: "denied request"},
		{name: "objectSelector", objects: []runtime.Object{func() runtime.Object {
			p := vapTestPolicy("p", maxReplicas)
			p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"checked": "yes"}}
			return p
		}(), vapTestBinding("b", "p")}, attrs: vapDeployment("team", "web", 10, map[string]string{"checked": "no"})},
		{name: "excludeResourceRules", objects: []runtime.Object{func() runtime.Object {
			p := vapTestPolicy("p", maxReplicas)
			p.Spec.MatchConstraints.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{{ResourceNames: []string{"web"},
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"*"},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*"}}}}}
			return p
		}(), vapTestBinding("b", "p")}, attrs: vapDeployment("team", "web", 10, nil)},
		{name: "Equivalent matches another version", objects: []runtime.Object{vapHPAPolicy(admissionregistrationv1.Equivalent), vapTestBinding("b", "hpa")},
			attrs: vapHPAv1(), wantErr: "failed expression: object.metadata.name != 'web'"},
		{name: "Exact does not", objects: []runtime.Object{vapHPAPolicy(admissionregistrationv1.Exact), vapTestBinding("b", "hpa")},
			attrs: vapHPAv1()},
		{name: "matchConditions false skips", objects: []runtime.Object{func() runtime.Object {
			p := vapTestPolicy("p", maxReplicas)
			p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "not-alice", Expression: "request.userInfo.username != 'alice'"}}
			return p
		}(), vapTestBinding("b", "p")}, attrs: vapDeployment("team", "web", 10, nil)},
		{name: "params by name", objects: []runtime.Object{limits,
			withParams(vapTestPolicy("p", admissionregistrationv1.Validation{Expression: "object.spec.replicas <= int(params.data.max)"})),
			paramRef(vapTestBinding("b", "p"), admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: new(admissionregistrationv1.DenyAction)})},
			attrs: vapDeployment("team", "web", 4, nil), wantErr: "failed expression: object.spec.replicas <= int(params.data.max)"},
		{name: "params by selector", objects: []runtime.Object{limits,
			withParams(vapTestPolicy("p", admissionregistrationv1.Validation{Expression: "object.spec.replicas <= int(params.data.max)"})),
			paramRef(vapTestBinding("b", "p"), admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"kind": "limits"}},
				ParameterNotFoundAction: new(admissionregistrationv1.DenyAction)})},
			attrs: vapDeployment("team", "web", 3, nil)},
		{name: "missing params with Deny", objects: []runtime.Object{
			withParams(vapTestPolicy("p", maxReplicas)),
			paramRef(vapTestBinding("b", "p"), admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: new(admissionregistrationv1.DenyAction)})},
			attrs: vapDeployment("team", "web", 1, nil), wantErr: "no params found for policy binding with `Deny` parameterNotFoundAction"},
		{name: "missing params with Allow", objects: []runtime.Object{
			withParams(vapTestPolicy("p", maxReplicas)),
			paramRef(vapTestBinding("b", "p"), admissionregistrationv1.ParamRef{Name: "limits", ParameterNotFoundAction: new(admissionregistrationv1.AllowAction)})},
			attrs: vapDeployment("team", "web", 10, nil)},
		{name: "variables", objects: []runtime.Object{func() runtime.Object {
			p := vapTestPolicy("p", admissionregistrationv1.Validation{Expression: "variables.big ? variables.team == 'ops' : true", Message: "only ops may scale"})
			p.Spec.Variables = []admissionregistrationv1.Variable{
				{Name: "team", Expression: "object.metadata.?labels.team.orValue('none')"},
				{Name: "big", Expression: "object.spec.replicas > 5"}}
			return p
		}(), vapTestBinding("b", "p")}, attrs: vapDeployment("team", "web", 10, map[string]string{"team": "web"}), wantErr: "only ops may scale"},
		{name: "namespaceObject", objects: []runtime.Object{vapTestPolicy("p", admissionregistrationv1.Validation{
			Expression: "namespaceObject.metadata.labels.env != 'prod' || object.spec.replicas >= 2", Message: "prod needs two replicas"}), vapTestBinding("b", "p")},
			attrs: vapDeployment("team", "web", 1, nil), wantErr: "prod needs two replicas"},
		{name: "authorizer", authz: auth.AuthorizerFunc(func(a auth.Attributes) (auth.Decision, string, error) {
			if a.User.Name == "alice" && a.Verb == "scale" {
				return auth.DecisionAllow, "", nil
			}
			return auth.DecisionNoOpinion, "", nil
		}), objects: []runtime.Object{vapTestPolicy("p", admissionregistrationv1.Validation{
			Expression: "object.spec.replicas <= 5 || authorizer.group('apps').resource('deployments').namespace(object.metadata.namespace).check('scale').allowed()",
			Message:    "scaling past 5 needs the scale verb"}), vapTestBinding("b", "p")},
			attrs: vapDeployment("team", "web", 10, nil)},
		{name: "authorizer denies", objects: []runtime.Object{vapTestPolicy("p", admissionregistrationv1.Validation{
			Expression: "object.spec.replicas <= 5 || authorizer.group('apps').resource('deployments').check('scale').allowed()",
			Message:    "scaling past 5 needs the scale verb"}), vapTestBinding("b", "p")},
			attrs: vapDeployment("team", "web", 10, nil), wantErr: "scaling past 5 needs the scale verb"},
		{name: "runtime error under Fail", objects: []runtime.Object{vapTestPolicy("p", admissionregistrationv1.Validation{Expression: "object.spec.nope == 1"}), vapTestBinding("b", "p")},
			attrs: vapDeployment("team", "web", 1, nil), wantErr: "expression 'object.spec.nope == 1' resulted in error: no such key: nope"},
		{name: "runtime error under Ignore", objects: []runtime.Object{func() runtime.Object {
			p := vapTestPolicy("p", admissionregistrationv1.Validation{Expression: "object.spec.nope == 1"})
			p.Spec.FailurePolicy = new(admissionregistrationv1.Ignore)
			return p
		}(), vapTestBinding("b", "p")}, attrs: vapDeployment("team", "web", 1, nil)},
		{name: "policy that does not compile fails closed", objects: []runtime.Object{vapTestPolicy("p", admissionregistrationv1.Validation{Expression: "object.spec.replicas <"}),
			vapTestBinding("b", "p")}, attrs: vapDeployment("team", "web", 1, nil), wantErr: "failed to configure policy: spec.validations[0].expression: compilation failed"},
		{name: "cost budget", objects: []runtime.Object{vapTestPolicy("p", admissionregistrationv1.Validation{
			Expression: "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a > 0))))))"}),
			vapTestBinding("b", "p")}, attrs: vapDeployment("team", "web", 1, nil), wantErr: "cost"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs strings.Builder
			p := NewValidatingPolicy(ValidatingPolicyConfig{Objects: &vapObjects{items: tc.objects}, Namespaces: namespaces,
				Authorizer: tc.authz, Resources: vapTestResources, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			var warnings []string
			ctx := admit.WithWarnings(context.Background(), func(m string) { warnings = append(warnings, m) })
			err := p.Validate(ctx, tc.attrs)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("denied: %v", err)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("admitted, want %q", tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q, want %q", err, tc.wantErr)
			}
			if tc.wantCode != 0 {
				if se, ok := err.(*apierrors.StatusError); !ok || se.ErrStatus.Code != tc.wantCode {
					t.Errorf("error %#v, want code %d", err, tc.wantCode)
				}
			}
			if fmt.Sprint(warnings) != fmt.Sprint(tc.warnings) {
				t.Errorf("warnings %q, want %q", warnings, tc.warnings)
			}
			if !strings.Contains(logs.String(), tc.wantLog) || (tc.wantLog == "" && logs.Len() > 0) {
				t.Errorf("log %q, want %q", logs.String(), tc.wantLog)
			}
		})
	}
}

// TestValidatingPolicyCompilesOncePerGeneration: a request with nothing
// changed reuses the snapshot; a new generation recompiles.
func TestValidatingPolicyCompilesOncePerGeneration(t *testing.T) {
	pol := vapTestPolicy("p", admissionregistrationv1.Validation{Expression: "object.spec.replicas <= 5"})
	objs := &vapObjects{items: []runtime.Object{pol, vapTestBinding("b", "p")}}
	p := NewValidatingPolicy(ValidatingPolicyConfig{Objects: objs, Namespaces: namespaces{}})
	ctx := context.Background()
	if err := p.Validate(ctx, vapDeployment("team", "web", 3, nil)); err != nil {
		t.Fatal(err)
	}
	first := p.snap.policies["p"]
	if err := p.Validate(ctx, vapDeployment("team", "web", 3, nil)); err != nil {
		t.Fatal(err)
	}
	if p.snap.policies["p"] != first {
		t.Error("an unchanged cache rebuilt the snapshot")
	}
	next := pol.DeepCopy()
	next.Generation, next.ResourceVersion = 2, "12"
	next.Spec.Validations[0].Expression = "object.spec.replicas <= 2"
	objs.items[0] = next
	if err := p.Validate(ctx, vapDeployment("team", "web", 3, nil)); err == nil {
		t.Error("the new generation's validation was not applied")
	}
	// A status write changes the resourceVersion but not the generation.
	status := next.DeepCopy()
	status.ResourceVersion = "13"
	objs.items[0] = status
	before := p.compiled[next.UID]
	_ = p.Validate(ctx, vapDeployment("team", "web", 3, nil))
	if p.compiled[next.UID] != before {
		t.Error("a status-only change recompiled the policy")
	}
}

// BenchmarkValidatingPolicy is the plugin's own cost on one pod create
// with five bound policies that pass, without the API server around it.
func BenchmarkValidatingPolicy(b *testing.B) {
	var objs []runtime.Object
	for i, rule := range []string{
		"object.spec.containers.all(c, !c.image.endsWith(':latest'))",
		"!has(object.spec.hostNetwork) || !object.spec.hostNetwork",
		"object.metadata.name.size() < 64",
		"object.spec.containers.size() <= 10",
		"object.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)",
	} {
		name := fmt.Sprintf("p%d", i)
		pol := vapTestPolicy(name, admissionregistrationv1.Validation{Expression: rule})
		pol.Spec.MatchConstraints.ResourceRules[0].Rule = admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}
		objs = append(objs, pol, vapTestBinding(name, name))
	}
	p := NewValidatingPolicy(ValidatingPolicyConfig{Objects: &vapObjects{items: objs}, Namespaces: namespaces{}})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}, ServiceAccountName: "default"}}
	a := &Attributes{Operation: Create, Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: corev1.SchemeGroupVersion.WithResource("pods"),
		Namespace: "default", Name: "web", Object: pod, User: &auth.User{Name: "alice"}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Validate(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}
