package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/rudder-dev/rudder/internal/controller"
)

var testKey = sync.OnceValue(func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
})

func testRequest(t *testing.T, subject pkix.Name, dns []string, ips []net.IP) *x509.CertificateRequest {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dns, IPAddresses: ips}, testKey())
	if err != nil {
		t.Fatal(err)
	}
	req, err := x509.ParseCertificateRequest(der)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// testCA makes a CA valid from an hour ago for lifetime, as PEM.
func testCA(t *testing.T, lifetime time.Duration) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(-time.Hour + lifetime),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}

func TestCertDuration(t *testing.T) {
	cases := []struct {
		name      string
		requested *int32
		max, want time.Duration
	}{
		{"no wish: the maximum", nil, DefaultSigningDuration, 365 * 24 * time.Hour},
		{"shorter than the maximum", new(int32(3600)), DefaultSigningDuration, time.Hour},
		{"longer than the maximum", new(int32(48 * 3600)), 24 * time.Hour, 24 * time.Hour},
		{"below the ten-minute floor", new(int32(60)), time.Hour, 10 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := certDuration(tc.requested, tc.max); got != tc.want {
				t.Errorf("certDuration = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidity(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	farCA := now.Add(10 * 365 * 24 * time.Hour)
	cases := []struct {
		name                string
		ttl                 time.Duration
		caNotAfter          time.Time
		wantBefore, wantEnd time.Time
		wantErr             string
	}{
		{"short-lived keeps its whole lifetime", time.Hour, farCA, now.Add(-5 * time.Minute), now.Add(time.Hour), ""},
		{"long-lived loses the backdate", 24 * time.Hour, farCA, now.Add(-5 * time.Minute), now.Add(24*time.Hour - 5*time.Minute), ""},
		{"never past the CA", 24 * time.Hour, now.Add(time.Hour), now.Add(-5 * time.Minute), now.Add(time.Hour), ""},
		{"expired CA signs nothing", time.Hour, now.Add(-time.Second), time.Time{}, time.Time{}, "refusing to sign a certificate that expired in the past"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nb, na, err := validity(now, tc.ttl, tc.caNotAfter)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !nb.Equal(tc.wantBefore) || !na.Equal(tc.wantEnd) {
				t.Errorf("validity = %v..%v (%v), want %v..%v", nb, na, err, tc.wantBefore, tc.wantEnd)
			}
		})
	}
}

func TestSign(t *testing.T) {
	caPEM, keyPEM := testCA(t, 24*time.Hour)
	ca, err := newAuthority(caPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	req := testRequest(t, pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}},
		[]string{"n1.example.com"}, []net.IP{net.ParseIP("10.0.0.1")})
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment,
		certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth}
	now := time.Now()
	out, err := ca.sign(req, usages, 48*time.Hour, now)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(out)
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, DNSName: "n1.example.com", CurrentTime: now}); err != nil {
		t.Errorf("does not verify: %v", err)
	}
	if cert.IsCA || cert.Subject.CommonName != "system:node:n1" || !cert.IPAddresses[0].Equal(net.ParseIP("10.0.0.1")) {
		t.Errorf("certificate %+v", cert)
	}
	if cert.KeyUsage != x509.KeyUsageDigitalSignature|x509.KeyUsageKeyEncipherment ||
		!slices.Equal(cert.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}) {
		t.Errorf("usages %v %v", cert.KeyUsage, cert.ExtKeyUsage)
	}
	if cert.NotAfter.After(ca.cert.NotAfter) || !cert.NotAfter.Equal(ca.cert.NotAfter) {
		t.Errorf("NotAfter %v, want the CA's %v (the request outlives it)", cert.NotAfter, ca.cert.NotAfter)
	}

	if _, err := ca.sign(req, []certificatesv1.KeyUsage{"teleport"}, time.Hour, now); err == nil || !strings.Contains(err.Error(), `unrecognized usage values: ["teleport"]`) {
		t.Errorf("unknown usage: %v", err)
	}
}

