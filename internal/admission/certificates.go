package admission

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	"github.com/rudder-dev/rudder/internal/auth"
)

// The three CertificateSigningRequest plugins, as upstream has them.
// Approving a CSR and issuing its certificate are separate powers, and
// both are granted per signer: RBAC rules on the virtual resource
// "signers" in certificates.k8s.io, named by signerName, with the verb
// "approve" or "sign". A rule for "<domain>/*" (e.g. example.com/*)
// covers every signer of that domain.
//
//	CertificateApproval            certificatesigningrequests/approval updates need approve
//	CertificateSigning             status updates that change status.certificate need sign
//	CertificateSubjectRestriction  no kube-apiserver-client CSR may ask for system:masters
//
// The first two check the signer of the stored CSR, so a request cannot
// change the signer to one it may approve on the way.

// SignerAuthorizer is what the CSR plugins ask about signers;
// auth.Authorizer (the server's authorizer chain) implements it.
type SignerAuthorizer interface {
	Authorize(a auth.Attributes) (d auth.Decision, reason string, err error)
}

var certCSRsResource = certificatesv1.Resource("certificatesigningrequests")

// certAuthorizedForSigner reports whether u may verb signerName, directly
// or through the wildcard of its domain. An authorizer error counts as a
// no, as upstream has it; it is logged, not shown to the client.
func certAuthorizedForSigner(az SignerAuthorizer, u *auth.User, verb, signerName string) bool {
	domain, _, _ := strings.Cut(signerName, "/")
	for _, name := range []string{signerName, domain + "/*"} {
		d, reason, err := az.Authorize(auth.Attributes{User: u, Verb: verb, ResourceRequest: true,
			APIGroup: certificatesv1.GroupName, APIVersion: "*", Resource: "signers", Name: name})
		if err != nil {
			slog.Debug("cannot authorize signer", "verb", verb, "signer", name, "reason", reason, "err", err)
		}
		if d == auth.DecisionAllow {
			return true
		}
	}
	return false
}

// CertificateApproval lets only users who may approve for a CSR's signer
// approve or deny it.
type CertificateApproval struct {
	Authorizer SignerAuthorizer
}

func (CertificateApproval) Name() string { return "CertificateApproval" }

// Validate implements Validator.
func (p CertificateApproval) Validate(_ context.Context, a *Attributes) error {
	if a.Operation != Update || a.Subresource != "approval" || a.Resource.GroupResource() != certCSRsResource {
		return nil
	}
	csr, ok := a.OldObject.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbiddenFor(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.OldObject))
	}
	if !certAuthorizedForSigner(p.Authorizer, a.User, "approve", csr.Spec.SignerName) {
		return forbiddenFor(a, fmt.Errorf("user not permitted to approve requests with signerName %q", csr.Spec.SignerName))
	}
	return nil
}

// CertificateSigning lets only users who may sign for a CSR's signer set
// its certificate.
type CertificateSigning struct {
	Authorizer SignerAuthorizer
}

func (CertificateSigning) Name() string { return "CertificateSigning" }

// Validate implements Validator.
func (p CertificateSigning) Validate(_ context.Context, a *Attributes) error {
	if a.Operation != Update || a.Subresource != "status" || a.Resource.GroupResource() != certCSRsResource {
		return nil
	}
	old, ok := a.OldObject.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbiddenFor(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.OldObject))
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbiddenFor(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.Object))
	}
	// Conditions and other status fields are not the signer's alone.
	if apiequality.Semantic.DeepEqual(old.Status.Certificate, csr.Status.Certificate) {
		return nil
	}
	if !certAuthorizedForSigner(p.Authorizer, a.User, "sign", old.Spec.SignerName) {
		return forbiddenFor(a, fmt.Errorf("user not permitted to sign requests with signerName %q", old.Spec.SignerName))
	}
	return nil
}

// CertificateSubjectRestriction refuses kube-apiserver-client CSRs that
// ask for the system:masters group: a certificate in that group is
// cluster-admin that RBAC cannot take back.
type CertificateSubjectRestriction struct{}

func (CertificateSubjectRestriction) Name() string { return "CertificateSubjectRestriction" }

// Validate implements Validator.
func (CertificateSubjectRestriction) Validate(_ context.Context, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "" || a.Resource.GroupResource() != certCSRsResource {
		return nil
	}
	csr, ok := a.Object.(*certificatesv1.CertificateSigningRequest)
	if !ok {
		return forbiddenFor(a, fmt.Errorf("expected type CertificateSigningRequest, got: %T", a.Object))
	}
	if csr.Spec.SignerName != certificatesv1.KubeAPIServerClientSignerName {
		return nil
	}
	req, err := certParseCSR(csr.Spec.Request)
	if err != nil {
		return forbiddenFor(a, fmt.Errorf("failed to parse CSR: %v", err))
	}
	if slices.Contains(req.Subject.Organization, auth.SystemPrivilegedGroup) {
		return forbiddenFor(a, fmt.Errorf("use of %s signer with system:masters group is not allowed", certificatesv1.KubeAPIServerClientSignerName))
	}
	return nil
}
