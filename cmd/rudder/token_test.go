package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/server"
)

// TestTokenCommand creates, lists and deletes a bootstrap token against a
// real server and checks what the token authenticates as at each step.
func TestTokenCommand(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	srv, err := server.Start(ctx, server.Config{DataDir: dir, Controllers: []string{"-*"}, DisableScheduler: true})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); srv.Stop() })

	run := func(args ...string) (string, error) {
		cmd := tokenCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.ExecuteContext(ctx)
		return out.String(), err
	}
	whoami := func(token string) (*authenticationv1.UserInfo, error) {
		c := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL, BearerToken: token, TLSClientConfig: rest.TLSClientConfig{CAData: srv.PKI.CAPEM}})
		r, err := c.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			return nil, err
		}
		return &r.Status.UserInfo, nil
	}

	out, err := run("create", "--data-dir", dir, "--ttl", "2h", "--description", "for node-7")
	if err != nil {
		t.Fatalf("create: %v\n%s", err, out)
	}
	token := strings.TrimSpace(out)
	id, _, ok := auth.ParseBootstrapToken(token)
	if !ok {
		t.Fatalf("create printed %q, not a bootstrap token", out)
	}
	u, err := whoami(token)
	if err != nil {
		t.Fatal(err)
	}
	if u.Username != "system:bootstrap:"+id || !strings.Contains(strings.Join(u.Groups, ","), "system:bootstrappers,system:bootstrappers:rudder:default-node-token") {
		t.Fatalf("the token authenticates as %q %v", u.Username, u.Groups)
	}

	out, err = run("list", "--kubeconfig", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], id+" ") || !strings.Contains(lines[1], "authentication,signing") ||
		!strings.Contains(lines[1], "for node-7") || strings.Contains(out, token) {
		t.Fatalf("list:\n%s", out)
	}

	if out, err := run("delete", "--data-dir", dir, token); err != nil || !strings.Contains(out, id) {
		t.Fatalf("delete: %v %s", err, out)
	}
	if _, err := whoami(token); !apierrors.IsUnauthorized(err) {
		t.Fatalf("a deleted token: %v, want 401", err)
	}

	for name, args := range map[string][]string{
		"delete of an unknown token":   {"delete", "--data-dir", dir, "zzzzzz"},
		"delete of something else":     {"delete", "--data-dir", dir, "not-a-token"},
		"a negative ttl":               {"create", "--data-dir", dir, "--ttl", "-1h"},
		"groups outside bootstrappers": {"create", "--data-dir", dir, "--groups", "system:masters"},
		"delete without an argument":   {"delete", "--data-dir", dir},
	} {
		if _, err := run(args...); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
