package pki

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

var allFiles = []string{
	CACertFile, CAKeyFile,
	ServerCertFile, ServerKeyFile,
	AdminCertFile, AdminKeyFile,
	SAKeyFile, SAPubFile,
}

// t0 is deliberately not "now": every validity check must go through the
// injected clock, and a forgotten time.Now() shows up as a failure.
var t0 = time.Date(2031, time.March, 14, 9, 26, 53, 0, time.UTC)

func mustEnsure(t *testing.T, cfg Config) *Bundle {
	t.Helper()
	b, err := Ensure(cfg)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return b
}

func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for _, f := range allFiles {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatalf("read %s: %v", f, err)
		}
		out[f] = data
	}
	return out
}

func baseNames(paths []string) []string {
	var out []string
	for _, p := range paths {
		out = append(out, filepath.Base(p))
	}
	slices.Sort(out)
	return out
}

func TestEnsureCreatesFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "tls")
	b := mustEnsure(t, Config{Dir: dir, Clock: testingclock.NewFakePassiveClock(t0)})

	if got, want := baseNames(b.Written), slices.Sorted(slices.Values(allFiles)); !slices.Equal(got, want) {
		t.Errorf("Written = %v, want %v", got, want)
	}
	st, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o700 {
		t.Errorf("dir mode = %v, want 0700", st.Mode().Perm())
	}
	for _, f := range allFiles {
		want := os.FileMode(0o644)
		if strings.HasSuffix(f, ".key") {
			want = 0o600
		}
		st, err := os.Stat(filepath.Join(dir, f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s mode = %v, want %v", f, st.Mode().Perm(), want)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(allFiles) {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("dir holds %v, want exactly %v (temporary files left behind?)", names, allFiles)
	}

	if b.CACert.Subject.CommonName != CACommonName || !b.CACert.IsCA {
		t.Errorf("CA subject %q IsCA=%v", b.CACert.Subject.CommonName, b.CACert.IsCA)
	}
	if _, ok := b.CACert.PublicKey.(*ecdsa.PublicKey); !ok {
		t.Errorf("CA key is %T, want ECDSA", b.CACert.PublicKey)
	}
	if got, want := b.CACert.NotAfter, t0.Add(caLifetime); !got.Equal(want) {
		t.Errorf("CA NotAfter = %v, want %v", got, want)
	}
	if got, want := b.ServingCert.Leaf.NotAfter, t0.Add(leafLifetime); !got.Equal(want) {
		t.Errorf("serving NotAfter = %v, want %v", got, want)
	}
	if !slices.Contains(b.ServingCert.Leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) {
		t.Errorf("serving ExtKeyUsage = %v, want server auth", b.ServingCert.Leaf.ExtKeyUsage)
	}
	if !bytes.Equal(b.CAPEM, snapshot(t, dir)[CACertFile]) {
		t.Error("Bundle.CAPEM differs from ca.crt")
	}
}

func TestEnsureReuseAndReissue(t *testing.T) {
	const day = 24 * time.Hour
	cases := []struct {
		name        string
		first       []string
		second      []string
		advance     time.Duration
		between     func(t *testing.T, dir string)
		wantChanged []string
		// wantWritten defaults to wantChanged.
		wantWritten []string
	}{
		{
			name: "unchanged config reuses every file",
		},
		{
			name:        "new DNS SAN re-issues only the serving cert",
			second:      []string{"api.example.com"},
			wantChanged: []string{ServerCertFile, ServerKeyFile},
		},
		{
			name:        "new IP SAN re-issues only the serving cert",
			first:       []string{"10.0.0.1"},
			second:      []string{"10.0.0.1", "10.0.0.7"},
			wantChanged: []string{ServerCertFile, ServerKeyFile},
		},
		{
			name:   "SAN differing in case and trailing dot is covered",
			first:  []string{"api.example.com"},
			second: []string{"API.Example.COM."},
		},
		{
			name:   "dropped SAN keeps the serving cert",
			first:  []string{"api.example.com", "10.0.0.1"},
			second: nil,
		},
		{
			name:        "inside the renewal window re-issues serving and admin",
			advance:     leafLifetime - renewBefore + day,
			wantChanged: []string{ServerCertFile, ServerKeyFile, AdminCertFile, AdminKeyFile},
		},
		{
			name:    "just before the renewal window reuses",
			advance: leafLifetime - renewBefore - day,
		},
		{
			name:        "missing server.key re-issues the serving cert",
			between:     remove(ServerKeyFile),
			wantChanged: []string{ServerCertFile, ServerKeyFile},
		},
		{
			name:        "corrupt server.crt re-issues the serving cert",
			between:     overwrite(ServerCertFile, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")),
			wantChanged: []string{ServerCertFile, ServerKeyFile},
		},
		{
			name:        "admin key not matching admin cert re-issues admin",
			between:     copyFile(ServerKeyFile, AdminKeyFile),
			wantChanged: []string{AdminCertFile, AdminKeyFile},
		},
		{
			name: "serving cert from another CA is re-issued",
			between: func(t *testing.T, dir string) {
				other := t.TempDir()
				mustEnsure(t, Config{Dir: other, Clock: testingclock.NewFakePassiveClock(t0)})
				for _, f := range []string{ServerCertFile, ServerKeyFile} {
					copyBetween(t, filepath.Join(other, f), filepath.Join(dir, f))
				}
			},
			wantChanged: []string{ServerCertFile, ServerKeyFile},
		},
		{
			name:        "ca.key left without ca.crt starts a new CA and re-issues leaves",
			between:     remove(CACertFile),
			wantChanged: []string{CACertFile, CAKeyFile, ServerCertFile, ServerKeyFile, AdminCertFile, AdminKeyFile},
		},
		{
			name:        "missing sa.pub is rewritten from sa.key",
			between:     remove(SAPubFile),
			wantWritten: []string{SAPubFile},
		},
		{
			name:        "missing sa.key makes a new service-account key",
			between:     remove(SAKeyFile),
			wantChanged: []string{SAKeyFile, SAPubFile},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			clk := testingclock.NewFakePassiveClock(t0)
			mustEnsure(t, Config{Dir: dir, Hosts: tc.first, Clock: clk})
			before := snapshot(t, dir)
			if tc.between != nil {
				tc.between(t, dir)
			}
			clk.SetTime(t0.Add(tc.advance))
			b := mustEnsure(t, Config{Dir: dir, Hosts: tc.second, Clock: clk})
			after := snapshot(t, dir)

			for _, f := range allFiles {
				changed := !bytes.Equal(before[f], after[f])
				if want := slices.Contains(tc.wantChanged, f); changed != want {
					t.Errorf("%s changed = %v, want %v", f, changed, want)
				}
			}
			wantWritten := tc.wantWritten
			if wantWritten == nil {
				wantWritten = tc.wantChanged
			}
			if got, want := baseNames(b.Written), slices.Sorted(slices.Values(wantWritten)); !slices.Equal(got, want) {
				t.Errorf("Written = %v, want %v", got, want)
			}
			// Whatever was reused or re-issued, the bundle must hang
			// together.
			if _, err := b.ServingCert.Leaf.Verify(x509.VerifyOptions{
				Roots: b.CAPool, CurrentTime: clk.Now(), DNSName: "kubernetes.default.svc",
			}); err != nil {
				t.Errorf("serving cert does not verify after second Ensure: %v", err)
			}
			for _, h := range tc.second {
				if _, err := b.ServingCert.Leaf.Verify(x509.VerifyOptions{
					Roots: b.CAPool, CurrentTime: clk.Now(), DNSName: h,
				}); err != nil {
					t.Errorf("serving cert does not cover %q: %v", h, err)
				}
			}
		})
	}
}

func TestEnsureErrors(t *testing.T) {
	badSAKey := func(t *testing.T, dir string) {
		k, err := rsa.GenerateKey(rand.Reader, 1024)
		if err != nil {
			t.Fatal(err)
		}
		overwrite(SAKeyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))(t, dir)
	}
	cases := []struct {
		name    string
		noDir   bool
		hosts   []string
		setup   func(t *testing.T, dir string) // runs after a successful Ensure
		advance time.Duration
		want    error
	}{
		{name: "empty dir", noDir: true, want: ErrInvalidConfig},
		{name: "SAN neither IP nor DNS name", hosts: []string{"not a host!"}, want: ErrInvalidConfig},
		{name: "corrupt ca.crt", setup: overwrite(CACertFile, []byte("garbage")), want: ErrUnusable},
		{name: "ca.crt without ca.key", setup: remove(CAKeyFile), want: ErrUnusable},
		{name: "ca.key not matching ca.crt", setup: copyFile(ServerKeyFile, CAKeyFile), want: ErrUnusable},
		{name: "ca.crt is not a CA", setup: func(t *testing.T, dir string) {
			copyFile(ServerCertFile, CACertFile)(t, dir)
			copyFile(ServerKeyFile, CAKeyFile)(t, dir)
		}, want: ErrUnusable},
		{name: "expired CA", advance: caLifetime + time.Hour, want: ErrUnusable},
		{name: "corrupt sa.key", setup: overwrite(SAKeyFile, []byte("garbage")), want: ErrUnusable},
		{name: "RSA sa.key under 2048 bits", setup: badSAKey, want: ErrUnusable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(t0)
			cfg := Config{Dir: t.TempDir(), Clock: clk}
			if tc.noDir {
				cfg.Dir = ""
			}
			var before map[string][]byte
			if tc.setup != nil || tc.advance != 0 {
				mustEnsure(t, cfg)
				if tc.setup != nil {
					tc.setup(t, cfg.Dir)
				}
				before = readAll(cfg.Dir)
				clk.SetTime(t0.Add(tc.advance))
			}
			cfg.Hosts = tc.hosts
			_, err := Ensure(cfg)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Ensure error = %v, want %v", err, tc.want)
			}
			// A refused start must not have touched anything.
			if before != nil {
				after := readAll(cfg.Dir)
				for name, data := range before {
					if !bytes.Equal(data, after[name]) {
						t.Errorf("%s was modified by a failed Ensure", name)
					}
				}
				if len(after) != len(before) {
					t.Errorf("failed Ensure left %d files, had %d", len(after), len(before))
				}
			}
		})
	}
}

