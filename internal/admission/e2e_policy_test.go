package admission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// The example: a CEL policy and its binding applied with kubectl;
// parameters from a ConfigMap; the namespace's labels; the authorizer.
const e2ePolicyYAML = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: replica-limit
spec:
  failurePolicy: Fail
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["deployments"]
  variables:
  - name: max
    expression: "int(params.data.maxReplicas)"
  validations:
  - expression: "object.spec.replicas <= variables.max"
    messageExpression: "'replicas must be no greater than ' + string(variables.max)"
  - expression: "namespaceObject.metadata.?labels.env.orValue('') != 'prod' || object.spec.replicas >= 2"
    message: "production deployments need at least two replicas"
    reason: Forbidden
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: replica-limit-binding
spec:
  policyName: replica-limit
  validationActions: [Deny]
  paramRef:
    name: replica-limits
    namespace: default
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchExpressions:
      - {key: policy, operator: NotIn, values: ["off"]}
`

const e2eWarnPolicyYAML = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: team-label
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: ["apps"]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["deployments"]
  validations:
  - expression: "has(object.metadata.labels) && 'team' in object.metadata.labels"
    message: "deployments should have a team label"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: team-label-warn
spec:
  policyName: team-label
  validationActions: [Warn, Audit]
`

const e2eAuthzPolicyYAML = `
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: protected-configmaps
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE"]
      resources: ["configmaps"]
  matchConditions:
  - name: protected
    expression: "object.metadata.?labels.protected.orValue('') == 'true'"
  validations:
  - expression: "authorizer.group('').resource('configmaps').namespace(object.metadata.namespace).check('delete').allowed()"
    message: "only users who may delete configmaps may create protected ones"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: protected-configmaps
spec:
  policyName: protected-configmaps
  validationActions: [Deny]
`

