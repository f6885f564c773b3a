package agent_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/agent"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/kubectltest"
	"github.com/rudder-dev/rudder/internal/nodeidentity"
	"github.com/rudder-dev/rudder/internal/server"
)

// createToken writes a bootstrap token's Secret as `rudder token create`
// does and returns "<id>.<secret>".
func createToken(t *testing.T, c kubernetes.Interface, id, secret string) string {
	t.Helper()
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: auth.BootstrapTokenSecretPrefix + id, Namespace: auth.BootstrapTokenNamespace},
		Type:       auth.BootstrapTokenSecretType,
		StringData: map[string]string{
			auth.BootstrapTokenIDKey:           id,
			auth.BootstrapTokenSecretKey:       secret,
			auth.BootstrapTokenUsageAuthKey:    "true",
			auth.BootstrapTokenUsageSigningKey: "true",
			auth.BootstrapTokenExtraGroupsKey:  auth.BootstrapDefaultNodeGroup,
			auth.BootstrapTokenExpirationKey:   time.Now().Add(time.Hour).UTC().Format(time.RFC3339),
		},
	}
	if _, err := c.CoreV1().Secrets(s.Namespace).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return id + "." + secret
}

// TestJoin joins a node to a running server as `rudder agent --token`
// does — no local credentials: a bootstrap token, the CA discovered from
// cluster-info, a client and a serving certificate approved and signed
// by the cluster — and drives pods on it with kubectl. kubectl logs and
// exec reach the kubelet through the API server, which checks the
// kubelet's serving certificate against the cluster CA.
func TestJoin(t *testing.T) {
	requireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	srv, err := server.Start(ctx, server.Config{DataDir: filepath.Join(dir, "server"), HTTPSPort: 0})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cfg := agent.Config{
		NodeName:      "joined",
		NodeIP:        net.IPv4(127, 0, 0, 2),
		Dir:           filepath.Join(dir, "agent"),
		RuntimeSocket: filepath.Join(dir, "cri.sock"),
		PodLogsDir:    filepath.Join(dir, "pods"),
		Network:       agent.NetworkNone, // the host's namespace: no pod network
	}
	n := &node{srv: srv, cfg: cfg, ctx: ctx}
	t.Cleanup(func() { n.teardown(t, dir, cancel) })
	rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	n.client = kubernetes.NewForConfigOrDie(rc)
	n.kubectl = kubectltest.New(t, srv.Kubeconfig)
	k := n.kubectl
	token := createToken(t, n.client, "jointk", "0123456789abcdef")

	t.Run("a wrong token is refused with one clear line", func(t *testing.T) {
		for _, tc := range []struct {
			name  string
			caPEM []byte
			want  string
		}{
			// Discovery: the cluster signed cluster-info with the
			// token's real secret, which this one is not.
			{"discovering the CA", nil, `does not match token ID "jointk"`},
			// With the CA known, the API server refuses the token.
			{"with the CA", srv.PKI.CAPEM, "Unauthorized"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				start := time.Now()
				_, err := agent.Join(ctx, agent.JoinConfig{Server: srv.URL, Token: "jointk.ffffffffffffffff", CAPEM: tc.caPEM,
					NodeName: "wrong", NodeIP: net.IPv4(127, 0, 0, 3), Dir: filepath.Join(t.TempDir(), "agent"), Timeout: 30 * time.Second})
				if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
					t.Fatalf("join with a wrong token: %v; want one line containing %q", err, tc.want)
				}
				if d := time.Since(start); d > 15*time.Second {
					t.Errorf("refused after %v: it should not wait for the timeout", d)
				}
				t.Logf("refused in %v: %v", time.Since(start).Round(time.Millisecond), err)
			})
		}
	})

	start := time.Now()
	cfg.Credentials, err = agent.Join(ctx, agent.JoinConfig{Server: srv.URL, Token: token, NodeName: cfg.NodeName, NodeIP: cfg.NodeIP, Dir: cfg.Dir, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("joined in %v", time.Since(start).Round(time.Millisecond))
	importBusybox(t, cfg)
	n.cfg = cfg
	if n.agent, err = agent.Start(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	n.waitNodeReady(t)

	t.Run("credentials", func(t *testing.T) {
		for _, f := range []string{nodeidentity.KubeconfigFile, nodeidentity.CertFile, nodeidentity.KeyFile, nodeidentity.CAFile,
			nodeidentity.ServingCertFile, nodeidentity.ServingKeyFile} {
			st, err := os.Stat(filepath.Join(cfg.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("%s has mode %v, want 0600", f, st.Mode().Perm())
			}
		}
		leaf := cfg.Credentials.ServingCert.Leaf
		if leaf == nil || leaf.Subject.CommonName != "system:node:joined" || len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(cfg.NodeIP) {
			t.Fatalf("serving certificate %+v", leaf)
		}
		// The kubelet presents it, and it chains to the cluster CA.
		node, err := n.client.CoreV1().Nodes().Get(ctx, "joined", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		addr := net.JoinHostPort("127.0.0.2", fmt.Sprint(node.Status.DaemonEndpoints.KubeletEndpoint.Port))
		conn, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: srv.PKI.CAPool, ServerName: "joined"})
		if err != nil {
			t.Fatalf("TLS to the kubelet at %s, verified by the cluster CA: %v", addr, err)
		}
		conn.Close()
	})

	t.Run("a pod runs there; logs and exec reach it", func(t *testing.T) {
		k.OK(t, "run", "on-joined", "--image=busybox:e2e", "--restart=Never",
			`--overrides={"apiVersion":"v1","spec":{"nodeSelector":{"kubernetes.io/hostname":"joined"}}}`,
			"--", "sh", "-c", "echo joined; exec sleep 3602")
		p := n.waitPhase(t, "on-joined", corev1.PodRunning)
		if p.Spec.NodeName != "joined" || p.Status.HostIP != "127.0.0.2" {
			t.Errorf("node %q hostIP %q", p.Spec.NodeName, p.Status.HostIP)
		}
		if got := k.OK(t, "logs", "on-joined"); got != "joined\n" {
			t.Errorf("kubectl logs: %q", got)
		}
		if got := strings.TrimSpace(k.OK(t, "exec", "on-joined", "--", "cat", "/etc/hostname")); got != "on-joined" {
			t.Errorf("kubectl exec: %q", got)
		}
	})

	t.Run("a second start reuses the certificates without the token", func(t *testing.T) {
		csrsBefore, err := n.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		clientBefore, _ := os.ReadFile(filepath.Join(cfg.Dir, nodeidentity.CertFile))
		n.agent.Stop()
		n.agent = nil
		again, err := agent.Join(ctx, agent.JoinConfig{Server: srv.URL, NodeName: cfg.NodeName, NodeIP: cfg.NodeIP, Dir: cfg.Dir, Timeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		clientAfter, _ := os.ReadFile(filepath.Join(cfg.Dir, nodeidentity.CertFile))
		if !bytes.Equal(clientBefore, clientAfter) || !bytes.Equal(again.ServingCert.Certificate[0], cfg.Credentials.ServingCert.Certificate[0]) {
			t.Error("the certificates were replaced")
		}
		csrsAfter, err := n.client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(csrsAfter.Items) != len(csrsBefore.Items) {
			t.Errorf("%d certificate requests, %d before", len(csrsAfter.Items), len(csrsBefore.Items))
		}
		cfg.Credentials = again
		n.cfg = cfg
		if n.agent, err = agent.Start(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		n.waitNodeReady(t)
		if got := k.OK(t, "exec", "on-joined", "--", "echo", "again"); got != "again\n" {
			t.Errorf("exec after restart: %q", got)
		}
	})

	t.Run("a fresh directory without a token is refused", func(t *testing.T) {
		_, err := agent.Join(ctx, agent.JoinConfig{Server: srv.URL, NodeName: "other", NodeIP: net.IPv4(127, 0, 0, 4), Dir: t.TempDir(), Timeout: 5 * time.Second})
		if err == nil || !strings.Contains(err.Error(), "no bootstrap token") {
			t.Errorf("got %v, want a refusal naming the missing token", err)
		}
	})
}

func TestSourceIP(t *testing.T) {
	for _, tc := range []struct {
		url, want, wantErr string
	}{
		{url: "https://127.0.0.1:6443", want: "127.0.0.1"},
		{url: "https://[::1]:6443", want: "::1"},
		{url: "not a url", wantErr: "is not a URL with a host"},
	} {
		t.Run(tc.url, func(t *testing.T) {
			ip, err := agent.SourceIP(tc.url)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %v, %v; want error %q", ip, err, tc.wantErr)
				}
				return
			}
			if err != nil || ip.String() != tc.want {
				t.Fatalf("got %v, %v; want %s", ip, err, tc.want)
			}
		})
	}
}