func TestServiceAccountKey(t *testing.T) {
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, dir string)
	}{
		{name: "generated"},
		{name: "operator-supplied PKCS#1 RSA", setup: overwrite(SAKeyFile,
			pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rsaKey)}))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if tc.setup != nil {
				if err := os.MkdirAll(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				tc.setup(t, dir)
			}
			b := mustEnsure(t, Config{Dir: dir, Clock: testingclock.NewFakePassiveClock(t0)})
			pubPEM, err := os.ReadFile(b.Paths.SAPub)
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(pubPEM)
			if block == nil || block.Type != "PUBLIC KEY" {
				t.Fatalf("sa.pub is not a PUBLIC KEY PEM: %q", pubPEM)
			}
			pub, err := x509.ParsePKIXPublicKey(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			if !b.ServiceAccountKey.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(pub) {
				t.Error("sa.pub does not match sa.key")
			}
			if tc.setup != nil && !rsaKey.PublicKey.Equal(pub) {
				t.Error("operator-supplied sa.key was replaced")
			}
		})
	}
}

func TestServingCertVerifiesForEachSAN(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	extra := []string{"rudder.example.com", "10.1.2.3", "fd00::1", "*.apps.example.com"}
	b := mustEnsure(t, Config{Dir: t.TempDir(), Hosts: extra, Clock: clk})

	names := []string{"127.0.0.1", "::1", "localhost", "kubernetes", "kubernetes.default",
		"kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
		"rudder.example.com", "10.1.2.3", "fd00::1", "foo.apps.example.com"}
	if h, err := os.Hostname(); err == nil && validDNSName(strings.ToLower(h)) {
		names = append(names, h)
	}
	cases := []struct {
		name    string
		wantErr bool
	}{
		{name: "example.org", wantErr: true},
		{name: "10.9.9.9", wantErr: true},
	}
	for _, n := range names {
		cases = append(cases, struct {
			name    string
			wantErr bool
		}{name: n})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.ServingCert.Leaf.Verify(x509.VerifyOptions{
				Roots:       b.CAPool,
				CurrentTime: clk.Now(),
				DNSName:     tc.name,
				KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Verify(%q) error = %v, wantErr %v", tc.name, err, tc.wantErr)
			}
			// x509 verification is what a client does in principle; a real
			// handshake proves the tls.Certificate is wired as served.
			err = handshake(b, tc.name, clk.Now())
			if (err != nil) != tc.wantErr {
				t.Fatalf("handshake as %q error = %v, wantErr %v", tc.name, err, tc.wantErr)
			}
		})
	}
}

