package nodeidentity

import (
	"context"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// issueServing writes a serving key and certificate into dir as
// ServingCertificate leaves them, plus the CA.
func (ca *testCA) issueServing(t *testing.T, dir, cn string, dns []string, ips []net.IP, usage x509.ExtKeyUsage, notBefore time.Time, life time.Duration) {
	t.Helper()
	key, err := loadOrCreateKey(filepath.Join(dir, ServingKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn, Organization: []string{NodesGroup}},
		DNSNames: dns, IPAddresses: ips, NotBefore: notBefore, NotAfter: notBefore.Add(life),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dir, ServingCertFile), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dir, CAFile), ca.pem); err != nil {
		t.Fatal(err)
	}
}

func TestValidServing(t *testing.T) {
	ca, other := newTestCA(t), newTestCA(t)
	now := time.Now()
	ip := net.IPv4(127, 0, 0, 2)
	fresh := func(dir string) {
		ca.issueServing(t, dir, "system:node:n1", []string{"n1"}, []net.IP{ip}, x509.ExtKeyUsageServerAuth, now.Add(-time.Minute), 24*time.Hour)
	}
	for _, tc := range []struct {
		name    string
		setup   func(dir string)
		ips     []net.IP
		wantErr string
	}{
		{name: "a fresh certificate", setup: fresh},
		{name: "the same IP written another way", setup: fresh, ips: []net.IP{net.ParseIP("::ffff:127.0.0.2")}},
		{name: "the node's IP changed", setup: fresh, ips: []net.IP{net.IPv4(127, 0, 0, 3)}, wantErr: "not n1 [127.0.0.3]"},
		{name: "one more IP", setup: fresh, ips: []net.IP{ip, net.IPv4(127, 0, 0, 3)}, wantErr: "not n1"},
		{name: "another name", setup: func(dir string) {
			ca.issueServing(t, dir, "system:node:n1", []string{"n9"}, []net.IP{ip}, x509.ExtKeyUsageServerAuth, now.Add(-time.Minute), 24*time.Hour)
		}, wantErr: "is for [n9]"},
		{name: "another node's", setup: func(dir string) {
			ca.issueServing(t, dir, "system:node:n2", []string{"n1"}, []net.IP{ip}, x509.ExtKeyUsageServerAuth, now.Add(-time.Minute), 24*time.Hour)
		}, wantErr: "not node"},
		{name: "a client certificate", setup: func(dir string) {
			ca.issueServing(t, dir, "system:node:n1", []string{"n1"}, []net.IP{ip}, x509.ExtKeyUsageClientAuth, now.Add(-time.Minute), 24*time.Hour)
		}, wantErr: "incompatible key usage"},
		{name: "less than a tenth of its life left", setup: func(dir string) {
			ca.issueServing(t, dir, "system:node:n1", []string{"n1"}, []net.IP{ip}, x509.ExtKeyUsageServerAuth, now.Add(-23*time.Hour), 24*time.Hour)
		}, wantErr: "expires at"},
		{name: "another cluster's", setup: func(dir string) {
			fresh(dir)
			writeFile(filepath.Join(dir, CAFile), other.pem)
		}, wantErr: "unknown authority"},
		{name: "no key", setup: func(dir string) {
			fresh(dir)
			os.Remove(filepath.Join(dir, ServingKeyFile))
		}, wantErr: "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(dir)
			ips := tc.ips
			if ips == nil {
				ips = []net.IP{ip}
			}
			err := ValidServing(dir, "n1", ips, now)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// A valid certificate is reused without asking the cluster; bad
// arguments are refused before anything is asked.
func TestServingCertificate(t *testing.T) {
	ca := newTestCA(t)
	ip := net.IPv4(127, 0, 0, 2)
	ctx := context.Background()
	t.Run("reused while valid", func(t *testing.T) {
		dir := t.TempDir()
		ca.issueServing(t, dir, "system:node:n1", []string{"n1"}, []net.IP{ip}, x509.ExtKeyUsageServerAuth, time.Now().Add(-time.Minute), 24*time.Hour)
		client := fake.NewClientset()
		pair, err := ServingCertificate(ctx, client, "n1", []net.IP{ip}, dir)
		if err != nil {
			t.Fatal(err)
		}
		if pair.Leaf == nil || pair.Leaf.Subject.CommonName != "system:node:n1" {
			t.Errorf("leaf %+v", pair.Leaf)
		}
		if n := len(client.Actions()); n != 0 {
			t.Errorf("%d API calls for a valid certificate: %v", n, client.Actions())
		}
	})
	for _, tc := range []struct {
		name, node, wantErr string
		ips                 []net.IP
		noCA                bool
	}{
		{name: "bad node name", node: "N_1", ips: []net.IP{ip}, wantErr: `node name "N_1"`},
		{name: "unspecified IP", node: "n1", ips: []net.IP{net.IPv4zero}, wantErr: "is not a node address"},
		{name: "no CA yet", node: "n1", ips: []net.IP{ip}, noCA: true, wantErr: "bootstrap first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if !tc.noCA {
				writeFile(filepath.Join(dir, CAFile), ca.pem)
			}
			client := fake.NewClientset()
			_, err := ServingCertificate(ctx, client, tc.node, tc.ips, dir)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			}
			if n := len(client.Actions()); n != 0 {
				t.Errorf("%d API calls", n)
			}
		})
	}
}
