package nodeidentity

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(10 * 365 * 24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a complete identity into dir as Bootstrap would leave it:
// key, certificate (for subject, valid from notBefore for life), CA and
// kubeconfig.
func (ca *testCA) issue(t *testing.T, dir, cn string, notBefore time.Time, life time.Duration) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	key, err := loadOrCreateKey(filepath.Join(dir, KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: []string{NodesGroup}},
		NotBefore: notBefore, NotAfter: notBefore.Add(life), KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		CertFile: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		CAFile:   ca.pem,
	} {
		if err := writeFile(filepath.Join(dir, name), data); err != nil {
			t.Fatal(err)
		}
	}
	if err := writeKubeconfig(filepath.Join(dir, KubeconfigFile), "https://127.0.0.1:1", dir, strings.TrimPrefix(cn, NodeUserPrefix)); err != nil {
		t.Fatal(err)
	}
}

func TestValid(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	now := time.Now()
	tests := []struct {
		name    string
		setup   func(dir string)
		caPEM   []byte
		node    string
		at      time.Time
		wantErr string
	}{
		{name: "a fresh certificate", setup: func(dir string) { ca.issue(t, dir, "system:node:n1", now.Add(-time.Minute), 24*time.Hour) }},
		{name: "another node's", setup: func(dir string) { ca.issue(t, dir, "system:node:n2", now.Add(-time.Minute), 24*time.Hour) },
			wantErr: "not node"},
		{name: "another cluster's CA", setup: func(dir string) { ca.issue(t, dir, "system:node:n1", now.Add(-time.Minute), 24*time.Hour) },
			caPEM: other.pem, wantErr: "not the cluster's"},
		{name: "expired", setup: func(dir string) { ca.issue(t, dir, "system:node:n1", now.Add(-48*time.Hour), 24*time.Hour) },
			wantErr: "expired"},
		{name: "less than a tenth of its life left", setup: func(dir string) { ca.issue(t, dir, "system:node:n1", now.Add(-23*time.Hour), 24*time.Hour) },
			wantErr: "expires at"},
		{name: "a key that is not the certificate's", setup: func(dir string) {
			ca.issue(t, dir, "system:node:n1", now.Add(-time.Minute), 24*time.Hour)
			os.Remove(filepath.Join(dir, KeyFile))
			loadOrCreateKey(filepath.Join(dir, KeyFile))
		}, wantErr: "not for the stored key"},
		{name: "an interrupted bootstrap (no kubeconfig)", setup: func(dir string) {
			ca.issue(t, dir, "system:node:n1", now.Add(-time.Minute), 24*time.Hour)
			os.Remove(filepath.Join(dir, KubeconfigFile))
		}, wantErr: "no such file"},
		{name: "a corrupt certificate", setup: func(dir string) {
			ca.issue(t, dir, "system:node:n1", now.Add(-time.Minute), 24*time.Hour)
			os.WriteFile(filepath.Join(dir, CertFile), []byte("junk"), 0o600)
		}, wantErr: "no PEM certificate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(dir)
			caPEM := tc.caPEM
			if caPEM == nil {
				caPEM = ca.pem
			}
			err := Valid(dir, "n1", caPEM, now)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Valid: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Valid = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestBootstrapBadInput(t *testing.T) {
	ca := newTestCA(t)
	ctx := context.Background()
	tests := []struct {
		name, server string
		ca           []byte
		node, dir    string
		want         string
	}{
		{"plain http", "http://127.0.0.1:6443", ca.pem, "n1", t.TempDir(), "not an https:// URL"},
		{"no host", "https://", ca.pem, "n1", t.TempDir(), "not an https:// URL"},
		{"no CA to discover with no token", "https://127.0.0.1:6443", nil, "n1", t.TempDir(), "no bootstrap token"},
		{"a CA that is not PEM", "https://127.0.0.1:6443", []byte("junk"), "n1", t.TempDir(), "no PEM certificate"},
		{"a bad node name", "https://127.0.0.1:6443", ca.pem, "Node_1", t.TempDir(), "node name"},
		{"no directory", "https://127.0.0.1:6443", ca.pem, "n1", "", "no directory"},
		{"no token and no identity", "https://127.0.0.1:6443", ca.pem, "n1", t.TempDir(), "no bootstrap token"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Bootstrap(ctx, tc.server, tc.ca, "", tc.node, tc.dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// TestBootstrapReusesAValidIdentity: no token, a server nobody listens
// on, and still the stored identity comes back.
func TestBootstrapReusesAValidIdentity(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	ca.issue(t, dir, "system:node:n1", time.Now().Add(-time.Minute), 24*time.Hour)
	got, err := Bootstrap(context.Background(), "https://127.0.0.1:1", ca.pem, "", "n1", dir)
	if err != nil || got != filepath.Join(dir, KubeconfigFile) {
		t.Fatalf("Bootstrap = %q, %v", got, err)
	}
}

// TestBootstrapServerDown: an expiring identity is replaced, the server
// cannot be reached, and the call ends with ctx, leaving only a new key.
func TestBootstrapServerDown(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	ca.issue(t, dir, "system:node:n1", time.Now().Add(-23*time.Hour), 24*time.Hour)
	oldKey, _ := os.ReadFile(filepath.Join(dir, KeyFile))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := Bootstrap(ctx, "https://127.0.0.1:1", ca.pem, "abcdef.0123456789abcdef", "n1", dir); err == nil {
		t.Fatal("bootstrap against a closed port succeeded")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if strings.Join(names, " ") != CAFile+" "+KeyFile {
		t.Fatalf("left in dir: %v, want only the CA and a key", names)
	}
	if newKey, _ := os.ReadFile(filepath.Join(dir, KeyFile)); string(newKey) == string(oldKey) {
		t.Fatal("an expiring identity's key was reused for the new request")
	}
}
