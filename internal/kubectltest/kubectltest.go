// Package kubectltest runs the real kubectl (/usr/bin/kubectl, or
// $KUBECTL) against a test cluster, the way a user would, and returns
// what it printed and how it exited. Each Kubectl has a private HOME so
// kubectl's discovery cache belongs to one test.
//
//	k := kubectltest.New(t, srv.Kubeconfig)
//	out := k.OK(t, "get", "pods", "-o", "name")
//	r := k.Run(t, "", "exec", "p", "--", "sh", "-c", "exit 3") // r.Code == 3
package kubectltest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Timeout bounds one kubectl run, so a hung server fails the test
// instead of the suite.
const Timeout = 60 * time.Second

// Kubectl runs kubectl against one cluster.
type Kubectl struct {
	Bin string
	Env []string
}

// Result is what one run printed and how it exited.
type Result struct {
	Stdout, Stderr string
	Code           int
}

// New finds kubectl (skipping the test when there is none) and prepares
// its environment for the cluster of kubeconfig.
func New(t testing.TB, kubeconfig string) *Kubectl {
	t.Helper()
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl not found: set $KUBECTL or put kubectl on PATH")
		}
	}
	env := []string{"KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir()}
	for _, kv := range os.Environ() {
		// Anything that configures kubectl from outside could change
		// what it prints; keep only what running a program needs.
		if k, _, _ := strings.Cut(kv, "="); k == "PATH" || k == "TMPDIR" {
			env = append(env, kv)
		}
	}
	return &Kubectl{Bin: bin, Env: env}
}

// Command is kubectl with args, ready to start (for long-running
// commands such as port-forward or logs -f).
func (k *Kubectl) Command(ctx context.Context, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.Bin, args...)
	cmd.Env = k.Env
	return cmd
}

// Run runs kubectl with stdin and args.
func (k *Kubectl) Run(t testing.TB, stdin string, args ...string) Result {
	t.Helper()
	return k.RunInput(t, strings.NewReader(stdin), args...)
}

// RunInput is Run with stdin from a reader.
func (k *Kubectl) RunInput(t testing.TB, stdin io.Reader, args ...string) Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := k.Command(ctx, args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("kubectl %s: no answer within %v\nstderr: %s", strings.Join(args, " "), Timeout, res.Stderr)
	case errors.As(err, &exit):
		res.Code = exit.ExitCode()
	case err != nil:
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	return res
}

// OK runs kubectl and fails the test unless it exits 0; it returns stdout.
func (k *Kubectl) OK(t testing.TB, args ...string) string {
	t.Helper()
	r := k.Run(t, "", args...)
	if r.Code != 0 {
		t.Fatalf("kubectl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.Code, r.Stdout, r.Stderr)
	}
	return r.Stdout
}
