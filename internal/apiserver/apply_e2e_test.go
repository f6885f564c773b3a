package apiserver_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestServerSideApplyKubectl drives server-side apply with kubectl against
// a real cluster: what a user types and reads, including kubectl's own
// wording of a conflict, the migration from client-side apply, and diff.
func TestServerSideApplyKubectl(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	k := ssaKubectl{t: t, kubeconfig: c.Server.Kubeconfig, dir: t.TempDir()}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	deploy := func(replicas, image string) string {
		return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: ` + replicas + `
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: ` + image + `
`
	}

	t.Run("apply --server-side creates and records an Apply entry", func(t *testing.T) {
		out := k.must("apply", "--server-side", "-f", k.file("web.yaml", deploy("2", "nginx:1.27")))
		if !strings.Contains(out, "deployment.apps/web serverside-applied") {
			t.Errorf("output %q", out)
		}
		yaml := k.must("get", "deploy", "web", "-o", "yaml", "--show-managed-fields")
		for _, want := range []string{"managedFields:", "manager: kubectl", "operation: Apply", "f:replicas: {}"} {
			if !strings.Contains(yaml, want) {
				t.Errorf("get -o yaml --show-managed-fields lacks %q:\n%s", want, yaml)
			}
		}
		if plain := k.must("get", "deploy", "web", "-o", "yaml"); strings.Contains(plain, "managedFields") {
			t.Errorf("managedFields shown without --show-managed-fields")
		}
	})
	t.Run("a conflict names the other manager", func(t *testing.T) {
		_, stderr, err := k.run("apply", "--server-side", "--field-manager=deployer", "-f", k.file("web3.yaml", deploy("3", "nginx:1.27")))
		if err == nil {
			t.Fatal("conflicting apply succeeded")
		}
		for _, want := range []string{`Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas`, "--force-conflicts"} {
			if !strings.Contains(stderr, want) {
				t.Errorf("stderr lacks %q:\n%s", want, stderr)
			}
		}
	})
	t.Run("--force-conflicts takes the field", func(t *testing.T) {
		k.must("apply", "--server-side", "--field-manager=deployer", "--force-conflicts", "-f", k.file("web3.yaml", deploy("3", "nginx:1.27")))
		d, err := c.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *d.Spec.Replicas != 3 {
			t.Errorf("replicas %d after a forced apply", *d.Spec.Replicas)
		}
		for _, e := range d.ManagedFields {
			if e.Manager == "kubectl" && strings.Contains(string(e.FieldsV1.Raw), `"f:replicas"`) {
				t.Errorf("kubectl still owns spec.replicas: %s", e.FieldsV1.Raw)
			}
		}
	})
	t.Run("diff shows what an apply would change, and changes nothing", func(t *testing.T) {
		out, stderr, err := k.run("diff", "--server-side", "--force-conflicts", "--field-manager=deployer", "-f", k.file("web4.yaml", deploy("3", "nginx:1.28")))
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("diff: %v (want exit 1, differences found)\n%s\n%s", err, out, stderr)
		}
		if !strings.Contains(out, "\n-      - image: nginx:1.27\n") || !strings.Contains(out, "\n+      - image: nginx:1.28\n") {
			t.Errorf("diff output:\n%s", out)
		}
		d, err := c.Client.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.27" {
			t.Errorf("diff changed the image to %s", img)
		}
	})
	t.Run("client-side apply, then server-side", func(t *testing.T) {
		cm := func(v string) string {
			return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: default\ndata:\n  mode: " + v + "\n"
		}
		k.must("apply", "-f", k.file("cm1.yaml", cm("a")))
		out := k.must("apply", "--server-side", "-f", k.file("cm2.yaml", cm("b")))
		if !strings.Contains(out, "configmap/settings serverside-applied") {
			t.Errorf("output %q", out)
		}
		got, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Data["mode"] != "b" {
			t.Errorf("data %v after the server-side apply", got.Data)
		}
		var applier bool
		for _, e := range got.ManagedFields {
			if e.Manager == "kubectl" && e.Operation == metav1.ManagedFieldsOperationApply && strings.Contains(string(e.FieldsV1.Raw), `"f:mode"`) {
				applier = true
			}
		}
		if !applier {
			t.Errorf("kubectl's Apply entry does not own data.mode: %+v", got.ManagedFields)
		}
	})
}

// TestServerSideApplyClientGo applies with client-go's typed apply
// configurations, and reads back what its manager owns with the extract
// helpers, which read managedFields on the client.
func TestServerSideApplyClientGo(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := c.Client.CoreV1().ConfigMaps("default")
	opts := metav1.ApplyOptions{FieldManager: "settings-controller"}
	cfg := applycorev1.ConfigMap("settings", "default").WithLabels(map[string]string{"team": "a"}).WithData(map[string]string{"mode": "fast"})
	if _, err := cms.Apply(ctx, cfg, opts); err != nil {
		t.Fatal(err)
	}
	// Another writer adds a key; it is not the controller's.
	if _, err := cms.Patch(ctx, "settings", types.MergePatchType, []byte(`{"data":{"extra":"1"}}`), metav1.PatchOptions{FieldManager: "human"}); err != nil {
		t.Fatal(err)
	}
	live, err := cms.Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owned, err := applycorev1.ExtractConfigMap(live, "settings-controller")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(owned.Data, map[string]string{"mode": "fast"}) || owned.Labels["team"] != "a" {
		t.Errorf("extracted %+v %+v, want only what the controller applied", owned.Data, owned.Labels)
	}
	// Applying without the key it no longer wants removes it; the other
	// writer's key stays.
	if _, err := cms.Apply(ctx, applycorev1.ConfigMap("settings", "default").WithLabels(map[string]string{"team": "a"}), opts); err != nil {
		t.Fatal(err)
	}
	live, err = cms.Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(live.Data, map[string]string{"extra": "1"}) {
		t.Errorf("data %v, want only the other writer's key", live.Data)
	}
}

// ssaKubectl runs kubectl against the test cluster.
type ssaKubectl struct {
	t          *testing.T
	kubeconfig string
	dir        string
}

func (k ssaKubectl) file(name, content string) string {
	k.t.Helper()
	p := filepath.Join(k.dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		k.t.Fatal(err)
	}
	return p
}

func (k ssaKubectl) run(args ...string) (string, string, error) {
	k.t.Helper()
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		bin = "/usr/bin/kubectl"
	}
	if _, err := os.Stat(bin); err != nil {
		k.t.Skipf("no kubectl: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"KUBECONFIG=" + k.kubeconfig, "HOME=" + k.dir, "PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

func (k ssaKubectl) must(args ...string) string {
	k.t.Helper()
	out, stderr, err := k.run(args...)
	if err != nil {
		k.t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return out
}
