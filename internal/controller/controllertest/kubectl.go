package controllertest

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// KubectlResult is what one kubectl run printed and how it exited.
type KubectlResult struct {
	Stdout, Stderr string
	// Code is kubectl's exit status; non-zero when it refused or failed.
	Code int
}

// kubectlTimeout bounds a kubectl run; commands that wait (rollout
// status, wait) should pass a shorter --timeout of their own.
const kubectlTimeout = time.Minute

// Kubectl runs the real kubectl ($KUBECTL, else kubectl on $PATH)
// against the cluster of kubeconfig, with a HOME of its own so no cache
// or config of the user's is involved. The test is skipped when there is
// no kubectl, and fails when kubectl cannot be run or times out; a
// non-zero exit is only reported in Code, for tests that expect kubectl
// to fail (rollout status of a stuck rollout).
func Kubectl(t testing.TB, kubeconfig string, args ...string) KubectlResult {
	t.Helper()
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl not found; set KUBECTL or put it on PATH")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH")}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := KubectlResult{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("kubectl %s: timed out after %v\n%s", strings.Join(args, " "), kubectlTimeout, res.Stderr)
	case errors.As(err, &exit):
		res.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// KubectlOutput is Kubectl for commands that must succeed: it fails the
// test, showing kubectl's error output, unless kubectl exits 0, and
// returns what kubectl printed on standard output.
func KubectlOutput(t testing.TB, kubeconfig string, args ...string) string {
	t.Helper()
	res := Kubectl(t, kubeconfig, args...)
	if res.Code != 0 {
		t.Fatalf("kubectl %s: exit %d\n%s%s", strings.Join(args, " "), res.Code, res.Stdout, res.Stderr)
	}
	return res.Stdout
}
