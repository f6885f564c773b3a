package pki

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// identityServer is a real TLS endpoint serving the bundle's certificate
// and answering with whoever the client authenticated as, so a kubeconfig
// is tested by using it, not by reading it back.
func identityServer(t *testing.T, b *Bundle) *httptest.Server {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
			c := r.TLS.PeerCertificates[0]
			fmt.Fprintf(w, "cert:%s:%s", c.Subject.CommonName, strings.Join(c.Subject.Organization, ","))
			return
		}
		fmt.Fprintf(w, "header:%s", r.Header.Get("Authorization"))
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{b.ServingCert},
		ClientCAs:    b.CAPool,
		ClientAuth:   tls.VerifyClientCertIfGiven,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

func TestWriteKubeconfig(t *testing.T) {
	// The real clock: the handshake below checks validity against it.
	b := mustEnsure(t, Config{Dir: t.TempDir()})
	srv := identityServer(t, b)
	nodeCert, nodeKey, err := b.IssueClientCert("system:node:n1", []string{"system:nodes"}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		name       string
		write      func(path string) error
		user       string
		wantCert   []byte
		wantToken  string
		wantServed string
	}{
		{
			name: "admin certificate",
			write: func(path string) error {
				return WriteKubeconfig(path, srv.URL, b.CAPEM, b.AdminCertPEM, b.AdminKeyPEM, AdminCommonName)
			},
			user:       AdminCommonName,
			wantCert:   b.AdminCertPEM,
			wantServed: "cert:rudder-admin:system:masters",
		},
		{
			name: "issued node certificate",
			write: func(path string) error {
				return WriteKubeconfig(path, srv.URL, b.CAPEM, nodeCert, nodeKey, "node")
			},
			user:       "node",
			wantCert:   nodeCert,
			wantServed: "cert:system:node:n1:system:nodes",
		},
		{
			name: "bearer token",
			write: func(path string) error {
				return WriteTokenKubeconfig(path, srv.URL, b.CAPEM, "abc.def", "bootstrap")
			},
			user:       "bootstrap",
			wantToken:  "abc.def",
			wantServed: "header:Bearer abc.def",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "kube")
			path := filepath.Join(dir, "config")
			if err := tc.write(path); err != nil {
				t.Fatalf("write: %v", err)
			}
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o600 {
				t.Errorf("mode = %v, want 0600", st.Mode().Perm())
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("dir holds %d entries, want only the kubeconfig", len(entries))
			}

			cfg, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatalf("LoadFromFile: %v", err)
			}
			if cfg.CurrentContext != "rudder" {
				t.Errorf("current-context = %q, want rudder", cfg.CurrentContext)
			}
			ctx := cfg.Contexts["rudder"]
			if ctx == nil || ctx.Cluster != "rudder" || ctx.AuthInfo != tc.user {
				t.Fatalf("context rudder = %+v, want cluster rudder user %q", ctx, tc.user)
			}
			cluster := cfg.Clusters["rudder"]
			if cluster == nil || cluster.Server != srv.URL || !bytes.Equal(cluster.CertificateAuthorityData, b.CAPEM) {
				t.Fatalf("cluster rudder = %+v, want server %s and the bundle CA", cluster, srv.URL)
			}
			ai := cfg.AuthInfos[tc.user]
			if ai == nil {
				t.Fatalf("no user %q in %v", tc.user, cfg.AuthInfos)
			}
			if !bytes.Equal(ai.ClientCertificateData, tc.wantCert) || ai.Token != tc.wantToken {
				t.Errorf("user %q: cert match=%v token=%q, want token %q",
					tc.user, bytes.Equal(ai.ClientCertificateData, tc.wantCert), ai.Token, tc.wantToken)
			}

			// Use it the way a client would.
			restCfg, err := clientcmd.BuildConfigFromFlags("", path)
			if err != nil {
				t.Fatalf("BuildConfigFromFlags: %v", err)
			}
			hc, err := rest.HTTPClientFor(restCfg)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := hc.Get(srv.URL)
			if err != nil {
				t.Fatalf("GET with kubeconfig: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if string(body) != tc.wantServed {
				t.Errorf("server saw %q, want %q", body, tc.wantServed)
			}
		})
	}
}

func TestWriteKubeconfigReplaces(t *testing.T) {
	b := mustEnsure(t, Config{Dir: t.TempDir()})
	path := filepath.Join(t.TempDir(), "config")
	if err := WriteKubeconfig(path, "https://old:6443", b.CAPEM, b.AdminCertPEM, b.AdminKeyPEM, "admin"); err != nil {
		t.Fatal(err)
	}
	if err := WriteTokenKubeconfig(path, "https://new:6443", b.CAPEM, "tok", "robot"); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Clusters["rudder"].Server; got != "https://new:6443" {
		t.Errorf("server = %q, want the second write's", got)
	}
	if _, ok := cfg.AuthInfos["admin"]; ok {
		t.Error("first write's user survived; the file was merged, not replaced")
	}
}

func TestWriteKubeconfigErrors(t *testing.T) {
	b := mustEnsure(t, Config{Dir: t.TempDir()})
	other := mustEnsure(t, Config{Dir: t.TempDir()})
	cases := []struct {
		name  string
		write func(path string) error
	}{
		{"plain http server", func(p string) error {
			return WriteKubeconfig(p, "http://127.0.0.1:6443", b.CAPEM, b.AdminCertPEM, b.AdminKeyPEM, "admin")
		}},
		{"server without host", func(p string) error {
			return WriteTokenKubeconfig(p, "https://", b.CAPEM, "tok", "robot")
		}},
		{"cert and key from different pairs", func(p string) error {
			return WriteKubeconfig(p, "https://127.0.0.1:6443", b.CAPEM, b.AdminCertPEM, other.AdminKeyPEM, "admin")
		}},
		{"CA is not PEM", func(p string) error {
			return WriteKubeconfig(p, "https://127.0.0.1:6443", []byte("nope"), b.AdminCertPEM, b.AdminKeyPEM, "admin")
		}},
		{"empty user", func(p string) error {
			return WriteKubeconfig(p, "https://127.0.0.1:6443", b.CAPEM, b.AdminCertPEM, b.AdminKeyPEM, "")
		}},
		{"empty token", func(p string) error {
			return WriteTokenKubeconfig(p, "https://127.0.0.1:6443", b.CAPEM, "", "robot")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config")
			err := tc.write(path)
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error = %v, want ErrInvalidConfig", err)
			}
			if _, err := os.Stat(path); !os.IsNotExist(err) {
				t.Errorf("a rejected kubeconfig was written anyway (stat err %v)", err)
			}
		})
	}
}
