package admission

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/auth"
)

var testCSRsGVR = schema.GroupVersionResource{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"}

// certGrants is an authorizer that allows "verb signers/name" pairs and
// records what it was asked.
type certGrants struct {
	allowed []string // "approve example.com/foo"
	err     error
	asked   []string
}

func (g *certGrants) Authorize(a auth.Attributes) (auth.Decision, string, error) {
	key := a.Verb + " " + a.Name
	g.asked = append(g.asked, key)
	if a.APIGroup != "certificates.k8s.io" || a.Resource != "signers" || !a.ResourceRequest {
		return auth.DecisionNoOpinion, "", nil
	}
	if slices.Contains(g.allowed, key) {
		return auth.DecisionAllow, "", nil
	}
	return auth.DecisionNoOpinion, "", g.err
}

// certRequestPEM makes a PEM CSR for cn in orgs.
func certRequestPEM(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func certCSR(name, signer string, request []byte) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Request: request}}
}

func TestCertificateApproval(t *testing.T) {
	user := &auth.User{Name: "alice"}
	cases := []struct {
		name    string
		grants  certGrants
		signer  string
		newSign string // the signer the request carries, if it tries to change it
		err     string
	}{
		{name: "approve on the signer", grants: certGrants{allowed: []string{"approve example.com/foo"}}, signer: "example.com/foo"},
		{name: "approve on the signer's domain", grants: certGrants{allowed: []string{"approve example.com/*"}}, signer: "example.com/foo"},
		{name: "no grant", signer: "example.com/foo",
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: user not permitted to approve requests with signerName "example.com/foo"`},
		{name: "sign is not approve", grants: certGrants{allowed: []string{"sign example.com/foo"}}, signer: "example.com/foo",
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: user not permitted to approve requests with signerName "example.com/foo"`},
		{name: "another domain's wildcard does not count", grants: certGrants{allowed: []string{"approve example.org/*"}}, signer: "example.com/foo",
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: user not permitted to approve requests with signerName "example.com/foo"`},
		{name: "the stored signer is checked, not the requested one", grants: certGrants{allowed: []string{"approve example.com/mine"}},
			signer: "example.com/other", newSign: "example.com/mine",
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: user not permitted to approve requests with signerName "example.com/other"`},
		{name: "an authorizer error is a no", grants: certGrants{err: errors.New("rbac down")}, signer: "example.com/foo",
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: user not permitted to approve requests with signerName "example.com/foo"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := certCSR("csr", tc.signer, nil)
			next := old.DeepCopy()
			if tc.newSign != "" {
				next.Spec.SignerName = tc.newSign
			}
			next.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: "True"}}
			p := CertificateApproval{Authorizer: &tc.grants}
			err := p.Validate(context.Background(), &Attributes{Operation: Update, Resource: testCSRsGVR, Subresource: "approval", Name: "csr", Object: next, OldObject: old, User: user})
			certCheck(t, err, tc.err)
		})
	}
	t.Run("other writes are not its business", func(t *testing.T) {
		g := &certGrants{}
		p := CertificateApproval{Authorizer: g}
		old := certCSR("csr", "example.com/foo", nil)
		for _, sub := range []string{"", "status"} {
			if err := p.Validate(context.Background(), &Attributes{Operation: Update, Resource: testCSRsGVR, Subresource: sub, Name: "csr", Object: old, OldObject: old, User: user}); err != nil {
				t.Errorf("subresource %q: %v", sub, err)
			}
		}
		if len(g.asked) != 0 {
			t.Errorf("asked %v", g.asked)
		}
	})
}

func TestCertificateSigning(t *testing.T) {
	user := &auth.User{Name: "signer-controller"}
	cases := []struct {
		name   string
		grants certGrants
		cert   []byte // status.certificate after the update
		err    string
	}{
		{name: "sign on the signer", grants: certGrants{allowed: []string{"sign example.com/foo"}}, cert: []byte("cert")},
		{name: "sign on the domain", grants: certGrants{allowed: []string{"sign example.com/*"}}, cert: []byte("cert")},
		{name: "no grant", cert: []byte("cert"),
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: user not permitted to sign requests with signerName "example.com/foo"`},
		{name: "approve is not sign", grants: certGrants{allowed: []string{"approve example.com/foo"}}, cert: []byte("cert"),
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: user not permitted to sign requests with signerName "example.com/foo"`},
		{name: "a status write that leaves the certificate alone needs nothing", cert: nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := certCSR("csr", "example.com/foo", nil)
			next := old.DeepCopy()
			next.Status.Certificate = tc.cert
			next.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateFailed, Status: "True"}}
			err := CertificateSigning{Authorizer: &tc.grants}.Validate(context.Background(), &Attributes{Operation: Update, Resource: testCSRsGVR, Subresource: "status", Name: "csr", Object: next, OldObject: old, User: user})
			certCheck(t, err, tc.err)
		})
	}
}

func TestCertificateSubjectRestriction(t *testing.T) {
	cases := []struct {
		name   string
		signer string
		req    []byte
		op     Operation
		err    string
	}{
		{name: "a client CSR for an ordinary group", signer: certificatesv1.KubeAPIServerClientSignerName, req: certRequestPEM(t, "bob", "devs")},
		{name: "a client CSR for system:masters", signer: certificatesv1.KubeAPIServerClientSignerName, req: certRequestPEM(t, "bob", "devs", "system:masters"),
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`},
		{name: "another signer may issue system:masters", signer: "example.com/foo", req: certRequestPEM(t, "bob", "system:masters")},
		{name: "an unparsable request", signer: certificatesv1.KubeAPIServerClientSignerName, req: []byte("junk"),
			err: `certificatesigningrequests.certificates.k8s.io "csr" is forbidden: failed to parse CSR: PEM block type must be CERTIFICATE REQUEST`},
		{name: "only creates are checked", op: Update, signer: certificatesv1.KubeAPIServerClientSignerName, req: certRequestPEM(t, "bob", "system:masters")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op := tc.op
			if op == "" {
				op = Create
			}
			csr := certCSR("csr", tc.signer, tc.req)
			err := CertificateSubjectRestriction{}.Validate(context.Background(), &Attributes{Operation: op, Resource: testCSRsGVR, Name: "csr", Object: csr, User: &auth.User{Name: "bob"}})
			certCheck(t, err, tc.err)
		})
	}
}

func certCheck(t *testing.T, err error, want string) {
	t.Helper()
	if want == "" {
		if err != nil {
			t.Fatalf("unexpected %v", err)
		}
		return
	}
	if err == nil || err.Error() != want || !apierrors.IsForbidden(err) {
		t.Fatalf("got %v, want 403 %q", err, want)
	}
}