func handshake(b *Bundle, serverName string, now time.Time) error {
	cconn, sconn := net.Pipe()
	defer cconn.Close()
	defer sconn.Close()
	timeNow := func() time.Time { return now }
	server := tls.Server(sconn, &tls.Config{Certificates: []tls.Certificate{b.ServingCert}, Time: timeNow})
	client := tls.Client(cconn, &tls.Config{RootCAs: b.CAPool, ServerName: serverName, Time: timeNow})
	done := make(chan error, 1)
	go func() {
		err := server.Handshake()
		sconn.Close() // unblock the client if the server side failed
		done <- err
	}()
	err := client.Handshake()
	cconn.Close() // unblock the server if the client rejected it
	<-done
	return err
}

func TestAdminCert(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	b := mustEnsure(t, Config{Dir: t.TempDir(), Clock: clk})
	if _, err := tls.X509KeyPair(b.AdminCertPEM, b.AdminKeyPEM); err != nil {
		t.Fatalf("admin cert and key do not pair: %v", err)
	}
	cert, _, err := parsePair(b.AdminCertPEM, b.AdminKeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	if cert.Subject.CommonName != AdminCommonName {
		t.Errorf("CN = %q, want %q", cert.Subject.CommonName, AdminCommonName)
	}
	if !slices.Equal(cert.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("O = %v, want [system:masters]", cert.Subject.Organization)
	}
	if !slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
		t.Errorf("ExtKeyUsage = %v, want [client auth]", cert.ExtKeyUsage)
	}
	for _, tc := range []struct {
		name    string
		usage   x509.ExtKeyUsage
		wantErr bool
	}{
		{name: "client auth", usage: x509.ExtKeyUsageClientAuth},
		{name: "server auth", usage: x509.ExtKeyUsageServerAuth, wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cert.Verify(x509.VerifyOptions{
				Roots: b.CAPool, CurrentTime: clk.Now(), KeyUsages: []x509.ExtKeyUsage{tc.usage},
			})
			if (err != nil) != tc.wantErr {
				t.Fatalf("Verify for %s: error = %v, wantErr %v", tc.name, err, tc.wantErr)
			}
		})
	}
}

