package admission

import (
	"context"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/apiserver/openapi"
	"github.com/rudder-dev/rudder/internal/cel"
)

// testTypes are the built-in kinds' CEL types, as the server wires them.
var testTypes = cel.NewTypes(openapi.Schemas)

func TestValidatingPolicyTypeCheck(t *testing.T) {
	p := NewValidatingPolicy(ValidatingPolicyConfig{Resources: []ResourceKind{
		{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment", Namespaced: true},
		{Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Kind: "ConfigMap", Namespaced: true},
	}, Types: testTypes})
	for _, tc := range []struct {
		name     string
		mutate   func(*admissionregistrationv1.ValidatingAdmissionPolicy)
		expr     string
		want     []string // fieldRef: warning substring
		noChecks bool
	}{
		{name: "well typed", expr: "object.spec.replicas <= 5 && object.metadata.name.startsWith('web')"},
		{name: "misspelt field", expr: "object.spec.replica <= 5",
			want: []string{"spec.validations[0].expression: apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'"}},
		{name: "wrong type", expr: "object.spec.replicas == 'five'",
			want: []string{"spec.validations[0].expression: apps/v1, Kind=Deployment: ERROR: <input>:1:22: found no matching overload for '_==_' applied to '(int, string)'"}},
		{name: "typed params", expr: "object.spec.replicas <= int(params.data.max) && params.nope",
			mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
				p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			}, want: []string{"spec.validations[0].expression: apps/v1, Kind=Deployment: ERROR: <input>:1:55: undefined field 'nope'"}},
		{name: "wildcards are not checked", expr: "object.spec.replica <= 5", mutate: func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
			p.Spec.MatchConstraints.ResourceRules[0].Resources = []string{"*"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := vapTestPolicy("p", admissionregistrationv1.Validation{Expression: tc.expr})
			if tc.mutate != nil {
				tc.mutate(pol)
			}
			got := p.typeCheck(pol)
			if len(got) != len(tc.want) {
				t.Fatalf("warnings %v, want %v", got, tc.want)
			}
			for i, w := range got {
				if s := w.FieldRef + ": " + w.Warning; !strings.HasPrefix(s, tc.want[i]) {
					t.Errorf("warning %q, want it to start with %q", s, tc.want[i])
				}
			}
		})
	}
}

// TestValidatingPolicyTypeCheckWritesStatus: the loop writes warnings and
// observedGeneration once per generation.
func TestValidatingPolicyTypeCheckWritesStatus(t *testing.T) {
	pol := vapTestPolicy("p", admissionregistrationv1.Validation{Expression: "object.spec.replica <= 5"})
	status := &vapStatusRecorder{}
	p := NewValidatingPolicy(ValidatingPolicyConfig{Objects: &vapObjects{items: []runtime.Object{pol}}, Status: status,
		Resources: []ResourceKind{{Resource: appsv1.SchemeGroupVersion.WithResource("deployments"), Kind: "Deployment", Namespaced: true}}, Types: testTypes})
	p.typeCheckOnce(t.Context())
	if len(status.written) != 1 {
		t.Fatalf("%d status writes, want 1", len(status.written))
	}
	w := status.written[0].(*admissionregistrationv1.ValidatingAdmissionPolicy)
	if w.Status.ObservedGeneration != 1 || w.Status.TypeChecking == nil || len(w.Status.TypeChecking.ExpressionWarnings) != 1 {
		t.Fatalf("status %+v", w.Status)
	}
	if pol.Status.TypeChecking != nil {
		t.Error("the cached policy was modified")
	}
	// Once observed, the generation is not checked again.
	p.cfg.Objects = &vapObjects{items: []runtime.Object{w}}
	p.typeCheckOnce(t.Context())
	if len(status.written) != 1 {
		t.Errorf("%d status writes, want still 1", len(status.written))
	}
}

type vapStatusRecorder struct{ written []runtime.Object }

func (s *vapStatusRecorder) UpdateObjectStatus(_ context.Context, _ schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	s.written = append(s.written, obj)
	return obj, nil
}