func TestNewAuthority(t *testing.T) {
	caPEM, keyPEM := testCA(t, time.Hour*24)
	otherCA, otherKey := testCA(t, time.Hour*24)
	cases := []struct {
		name        string
		cert, key   []byte
		wantErrPart string
	}{
		{"matching pair", caPEM, keyPEM, ""},
		{"key of another CA", caPEM, otherKey, "CA key does not match"},
		{"no certificate", nil, keyPEM, "CA certificate"},
		{"no key", otherCA, nil, "CA key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := newAuthority(tc.cert, tc.key)
			if tc.wantErrPart == "" && err != nil || tc.wantErrPart != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErrPart)) {
				t.Errorf("err = %v, want %q", err, tc.wantErrPart)
			}
		})
	}
	t.Run("a bad CA fails the controller's New", func(t *testing.T) {
		d := NewSigningDescriptor(caPEM, otherKey)
		if _, err := d.New(context.Background(), &controller.Context{}); err == nil || d.Name != "csrsigning" {
			t.Errorf("New = %v for %q, want an error", err, d.Name)
		}
	})
}

func pemRequest(t *testing.T, req *x509.CertificateRequest) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: req.Raw})
}

func csrWith(t *testing.T, signer string, req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: "r"},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: pemRequest(t, req), SignerName: signer, Usages: usages}}
	for _, c := range conds {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: c, Status: corev1.ConditionTrue})
	}
	return csr
}

func TestPlanSigning(t *testing.T) {
	client := testRequest(t, pkix.Name{CommonName: "jane"}, nil, nil)
	node := testRequest(t, pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}, nil, nil)
	nodeServing := testRequest(t, pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}, nil, []net.IP{net.ParseIP("10.0.0.1")})
	clientAuth := []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}
	kubelet := []certificatesv1.KeyUsage{certificatesv1.UsageKeyEncipherment, certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature}
	serving := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	const (
		apiClient  = certificatesv1.KubeAPIServerClientSignerName
		nodeClient = certificatesv1.KubeAPIServerClientKubeletSignerName
		nodeServer = certificatesv1.KubeletServingSignerName
	)
	type cond = certificatesv1.RequestConditionType
	cases := []struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		want    signingAction
		message string
	}{
		{"pending", csrWith(t, apiClient, client, clientAuth), leaveAlone, ""},
		{"denied", csrWith(t, apiClient, client, clientAuth, cond("Denied")), leaveAlone, ""},
		{"approved and denied: denial wins", csrWith(t, apiClient, client, clientAuth, cond("Approved"), cond("Denied")), leaveAlone, ""},
		{"already failed", csrWith(t, apiClient, client, clientAuth, cond("Approved"), cond("Failed")), leaveAlone, ""},
		{"another signer's", csrWith(t, "example.com/signer", client, clientAuth, cond("Approved")), leaveAlone, ""},
		{"approved client", csrWith(t, apiClient, client, clientAuth, cond("Approved")), issue, ""},
		{"client asking to serve", csrWith(t, apiClient, client, serving, cond("Approved")), markFailed, "invalid usage for client certificate: server auth"},
		{"approved kubelet client, RSA usages", csrWith(t, nodeClient, node, kubelet, cond("Approved")), issue, ""},
		{"kubelet client with server usage", csrWith(t, nodeClient, node, append(kubelet[:2:2], certificatesv1.UsageServerAuth), cond("Approved")), markFailed,
			"usages did not match [client auth digital signature key encipherment]"},
		{"kubelet client for a user", csrWith(t, nodeClient, client, kubelet, cond("Approved")), markFailed, "subject organization is not system:nodes"},
		{"kubelet client with IP", csrWith(t, nodeClient, nodeServing, kubelet, cond("Approved")), markFailed, "IP subjectAltNames are not allowed"},
		{"approved serving", csrWith(t, nodeServer, nodeServing, serving, cond("Approved")), issue, ""},
		{"serving with client usage", csrWith(t, nodeServer, nodeServing, kubelet, cond("Approved")), markFailed,
			"usages did not match [digital signature key encipherment server auth]"},
	}
	issued := csrWith(t, apiClient, client, clientAuth, cond("Approved"))
	issued.Status.Certificate = []byte("x")
	cases = append(cases, struct {
		name    string
		csr     *certificatesv1.CertificateSigningRequest
		want    signingAction
		message string
	}{"already issued", issued, leaveAlone, ""})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, req, err := planSigning(tc.csr)
			if got != tc.want {
				t.Fatalf("action = %d (%v), want %d", got, err, tc.want)
			}
			switch got {
			case markFailed:
				if err == nil || err.Error() != tc.message {
					t.Errorf("failure = %v, want %q", err, tc.message)
				}
			case issue:
				if req == nil || err != nil {
					t.Errorf("issue without a request (%v)", err)
				}
			default:
				if err != nil {
					t.Errorf("leaveAlone with error %v", err)
				}
			}
		})
	}
}

