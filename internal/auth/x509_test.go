package auth

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// testCA is a real CA made for the test, with crypto/x509.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
}

var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: name},
		NotBefore:             testNow.Add(-24 * time.Hour),
		NotAfter:              testNow.Add(10 * 365 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key}
}

type certOpts struct {
	cn        string
	orgs      []string
	extra     []pkix.AttributeTypeAndValue // e.g. UID attributes
	usages    []x509.ExtKeyUsage
	notBefore time.Time
	notAfter  time.Time
}

var serial int64 = 100

// issue signs a leaf certificate; its zero options give a client-auth
// certificate valid around testNow.
func (ca *testCA) issue(t *testing.T, o certOpts) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if o.notBefore.IsZero() {
		o.notBefore = testNow.Add(-time.Hour)
	}
	if o.notAfter.IsZero() {
		o.notAfter = testNow.Add(time.Hour)
	}
	if o.usages == nil {
		o.usages = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	}
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial),
		Subject:      pkix.Name{CommonName: o.cn, Organization: o.orgs, ExtraNames: o.extra},
		NotBefore:    o.notBefore,
		NotAfter:     o.notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  o.usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key
}

func credentialID(c *x509.Certificate) map[string][]string {
	sum := sha256.Sum256(c.Raw)
	return map[string][]string{CredentialIDKey: {"X509SHA256=" + hex.EncodeToString(sum[:])}}
}

func TestX509Authenticator(t *testing.T) {
	ca := newTestCA(t, "test-ca")
	uidOID := asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}

	valid, _ := ca.issue(t, certOpts{cn: "jane", orgs: []string{"devs", "ops"}})
	noOrgs, _ := ca.issue(t, certOpts{cn: "solo"})
	withUID, _ := ca.issue(t, certOpts{cn: "jane", extra: []pkix.AttributeTypeAndValue{{Type: uidOID, Value: "uid-42"}}})
	twoUIDs, _ := ca.issue(t, certOpts{cn: "jane", extra: []pkix.AttributeTypeAndValue{{Type: uidOID, Value: "a"}, {Type: uidOID, Value: "b"}}})
	emptyUID, _ := ca.issue(t, certOpts{cn: "jane", extra: []pkix.AttributeTypeAndValue{{Type: uidOID, Value: ""}}})
	noUsages, _ := ca.issue(t, certOpts{cn: "legacy", usages: []x509.ExtKeyUsage{}})
	anyUsage, _ := ca.issue(t, certOpts{cn: "any", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}})
	serverOnly, _ := ca.issue(t, certOpts{cn: "server", usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}})
	expired, _ := ca.issue(t, certOpts{cn: "old", notBefore: testNow.Add(-48 * time.Hour), notAfter: testNow.Add(-time.Hour)})
	future, _ := ca.issue(t, certOpts{cn: "new", notBefore: testNow.Add(time.Hour), notAfter: testNow.Add(48 * time.Hour)})
	noCN, _ := ca.issue(t, certOpts{orgs: []string{"devs"}})

	verified := func(leaf *x509.Certificate) *tls.ConnectionState {
		return &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}, VerifiedChains: [][]*x509.Certificate{{leaf, ca.cert}}}
	}

	tests := []struct {
		name    string
		state   *tls.ConnectionState
		want    *User
		wantErr string // substring; "" means no error
	}{
		{"plain http", nil, nil, ""},
		{"tls without client certificate", &tls.ConnectionState{}, nil, ""},
		{"client certificate", verified(valid),
			&User{Name: "jane", Groups: []string{"devs", "ops"}, Extra: credentialID(valid)}, ""},
		{"no organizations", verified(noOrgs), &User{Name: "solo", Extra: credentialID(noOrgs)}, ""},
		{"uid attribute", verified(withUID), &User{Name: "jane", UID: "uid-42", Extra: credentialID(withUID)}, ""},
		{"two uid attributes", verified(twoUIDs), nil, "expected 1 UID, but found multiple"},
		{"empty uid attribute", verified(emptyUID), nil, "UID cannot be an empty string"},
		{"no extended usages means any", verified(noUsages), &User{Name: "legacy", Extra: credentialID(noUsages)}, ""},
		{"any usage", verified(anyUsage), &User{Name: "any", Extra: credentialID(anyUsage)}, ""},
		{"server-only certificate", verified(serverOnly), nil, "incompatible key usage"},
		{"expired certificate", verified(expired), nil, "certificate has expired or is not yet valid: current time 2026-05-01T12:00:00Z is after"},
		{"not yet valid certificate", verified(future), nil, "is before"},
		{"unverified certificate", &tls.ConnectionState{PeerCertificates: []*x509.Certificate{valid}}, nil, "not verified"},
		{"empty common name", verified(noCN), nil, ""},
	}
	a := NewX509Authenticator(X509Config{Clock: clocktesting.NewFakePassiveClock(testNow)})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api", nil)
			r.TLS = tc.state
			u, ok, err := a.AuthenticateRequest(r)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tc.wantErr)
				}
				if ok || u != nil {
					t.Errorf("got user %+v with an error", u)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if ok != (tc.want != nil) {
				t.Fatalf("ok = %v, want %v", ok, tc.want != nil)
			}
			if u != nil {
				// DER sorts a SET, so the certificate decides the order.
				slices.Sort(u.Groups)
			}
			if !reflect.DeepEqual(u, tc.want) {
				t.Errorf("user = %+v, want %+v", u, tc.want)
			}
		})
	}
}

