package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKubectlAPIFidelity is the API-fidelity session a user runs, one
// command after another on one cluster with the controllers: client-side
// apply under kubectl's default strict validation, server-side apply with
// a conflict and --force-conflicts, diff, edit, the three patch types,
// explain, api-resources, auth can-i / whoami, create token, scale, and a
// CRD with a custom resource and its printer columns. Each step checks
// what kubectl prints, as it prints it against Kubernetes.
func TestKubectlAPIFidelity(t *testing.T) {
	srv, _ := startTestServer(t, Config{SimulatedNodes: 2, Controllers: []string{"*"}})
	k := kubectlFor(t, srv.Kubeconfig)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	app := write("app.yaml", deploymentYAML("web", "nginx:1.27", 2))
	appNewImage := write("app2.yaml", deploymentYAML("web", "nginx:1.28", 2))
	unknownField := write("bad.yaml", `apiVersion: v1
kind: ConfigMap
metadata:
  name: bad
data:
  a: b
bogus: true
`)
	// kubectl edit runs $KUBE_EDITOR on a temporary file holding the
	// object; this "editor" changes the replicas in place.
	editor := write("editor.sh", "#!/bin/sh\nsed -i 's/^  replicas: .*/  replicas: 4/' \"$1\"\n")
	if err := os.Chmod(editor, 0o755); err != nil {
		t.Fatal(err)
	}
	crd := write("crd.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              color: {type: string}
    additionalPrinterColumns:
    - {name: Color, type: string, jsonPath: .spec.color}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
`)
	widget := write("widget.yaml", "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\nspec:\n  color: blue\n")

	k.runSteps(t, []step{
		{name: "apply", args: []string{"apply", "-f", app}, out: "deployment.apps/web created"},
		{name: "strict validation refuses an unknown field", args: []string{"apply", "-f", unknownField}, code: 1,
			errHas: []string{`unknown field "bogus"`}},
		{name: "diff shows the new image and exits 1", args: []string{"diff", "-f", appNewImage}, code: 1,
			outHas: []string{"-      - image: nginx:1.27", "+      - image: nginx:1.28"}},
		// kubectl moves the fields client-side apply owned to its
		// server-side manager (csaupgrade), so the switch is no conflict.
		{name: "server-side apply after client-side apply", args: []string{"apply", "--server-side", "-f", appNewImage}, out: "deployment.apps/web serverside-applied"},
		{name: "another manager takes the replicas", args: []string{"patch", "deploy/web", "--type=merge", "--field-manager=autoscaler", "-p", `{"spec":{"replicas":3}}`},
			out: "deployment.apps/web patched"},
		{name: "apply conflicts, naming the manager", args: []string{"apply", "--server-side", "-f", appNewImage}, code: 1,
			errHas: []string{"Apply failed with 1 conflict", `conflict with "autoscaler" using apps/v1: .spec.replicas`}},
		{name: "--force-conflicts", args: []string{"apply", "--server-side", "--force-conflicts", "-f", appNewImage}, out: "deployment.apps/web serverside-applied"},
		{name: "managed fields name the manager", args: []string{"get", "deploy/web", "--show-managed-fields", "-o", "jsonpath={.metadata.managedFields[*].manager}"},
			outHas: []string{"kubectl"}},
		{name: "strategic patch", args: []string{"patch", "deploy/web", "--type=strategic", "-p", `{"metadata":{"labels":{"tier":"front"}}}`}, out: "deployment.apps/web patched"},
		{name: "merge patch", args: []string{"patch", "deploy/web", "--type=merge", "-p", `{"metadata":{"annotations":{"note":"merged"}}}`}, out: "deployment.apps/web patched"},
		{name: "json patch", args: []string{"patch", "deploy/web", "--type=json", "-p", `[{"op":"replace","path":"/spec/revisionHistoryLimit","value":3}]`}, out: "deployment.apps/web patched"},
		{name: "the patches landed", args: []string{"get", "deploy/web", "-o", "jsonpath={.metadata.labels.tier} {.metadata.annotations.note} {.spec.revisionHistoryLimit}"}, out: "front merged 3"},
		{name: "json patch test failure", args: []string{"patch", "deploy/web", "--type=json", "-p", `[{"op":"test","path":"/spec/replicas","value":9}]`}, code: 1,
			// Upstream answers a failed test op with a bare 422 and the
			// detail in the Status's causes.
			errHas: []string{"The request is invalid: the server rejected our request due to an error in our request"}},
		{name: "scale", args: []string{"scale", "deploy/web", "--replicas=5"}, out: "deployment.apps/web scaled"},
		{name: "scaled", args: []string{"get", "deploy/web", "-o", "jsonpath={.spec.replicas}"}, out: "5"},
		{name: "explain", args: []string{"explain", "deployment.spec.strategy"}, outHas: []string{"KIND:       Deployment", "FIELD: strategy <DeploymentStrategy>", "rollingUpdate", "type"}},
		{name: "api-resources", args: []string{"api-resources"}, outHas: []string{"deployments", "deploy", "apps/v1", "horizontalpodautoscalers", "customresourcedefinitions", "validatingadmissionpolicies"}},
		{name: "auth can-i as admin", args: []string{"auth", "can-i", "create", "pods"}, out: "yes"},
		{name: "auth can-i as jane", args: []string{"auth", "can-i", "create", "pods", "--as=jane"}, code: 1, out: "no"},
		{name: "auth whoami", args: []string{"auth", "whoami", "-o", "jsonpath={.status.userInfo.groups}"}, outHas: []string{"system:masters"}},
		{name: "crd", args: []string{"apply", "-f", crd}, out: "customresourcedefinition.apiextensions.k8s.io/widgets.example.com created"},
		{name: "wait established", args: []string{"wait", "--for=condition=Established", "crd/widgets.example.com", "--timeout=20s"},
			out: "customresourcedefinition.apiextensions.k8s.io/widgets.example.com condition met"},
		{name: "custom resource", args: []string{"apply", "-f", widget}, out: "widget.example.com/w1 created"},
		{name: "get widgets", args: []string{"get", "widgets"}, check: tableCheck("NAME|COLOR|AGE", "w1", map[string]string{"COLOR": "blue"})},
		{name: "explain widget", args: []string{"explain", "widget.spec.color"}, outHas: []string{"KIND:       Widget", "FIELD: color <string>"}},
	})

	t.Run("edit", func(t *testing.T) {
		k.Env = append(k.Env, "KUBE_EDITOR="+editor)
		k.runSteps(t, []step{
			{name: "edit", args: []string{"edit", "deploy/web"}, out: "deployment.apps/web edited"},
			{name: "edited", args: []string{"get", "deploy/web", "-o", "jsonpath={.spec.replicas}"}, out: "4"},
		})
	})
	t.Run("create token", func(t *testing.T) {
		// The serviceaccount controller makes "default"; a token for it is
		// a JWT the server then accepts.
		eventually(t, kubectlTimeout, "default service account", func() (bool, error) {
			return k.run(t, "", "get", "sa", "default").code == 0, nil
		})
		tok := strings.TrimSpace(k.ok(t, "create", "token", "default", "--duration=10m"))
		if strings.Count(tok, ".") != 2 {
			t.Fatalf("not a JWT: %q", tok)
		}
		empty := write("empty.kubeconfig", "apiVersion: v1\nkind: Config\n")
		who := k.ok(t, "--kubeconfig="+empty, "--server="+srv.URL, "--insecure-skip-tls-verify", "--token="+tok,
			"auth", "whoami", "-o", "jsonpath={.status.userInfo.username}")
		if who != "system:serviceaccount:default:default" {
			t.Errorf("whoami with the token: %q", who)
		}
	})
}