func TestCandidates(t *testing.T) {
	node := testRequest(t, pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}, nil, nil)
	user := testRequest(t, pkix.Name{CommonName: "jane"}, nil, nil)
	kubelet := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	by := func(csr *certificatesv1.CertificateSigningRequest, username string) *certificatesv1.CertificateSigningRequest {
		csr.Spec.Username = username
		return csr
	}
	cases := []struct {
		name string
		csr  *certificatesv1.CertificateSigningRequest
		req  *x509.CertificateRequest
		want []string
	}{
		{"the node itself", by(csrWith(t, certificatesv1.KubeAPIServerClientKubeletSignerName, node, kubelet), "system:node:n1"), node, []string{"selfnodeclient", "nodeclient"}},
		{"a bootstrap identity", by(csrWith(t, certificatesv1.KubeAPIServerClientKubeletSignerName, node, kubelet), "system:bootstrap:abc"), node, []string{"nodeclient"}},
		{"a plain client certificate", by(csrWith(t, certificatesv1.KubeAPIServerClientSignerName, user, []certificatesv1.KeyUsage{"client auth"}), "jane"), user, nil},
		{"a node certificate through the generic signer", by(csrWith(t, certificatesv1.KubeAPIServerClientSignerName, node, kubelet), "system:node:n1"), node, nil},
		{"kubelet signer, not a node", by(csrWith(t, certificatesv1.KubeAPIServerClientKubeletSignerName, user, kubelet), "jane"), user, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, r := range candidates(tc.csr, tc.req) {
				got = append(got, r.subresource)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("candidates = %v, want %v", got, tc.want)
			}
		})
	}
	t.Run("settled requests are left alone", func(t *testing.T) {
		for _, c := range []certificatesv1.RequestConditionType{certificatesv1.CertificateApproved, certificatesv1.CertificateDenied} {
			if !settled(csrWith(t, certificatesv1.KubeAPIServerClientKubeletSignerName, node, kubelet, c)) {
				t.Errorf("%s request not settled", c)
			}
		}
		if settled(csrWith(t, certificatesv1.KubeAPIServerClientKubeletSignerName, node, kubelet)) {
			t.Error("pending request settled")
		}
	})
}

func TestReviewFor(t *testing.T) {
	csr := &certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{
		Username: "system:bootstrap:abc", UID: "u1", Groups: []string{"system:bootstrappers"},
		Extra: map[string]certificatesv1.ExtraValue{"k": {"v"}}}}
	got := reviewFor(csr, "nodeclient")
	ra := got.ResourceAttributes
	if got.User != "system:bootstrap:abc" || got.UID != "u1" || !slices.Equal(got.Groups, []string{"system:bootstrappers"}) ||
		!slices.Equal(got.Extra["k"], authorizationv1.ExtraValue{"v"}) ||
		ra == nil || *ra != (authorizationv1.ResourceAttributes{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", Subresource: "nodeclient", Verb: "create"}) {
		t.Errorf("review = %+v %+v", got, ra)
	}
}

// TestAPIReviewer checks the SubjectAccessReview the API reviewer would
// post, against a fake clientset: the API server does not serve it yet.
func TestAPIReviewer(t *testing.T) {
	cs := fake.NewClientset()
	var posted *authorizationv1.SubjectAccessReview
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		posted = a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		out := posted.DeepCopy()
		out.Status.Allowed = posted.Spec.User == "allowed"
		return true, out, nil
	})
	r := APIReviewer(&controller.Context{Client: cs})
	spec := reviewFor(&certificatesv1.CertificateSigningRequest{Spec: certificatesv1.CertificateSigningRequestSpec{Username: "allowed"}}, "nodeclient")
	if ok, err := r.Review(context.Background(), spec); !ok || err != nil {
		t.Errorf("allowed user: %v %v", ok, err)
	}
	if posted == nil || posted.Spec.ResourceAttributes.Subresource != "nodeclient" {
		t.Errorf("posted %+v", posted)
	}
	spec.User = "other"
	if ok, err := r.Review(context.Background(), spec); ok || err != nil {
		t.Errorf("other user: %v %v", ok, err)
	}
}
