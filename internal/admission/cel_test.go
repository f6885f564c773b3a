package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/cel"
)

func TestCELEvaluate(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "team", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx",
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}}}}}}
	old := pod.DeepCopy()
	old.Labels = nil
	a := &Attributes{Operation: Update, Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: corev1.SchemeGroupVersion.WithResource("pods"),
		Namespace: "team", Name: "web", Object: pod, OldObject: old,
		User: &auth.User{Name: "alice", Groups: []string{"dev", "system:authenticated"}}}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", Labels: map[string]string{"env": "prod"}}}
	params := &corev1.ConfigMap{Data: map[string]string{"max": "2Gi"}}
	act := NewCELActivation(context.Background(), a, CELActivationConfig{Namespace: ns, Params: params})
	for _, expr := range []string{
		"object.kind == 'Pod' && object.apiVersion == 'v1'",
		"object.metadata.labels.app == 'web' && !has(oldObject.metadata.labels)",
		"quantity(object.spec.containers[0].resources.limits.memory).isLessThan(quantity(params.data.max))",
		"request.operation == 'UPDATE' && request.userInfo.username == 'alice' && 'dev' in request.userInfo.groups",
		"request.resource.resource == 'pods' && request.kind.kind == 'Pod' && request.namespace == 'team' && request.name == 'web'",
		"namespaceObject.metadata.labels.env == 'prod'",
		"variables.size() == 0",
	} {
		t.Run(expr, func(t *testing.T) {
			prog, err := cel.Compile(expr, cel.Bool, cel.Decls{Params: true})
			if err != nil {
				t.Fatal(err)
			}
			ok, cost, err := prog.EvalBool(context.Background(), act)
			if err != nil || !ok {
				t.Fatalf("= %v, %v", ok, err)
			}
			if cost <= 0 {
				t.Errorf("cost %d, want it tracked", cost)
			}
		})
	}

	t.Run("variables are lazy and evaluated once", func(t *testing.T) {
		broken, _ := cel.Compile("object.spec.nope", cel.Any, cel.Decls{})
		name, _ := cel.Compile("object.metadata.name", cel.Any, cel.Decls{})
		vars := act.WithVariables([]string{"broken", "name"}, []*cel.Program{broken, name})
		prog, _ := cel.Compile("variables.name == 'web'", cel.Bool, cel.Decls{Variables: []string{"broken", "name"}})
		if ok, _, err := prog.EvalBool(context.Background(), vars); err != nil || !ok {
			t.Fatalf("= %v, %v: an unused broken variable must not fail", ok, err)
		}
		uses, _ := cel.Compile("variables.broken == 1", cel.Bool, cel.Decls{Variables: []string{"broken", "name"}})
		if _, _, err := uses.EvalBool(context.Background(), vars); err == nil || !strings.Contains(err.Error(), "no such key: nope") {
			t.Fatalf("error %v, want the variable's", err)
		}
		if vars.VariablesCost() <= 0 {
			t.Error("variables' cost not counted")
		}
	})

	t.Run("per-call cost limit", func(t *testing.T) {
		prog, err := cel.Compile("[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, "+
			"[1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a > 0))))))", cel.Bool, cel.Decls{})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := prog.EvalBool(context.Background(), act); err == nil || !strings.Contains(err.Error(), "cost limit exceeded") {
			t.Fatalf("error %v, want the cost limit", err)
		}
	})

	t.Run("a dyn result of the wrong type", func(t *testing.T) {
		prog, _ := cel.Compile("object.metadata.name", cel.Bool, cel.Decls{})
		if _, _, err := prog.EvalBool(context.Background(), act); err == nil || !strings.Contains(err.Error(), "must evaluate to bool") {
			t.Fatalf("error %v", err)
		}
	})
}
