package server

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
)

// helmVersion is the helm 3 release the test installs when no helm is
// found: `go install helm.sh/helm/v3/cmd/helm@<helmVersion>`, the way
// scripts/test.sh installs it before the suite runs.
const helmVersion = "v3.21.4"

// TestHelm runs a chart's whole life through the real helm binary: install
// with --wait, upgrade, rollback and uninstall, on a cluster with the
// scheduler, the controllers and simulated nodes. The chart
// (testdata/helm/demo) has a Deployment, Service, ConfigMap, Secret, a CRD
// in crds/ and a custom resource of it in templates/, so helm exercises
// what it relies on: discovery refreshed after the CRD is Established,
// release records in Secrets, three-way strategic merge patches for the
// built-in kinds and JSON merge patches for the custom one, and readiness
// of the Deployment for --wait.
func TestHelm(t *testing.T) {
	helm := helmBinary(t)
	srv, rc := startTestServer(t, Config{SimulatedNodes: 3, Controllers: []string{"*"}})
	cs := kubernetes.NewForConfigOrDie(rc)
	dyn := dynamic.NewForConfigOrDie(rc)
	home := t.TempDir()
	chart := filepath.Join("testdata", "helm", "demo")
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, helm, args...)
		cmd.Env = []string{"KUBECONFIG=" + srv.Kubeconfig, "HOME=" + home, "PATH=" + os.Getenv("PATH"),
			"HELM_CACHE_HOME=" + filepath.Join(home, "cache"), "HELM_CONFIG_HOME=" + filepath.Join(home, "config"),
			"HELM_DATA_HOME=" + filepath.Join(home, "data")}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	widgets := dyn.Resource(schema.GroupVersionResource{Group: "demo.rudder.dev", Version: "v1", Resource: "widgets"}).Namespace("default")
	ctx := context.Background()
	// expect checks what a release revision put in the cluster.
	expect := func(t *testing.T, replicas int32, greeting, size string) {
		t.Helper()
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "demo-web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != replicas || d.Status.ReadyReplicas != replicas {
			t.Errorf("deployment: spec.replicas %d, ready %d; want %d", *d.Spec.Replicas, d.Status.ReadyReplicas, replicas)
		}
		cm, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "demo-config", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if cm.Data["greeting"] != greeting {
			t.Errorf("configmap greeting %q, want %q", cm.Data["greeting"], greeting)
		}
		sec, err := cs.CoreV1().Secrets("default").Get(ctx, "demo-secret", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(sec.Data["password"]) != greeting {
			t.Errorf("secret password %q, want %q", sec.Data["password"], greeting)
		}
		if _, err := cs.CoreV1().Services("default").Get(ctx, "demo-web", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
		w, err := widgets.Get(ctx, "demo-widget", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(w.Object, "spec", "size"); got != size {
			t.Errorf("widget size %q, want %q", got, size)
		}
	}

	t.Run("install", func(t *testing.T) {
		out := run(t, "install", "demo", chart, "--wait", "--timeout", "90s")
		if !strings.Contains(out, "STATUS: deployed") {
			t.Fatalf("install output lacks STATUS: deployed:\n%s", out)
		}
		expect(t, 2, "hello", "small")
		k := kubectlFor(t, srv.Kubeconfig)
		tbls := parseTables(k.ok(t, "get", "widgets"))
		if len(tbls) != 1 {
			t.Fatalf("kubectl get widgets: want one table, got %d", len(tbls))
		}
		checkTable(t, tbls[0], cols("NAME|SIZE"), "NAME", "demo-widget", map[string]string{"SIZE": "small"})
	})
	t.Run("upgrade", func(t *testing.T) {
		run(t, "upgrade", "demo", chart, "--wait", "--timeout", "90s", "--set", "replicas=3,greeting=bye,size=large")
		expect(t, 3, "bye", "large")
	})
	t.Run("rollback", func(t *testing.T) {
		run(t, "rollback", "demo", "1", "--wait", "--timeout", "90s")
		eventually(t, 30*time.Second, "deployment back to 2 ready replicas", func() (bool, error) {
			d, err := cs.AppsV1().Deployments("default").Get(ctx, "demo-web", metav1.GetOptions{})
			return err == nil && d.Status.ReadyReplicas == 2 && d.Status.Replicas == 2, err
		})
		expect(t, 2, "hello", "small")
		hist := run(t, "history", "demo")
		for _, want := range []string{"superseded", "deployed", "Rollback to 1"} {
			if !strings.Contains(hist, want) {
				t.Errorf("helm history lacks %q:\n%s", want, hist)
			}
		}
	})
	t.Run("uninstall", func(t *testing.T) {
		run(t, "uninstall", "demo", "--wait")
		if _, err := widgets.Get(ctx, "demo-widget", metav1.GetOptions{}); err == nil {
			t.Error("widget still there after uninstall")
		}
		for _, get := range []func() error{
			func() error {
				_, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "demo-config", metav1.GetOptions{})
				return err
			},
			func() error {
				_, err := cs.AppsV1().Deployments("default").Get(ctx, "demo-web", metav1.GetOptions{})
				return err
			},
		} {
			if get() == nil {
				t.Error("release object still there after uninstall")
			}
		}
		// helm keeps the release records of an uninstalled release only
		// with --keep-history; here they go too.
		secs, err := cs.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=demo"})
		if err != nil {
			t.Fatal(err)
		}
		if len(secs.Items) != 0 {
			t.Errorf("%d release records left after uninstall", len(secs.Items))
		}
		if out := run(t, "list", "-q"); strings.TrimSpace(out) != "" {
			t.Errorf("helm list after uninstall: %q", out)
		}
	})
}

// helmBinary finds helm ($HELM, PATH, then GOPATH/bin) or installs the
// pinned release with `go install`, as scripts/test.sh does.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("HELM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	gobin := os.Getenv("GOBIN")
	if gobin == "" {
		out, err := exec.Command("go", "env", "GOPATH").Output()
		if err != nil {
			t.Fatalf("go env GOPATH: %v", err)
		}
		gobin = filepath.Join(strings.TrimSpace(string(out)), "bin")
	}
	p := filepath.Join(gobin, "helm")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	t.Logf("installing helm %s with go install (minutes on a fresh machine)", helmVersion)
	cmd := exec.Command("go", "install", "helm.sh/helm/v3/cmd/helm@"+helmVersion)
	cmd.Dir = t.TempDir() // outside this module: helm's own go.mod decides its dependencies
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go install helm: %v\n%s", err, out)
	}
	return p
}
