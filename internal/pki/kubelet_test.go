package pki

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestKubeletCerts(t *testing.T) {
	dir := t.TempDir()
	b := mustEnsure(t, Config{Dir: dir})
	verify := func(t *testing.T, der []byte, usage x509.ExtKeyUsage, pool *x509.CertPool) *x509.Certificate {
		t.Helper()
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Fatalf("%s does not verify for %v: %v", cert.Subject.CommonName, usage, err)
		}
		return cert
	}
	t.Run("serving certificate from a CA loaded alone", func(t *testing.T) {
		ca, err := LoadCA(dir)
		if err != nil {
			t.Fatal(err)
		}
		tc, err := ca.IssueServingCert(SimNodeServingCommonName, nil, []string{"sim"}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		// The server's bundle (same CA) trusts it.
		cert := verify(t, tc.Certificate[0], x509.ExtKeyUsageServerAuth, b.CAPool)
		if cert.Subject.CommonName != SimNodeServingCommonName || len(cert.DNSNames) != 1 {
			t.Errorf("subject %v names %v", cert.Subject, cert.DNSNames)
		}
	})
	t.Run("kubelet client certificate", func(t *testing.T) {
		tc, err := b.KubeletClientCert(time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if cert := verify(t, tc.Certificate[0], x509.ExtKeyUsageClientAuth, b.CAPool); cert.Subject.CommonName != KubeletClientCommonName {
			t.Errorf("subject %v", cert.Subject)
		}
	})
	t.Run("LoadCA never writes and refuses what is missing", func(t *testing.T) {
		empty := t.TempDir()
		if _, err := LoadCA(empty); err == nil {
			t.Fatal("loaded a CA from an empty directory")
		}
		if entries, _ := os.ReadDir(empty); len(entries) != 0 {
			t.Errorf("LoadCA wrote %v", entries)
		}
		bad := t.TempDir()
		copyBetween(t, filepath.Join(dir, AdminCertFile), filepath.Join(bad, CACertFile))
		copyBetween(t, filepath.Join(dir, AdminKeyFile), filepath.Join(bad, CAKeyFile))
		if _, err := LoadCA(bad); !errors.Is(err, ErrUnusable) {
			t.Errorf("a leaf as CA: %v, want ErrUnusable", err)
		}
	})
	t.Run("bad arguments", func(t *testing.T) {
		if _, err := b.IssueServingCert("", nil, nil, time.Hour); err == nil {
			t.Error("no common name accepted")
		}
		if _, err := b.IssueServingCert("x", nil, nil, 0); err == nil {
			t.Error("zero ttl accepted")
		}
	})
}