func TestIssueClientCert(t *testing.T) {
	clk := testingclock.NewFakePassiveClock(t0)
	b := mustEnsure(t, Config{Dir: t.TempDir(), Clock: clk})
	cases := []struct {
		name         string
		user         string
		groups       []string
		ttl          time.Duration
		wantNotAfter time.Time
		wantErr      bool
	}{
		{name: "node with group", user: "system:node:n1", groups: []string{"system:nodes"}, ttl: 24 * time.Hour,
			wantNotAfter: t0.Add(24 * time.Hour)},
		{name: "user with several groups", user: "alice", groups: []string{"dev", "ops"}, ttl: time.Hour,
			wantNotAfter: t0.Add(time.Hour)},
		{name: "user without groups", user: "bob", ttl: time.Hour, wantNotAfter: t0.Add(time.Hour)},
		{name: "ttl beyond the CA is capped", user: "carol", ttl: 2 * caLifetime, wantNotAfter: t0.Add(caLifetime)},
		{name: "empty user", user: "", ttl: time.Hour, wantErr: true},
		{name: "zero ttl", user: "dave", ttl: 0, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			certPEM, keyPEM, err := b.IssueClientCert(tc.user, tc.groups, tc.ttl)
			if (err != nil) != tc.wantErr {
				t.Fatalf("IssueClientCert error = %v, wantErr %v", err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			cert, _, err := parsePair(certPEM, keyPEM)
			if err != nil {
				t.Fatalf("issued pair: %v", err)
			}
			if _, err := cert.Verify(x509.VerifyOptions{
				Roots: b.CAPool, CurrentTime: clk.Now(), KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			}); err != nil {
				t.Errorf("issued cert does not verify: %v", err)
			}
			if cert.Subject.CommonName != tc.user {
				t.Errorf("CN = %q, want %q", cert.Subject.CommonName, tc.user)
			}
			if !slices.Equal(cert.Subject.Organization, tc.groups) {
				t.Errorf("O = %v, want %v", cert.Subject.Organization, tc.groups)
			}
			if !cert.NotAfter.Equal(tc.wantNotAfter) {
				t.Errorf("NotAfter = %v, want %v", cert.NotAfter, tc.wantNotAfter)
			}
			if cert.IsCA {
				t.Error("issued client cert is a CA")
			}
		})
	}
}

func remove(name string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		if err := os.Remove(filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

func overwrite(name string, data []byte) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func copyFile(from, to string) func(*testing.T, string) {
	return func(t *testing.T, dir string) {
		t.Helper()
		copyBetween(t, filepath.Join(dir, from), filepath.Join(dir, to))
	}
}

func copyBetween(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func readAll(dir string) map[string][]byte {
	out := map[string][]byte{}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = data
	}
	return out
}