func e2eDeployment(name string, replicas int, labels string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
  labels: {` + labels + `}
spec:
  replicas: ` + string(rune('0'+replicas)) + `
  selector: {matchLabels: {app: ` + name + `}}
  template:
    metadata: {labels: {app: ` + name + `}}
    spec: {containers: [{name: c, image: nginx}]}
`
}

func TestValidatingAdmissionPolicyWithKubectl(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	k := newE2EKubectl(t, c.Server.Kubeconfig)
	ctx := context.Background()

	t.Run("a policy that does not compile is refused", func(t *testing.T) {
		bad := strings.Replace(e2ePolicyYAML, "object.spec.replicas <= variables.max", "object.spec.replicas <=", 1)
		bad = bad[:strings.Index(bad, "---")]
		_, stderr, ok := k.run(t, bad, "apply", "-f", "-")
		want := `The ValidatingAdmissionPolicy "replica-limit" is invalid: spec.validations[0].expression: Invalid value: "object.spec.replicas <=": compilation failed: ERROR: <input>:1:`
		if ok || !strings.Contains(stderr, want) {
			t.Fatalf("ok=%v stderr:\n%s\nwant it to contain:\n%s", ok, stderr, want)
		}
	})

	k.ok(t, "", "create", "configmap", "replica-limits", "-n", "default", "--from-literal=maxReplicas=3")
	k.ok(t, e2ePolicyYAML, "apply", "-f", "-")
	stdout, _, _ := k.run(t, "", "get", "validatingadmissionpolicies")
	if !strings.Contains(stdout, "replica-limit   2             v1/ConfigMap") {
		t.Errorf("kubectl get validatingadmissionpolicies:\n%s", stdout)
	}

	// applyUntil retries while the binding may not be in the server's
	// cache yet, as a client of upstream sees while its informer syncs.
	applyUntil := func(t *testing.T, yaml, ns string, wantOK bool, args ...string) (string, string) {
		t.Helper()
		var stdout, stderr string
		var ok bool
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			stdout, stderr, ok = k.run(t, yaml, append([]string{"create", "-n", ns, "-f", "-"}, args...)...)
			if ok == wantOK {
				return stdout, stderr
			}
			if ok {
				// Created before the policy applied: remove and retry.
				k.run(t, yaml, "delete", "-n", ns, "-f", "-")
			}
		}
		t.Fatalf("kubectl create ok=%v, want %v\nstdout: %s\nstderr: %s", ok, wantOK, stdout, stderr)
		return "", ""
	}

	t.Run("violating objects are rejected with the policy's message", func(t *testing.T) {
		_, stderr := applyUntil(t, e2eDeployment("big", 5, ""), "default", false)
		want := `The deployments "big" is invalid: : ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: replicas must be no greater than 3`
		if !strings.Contains(stderr, want) {
			t.Fatalf("stderr:\n%s\nwant:\n%s", stderr, want)
		}
		if _, err := c.Client.AppsV1().Deployments("default").Get(ctx, "big", metav1.GetOptions{}); err == nil {
			t.Fatal("the rejected deployment was stored")
		}
		k.ok(t, e2eDeployment("small", 2, ""), "create", "-n", "default", "-f", "-")
	})

	t.Run("params change without touching the policy", func(t *testing.T) {
		k.ok(t, "", "patch", "configmap", "replica-limits", "-n", "default", "-p", `{"data":{"maxReplicas":"6"}}`)
		applyUntil(t, e2eDeployment("big", 5, ""), "default", true)
	})

	t.Run("namespaceObject and reason", func(t *testing.T) {
		k.ok(t, "", "create", "namespace", "prod")
		k.ok(t, "", "label", "namespace", "prod", "env=prod")
		_, stderr := applyUntil(t, e2eDeployment("single", 1, ""), "prod", false)
		want := `deployments.apps "single" is forbidden: ValidatingAdmissionPolicy 'replica-limit' with binding 'replica-limit-binding' denied request: production deployments need at least two replicas`
		if !strings.Contains(stderr, want) || !strings.Contains(stderr, "(Forbidden)") {
			t.Fatalf("stderr:\n%s\nwant a Forbidden with:\n%s", stderr, want)
		}
		// The binding's namespaceSelector leaves this namespace out.
		k.ok(t, "", "label", "namespace", "prod", "policy=off")
		applyUntil(t, e2eDeployment("single", 1, ""), "prod", true)
	})

	t.Run("Warn admits and prints a warning", func(t *testing.T) {
		k.ok(t, e2eWarnPolicyYAML, "apply", "-f", "-")
		want := `Warning: Validation failed for ValidatingAdmissionPolicy 'team-label' with binding 'team-label-warn': deployments should have a team label`
		var stderr string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			var ok bool
			_, stderr, ok = k.run(t, e2eDeployment("unlabelled", 2, ""), "create", "-n", "default", "-f", "-")
			if !ok {
				t.Fatalf("the deployment was refused: %s", stderr)
			}
			if strings.Contains(stderr, want) {
				break
			}
			k.ok(t, e2eDeployment("unlabelled", 2, ""), "delete", "-n", "default", "-f", "-")
		}
		if !strings.Contains(stderr, want) {
			t.Fatalf("stderr:\n%s\nwant:\n%s", stderr, want)
		}
		_, stderr, _ = k.run(t, e2eDeployment("labelled", 2, "team: web"), "create", "-n", "default", "-f", "-")
		if strings.Contains(stderr, "Warning") {
			t.Errorf("a labelled deployment warned: %s", stderr)
		}
	})

	t.Run("authorizer", func(t *testing.T) {
		k.ok(t, e2eAuthzPolicyYAML, "apply", "-f", "-")
		k.ok(t, "", "create", "role", "cm-writer", "-n", "default", "--verb=create,get", "--resource=configmaps")
		k.ok(t, "", "create", "rolebinding", "bob-writes", "-n", "default", "--role=cm-writer", "--user=bob")
		protected := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: guarded, labels: {protected: \"true\"}}\n"
		_, stderr := applyUntil(t, protected, "default", false, "--as=bob")
		want := "ValidatingAdmissionPolicy 'protected-configmaps' with binding 'protected-configmaps' denied request: only users who may delete configmaps may create protected ones"
		if !strings.Contains(stderr, want) {
			t.Fatalf("stderr:\n%s\nwant:\n%s", stderr, want)
		}
		// matchConditions: an unprotected one is not judged.
		k.ok(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n", "create", "-n", "default", "-f", "-", "--as=bob")
		k.ok(t, "", "create", "role", "cm-deleter", "-n", "default", "--verb=delete", "--resource=configmaps")
		k.ok(t, "", "create", "rolebinding", "bob-deletes", "-n", "default", "--role=cm-deleter", "--user=bob")
		applyUntil(t, protected, "default", true, "--as=bob")
	})

	t.Run("type checking warnings in the status", func(t *testing.T) {
		k.ok(t, `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: typo}
spec:
  matchConstraints:
    resourceRules:
    - {apiGroups: [apps], apiVersions: [v1], operations: [CREATE], resources: [deployments]}
  validations:
  - expression: "object.spec.replica > 0"
`, "apply", "-f", "-")
		want := "apps/v1, Kind=Deployment: ERROR: <input>:1:12: undefined field 'replica'"
		var out string
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			out, _, _ = k.run(t, "", "get", "validatingadmissionpolicy", "typo", "-o",
				`jsonpath={.status.observedGeneration} {.status.typeChecking.expressionWarnings[0].fieldRef} {.status.typeChecking.expressionWarnings[0].warning}`)
			if strings.HasPrefix(out, "1 spec.validations[0].expression "+want) {
				break
			}
		}
		if !strings.HasPrefix(out, "1 spec.validations[0].expression "+want) {
			t.Fatalf("status: %q\nwant it to start with %q", out, "1 spec.validations[0].expression "+want)
		}
		// A well-typed policy is observed with no warnings.
		out, _, _ = k.run(t, "", "get", "validatingadmissionpolicy", "replica-limit", "-o",
			`jsonpath={.status.observedGeneration}/{.status.typeChecking.expressionWarnings}`)
		if out != "1/" {
			t.Errorf("replica-limit status: %q, want observed generation 1 and no warnings", out)
		}
	})
}
