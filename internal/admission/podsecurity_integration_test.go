package admission_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestPodSecurityWithKubectl drives PodSecurity through a real API server
// with kubectl, as a user would, and checks what kubectl prints.
func TestPodSecurityWithKubectl(t *testing.T) {
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl not found: set $KUBECTL or put kubectl on PATH")
		}
	}
	c := clustertest.Start(t, clustertest.Options{})
	env := []string{"KUBECONFIG=" + c.Server.Kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	kubectl := func(args ...string) (stdout, stderr string, code int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("kubectl %v: %v", args, err)
		}
		return out.String(), errb.String(), code
	}
	ok := func(args ...string) (stdout, stderr string) {
		t.Helper()
		stdout, stderr, code := kubectl(args...)
		if code != 0 {
			t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
		return stdout, stderr
	}
	const detail = `allowPrivilegeEscalation != false (container "root" must set securityContext.allowPrivilegeEscalation=false), ` +
		`unrestricted capabilities (container "root" must set securityContext.capabilities.drop=["ALL"]), ` +
		`runAsNonRoot != true (pod or container "root" must set securityContext.runAsNonRoot=true), ` +
		`seccompProfile (pod or container "root" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	ctx := context.Background()

	ok("create", "namespace", "prod")
	ok("label", "ns", "prod", "pod-security.kubernetes.io/enforce=restricted")

	t.Run("enforce refuses a root pod", func(t *testing.T) {
		_, stderr, code := kubectl("-n", "prod", "run", "root", "--image=nginx")
		if code == 0 {
			t.Fatal("the pod was admitted: is PodSecurity in the server's admission chain (internal/admission/plugins.go)?")
		}
		want := `Error from server (Forbidden): pods "root" is forbidden: violates PodSecurity "restricted:latest": ` + detail
		if code == 0 || strings.TrimSpace(stderr) != want {
			t.Fatalf("exit %d, stderr:\n%s\nwant:\n%s", code, stderr, want)
		}
		if _, err := c.Client.CoreV1().Pods("prod").Get(ctx, "root", metav1.GetOptions{}); err == nil {
			t.Fatal("the refused pod was stored")
		}
	})

	t.Run("warn creates the pod and prints a warning", func(t *testing.T) {
		ok("create", "namespace", "dev")
		ok("label", "ns", "dev", "pod-security.kubernetes.io/warn=restricted")
		stdout, stderr := ok("-n", "dev", "run", "root", "--image=nginx")
		if want := `Warning: would violate PodSecurity "restricted:latest": ` + detail; strings.TrimSpace(stderr) != want {
			t.Fatalf("stderr:\n%s\nwant:\n%s", stderr, want)
		}
		if strings.TrimSpace(stdout) != "pod/root created" {
			t.Fatalf("stdout %q", stdout)
		}
		if _, err := c.Client.CoreV1().Pods("dev").Get(ctx, "root", metav1.GetOptions{}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a deployment is admitted with a warning, never refused", func(t *testing.T) {
		stdout, stderr := ok("-n", "prod", "create", "deployment", "web", "--image=nginx")
		want := `Warning: would violate PodSecurity "restricted:latest": ` + strings.ReplaceAll(detail, `"root"`, `"nginx"`)
		if strings.TrimSpace(stderr) != want || strings.TrimSpace(stdout) != "deployment.apps/web created" {
			t.Fatalf("stdout %q\nstderr:\n%s\nwant:\n%s", stdout, stderr, want)
		}
	})

	t.Run("tightening a namespace lists the pods it would refuse", func(t *testing.T) {
		_, stderr := ok("label", "ns", "dev", "pod-security.kubernetes.io/enforce=restricted")
		want := `Warning: existing pods in namespace "dev" violate the new PodSecurity enforce level "restricted:latest"` + "\n" +
			`Warning: root: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile`
		if strings.TrimSpace(stderr) != want {
			t.Fatalf("stderr:\n%s\nwant:\n%s", stderr, want)
		}
	})

	t.Run("a bad level is refused", func(t *testing.T) {
		_, stderr, code := kubectl("label", "ns", "prod", "--overwrite", "pod-security.kubernetes.io/enforce=strict")
		want := `The Namespace "prod" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`
		if code == 0 || !strings.Contains(stderr, want) {
			t.Fatalf("exit %d, stderr:\n%s\nwant it to contain:\n%s", code, stderr, want)
		}
	})
}