func TestX509ErrorNamesCertificate(t *testing.T) {
	ca := newTestCA(t, "test-ca")
	expired, _ := ca.issue(t, certOpts{cn: "old", notBefore: testNow.Add(-48 * time.Hour), notAfter: testNow.Add(-time.Hour)})
	r := httptest.NewRequest("GET", "/", nil)
	r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{expired}, VerifiedChains: [][]*x509.Certificate{{expired, ca.cert}}}
	_, _, err := NewX509Authenticator(X509Config{Clock: clocktesting.NewFakePassiveClock(testNow)}).AuthenticateRequest(r)
	want := fmt.Sprintf("verifying certificate SN=%d, SKID=", expired.SerialNumber)
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v, want prefix %q", err, want)
	}
}

// TestX509OverRealTLS runs real handshakes against a server configured the
// way rudder's is (VerifyClientCertIfGiven with the CA pool), so the
// authenticator sees the VerifiedChains crypto/tls really produces.
func TestX509OverRealTLS(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	other := newTestCA(t, "other-ca")
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)

	now := time.Now()
	a := NewX509Authenticator(X509Config{})
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := a.AuthenticateRequest(r)
		switch {
		case err != nil:
			http.Error(w, err.Error(), http.StatusUnauthorized)
		case !ok:
			fmt.Fprint(w, "anonymous")
		default:
			fmt.Fprintf(w, "%s %s", u.Name, strings.Join(u.Groups, ","))
		}
	}))
	srv.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()

	clientCert := func(c *x509.Certificate, key *ecdsa.PrivateKey) []tls.Certificate {
		return []tls.Certificate{{Certificate: [][]byte{c.Raw}, PrivateKey: key, Leaf: c}}
	}
	good, goodKey := ca.issue(t, certOpts{cn: "admin", orgs: []string{SystemPrivilegedGroup}, notBefore: now.Add(-time.Hour), notAfter: now.Add(time.Hour)})
	foreign, foreignKey := other.issue(t, certOpts{cn: "mallory", notBefore: now.Add(-time.Hour), notAfter: now.Add(time.Hour)})

	tests := []struct {
		name      string
		certs     []tls.Certificate
		want      string
		wantFails bool // the handshake itself must fail
	}{
		{"cluster CA client", clientCert(good, goodKey), "admin system:masters", false},
		{"no client certificate", nil, "anonymous", false},
		{"certificate from another CA", clientCert(foreign, foreignKey), "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := srv.Client().Transport.(*http.Transport).Clone()
			// GetClientCertificate, unlike Certificates, sends the
			// certificate even when its issuer is not one the server
			// named as acceptable, which is what an attacker would do.
			tr.TLSClientConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				if len(tc.certs) == 0 {
					return &tls.Certificate{}, nil
				}
				return &tc.certs[0], nil
			}
			client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
			resp, err := client.Get(srv.URL)
			if tc.wantFails {
				if err == nil {
					resp.Body.Close()
					t.Fatal("handshake succeeded, want failure")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK || string(body) != tc.want {
				t.Errorf("got %d %q, want 200 %q", resp.StatusCode, body, tc.want)
			}
		})
	}
}
