package certificates

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certificateslisters "k8s.io/client-go/listers/certificates/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// SigningConfig configures the signer.
type SigningConfig struct {
	// CACertPEM and CAKeyPEM are the cluster CA that issues the
	// certificates (upstream's --cluster-signing-cert-file and
	// --cluster-signing-key-file). Required.
	CACertPEM, CAKeyPEM []byte
	// Duration is the longest certificate issued
	// (--cluster-signing-duration); a request's spec.expirationSeconds can
	// only shorten it. Zero means DefaultSigningDuration.
	Duration time.Duration
}

// NewSigningDescriptor returns the signer ("csrsigning") for the cluster
// CA, issuing certificates of at most DefaultSigningDuration.
func NewSigningDescriptor(caCertPEM, caKeyPEM []byte) controller.Descriptor {
	return NewSigningDescriptorWithConfig(SigningConfig{CACertPEM: caCertPEM, CAKeyPEM: caKeyPEM})
}

// NewSigningDescriptorWithConfig returns the signer for cfg. A CA that
// does not parse, or whose key does not match, fails the controller's New.
func NewSigningDescriptorWithConfig(cfg SigningConfig) controller.Descriptor {
	if cfg.Duration <= 0 {
		cfg.Duration = DefaultSigningDuration
	}
	return controller.Descriptor{
		Name: "csrsigning",
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			ca, err := newAuthority(cfg.CACertPEM, cfg.CAKeyPEM)
			if err != nil {
				return nil, fmt.Errorf("csrsigning: %w", err)
			}
			inf := cx.Informers.Certificates().V1().CertificateSigningRequests()
			s := &signer{client: cx.Client, csrs: inf.Lister(), ca: ca, maxDuration: cfg.Duration, clock: cx.Clock}
			c := controller.New("csrsigning", 2, s)
			if _, err := inf.Informer().AddEventHandler(c.Handler()); err != nil {
				return nil, err
			}
			c.HasSynced = []cache.InformerSynced{inf.Informer().HasSynced}
			return []controller.Runnable{c}, nil
		},
	}
}

// signer reconciles one CertificateSigningRequest, keyed by name.
type signer struct {
	client      kubernetes.Interface
	csrs        certificateslisters.CertificateSigningRequestLister
	ca          *authority
	maxDuration time.Duration
	clock       clock.PassiveClock
}

// signingAction is what the signer does about a request.
type signingAction int

const (
	// leaveAlone: not ours, not approved, already issued or failed.
	leaveAlone signingAction = iota
	// markFailed: approved, but the request breaks its signer's rules; a
	// Failed condition tells the requester, and nothing is issued, ever.
	markFailed
	// issue a certificate.
	issue
)

// planSigning decides what to do about csr, without I/O. For markFailed
// the error says which rule the request breaks; for issue, req is the
// parsed PKCS#10 request. An error with leaveAlone means the request
// could not be read and is worth retrying (it passed API validation).
func planSigning(csr *certificatesv1.CertificateSigningRequest) (signingAction, *x509.CertificateRequest, error) {
	if len(csr.Status.Certificate) > 0 || !isApproved(csr) || hasCondition(csr, certificatesv1.CertificateFailed) {
		return leaveAlone, nil, nil
	}
	rules, ok := signerRules[csr.Spec.SignerName]
	if !ok {
		return leaveAlone, nil, nil // another signer's request
	}
	req, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return leaveAlone, nil, fmt.Errorf("unable to parse csr %q: %w", csr.Name, err)
	}
	if err := rules(req, csr.Spec.Usages); err != nil {
		return markFailed, nil, err
	}
	return issue, req, nil
}

func (s *signer) Reconcile(ctx context.Context, name string) (controller.Result, error) {
	cached, err := s.csrs.Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	action, req, err := planSigning(cached)
	csr := cached.DeepCopy()
	switch action {
	case leaveAlone:
		return controller.Result{}, err
	case markFailed:
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue, Reason: "SignerValidationFailure",
			Message: err.Error(), LastUpdateTime: metav1.NewTime(s.clock.Now()), LastTransitionTime: metav1.NewTime(s.clock.Now()),
		})
		if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
			return controller.Result{}, fmt.Errorf("error adding failure condition for csr %q: %w", name, ignoreGone(err))
		}
		return controller.Result{}, nil
	}
	cert, err := s.ca.sign(req, csr.Spec.Usages, certDuration(csr.Spec.ExpirationSeconds, s.maxDuration), s.clock.Now())
	if err != nil {
		return controller.Result{}, fmt.Errorf("error auto signing csr %q: %w", name, err)
	}
	csr.Status.Certificate = cert
	if _, err := s.client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
		return controller.Result{}, fmt.Errorf("error updating signature for csr %q: %w", name, ignoreGone(err))
	}
	return controller.Result{}, nil
}

// ignoreGone turns a 404 (the request was deleted meanwhile) into nil:
// its deletion ends the story.
func ignoreGone(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// signerRules are the signers this controller serves, each with the
// rules a request must follow to be signed by it: what the certificate may
// be used for and who it may name. Requests for other signers are left to
// their own controllers.
var signerRules = map[string]func(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error{
	// Any client of the API server: the certificate's CN is the user name
	// and its Os the groups, so an approver must read them.
	certificatesv1.KubeAPIServerClientSignerName: checkAPIServerClient,
	// A kubelet's client certificate: system:node:<name> in system:nodes,
	// no SANs.
	certificatesv1.KubeAPIServerClientKubeletSignerName: checkKubeletClient,
	// A kubelet's serving certificate, for the API server to reach it:
	// system:node:<name> in system:nodes, with the node's DNS or IP SANs.
	certificatesv1.KubeletServingSignerName: checkKubeletServing,
}

var (
	errOrganization   = errors.New("subject organization is not system:nodes")
	errCommonName     = errors.New("subject common name does not begin with system:node:")
	errDNSOrIPNeeded  = errors.New("DNS or IP subjectAltName is required")
	errDNSNotAllowed  = errors.New("DNS subjectAltNames are not allowed")
	errEmailForbidden = errors.New("Email subjectAltNames are not allowed") // upstream's words, capital included
	errIPNotAllowed   = errors.New("IP subjectAltNames are not allowed")
	errURINotAllowed  = errors.New("URI subjectAltNames are not allowed")
)

func checkAPIServerClient(_ *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	hasClientAuth := false
	for _, u := range usages {
		switch u {
		case certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment:
		case certificatesv1.UsageClientAuth:
			hasClientAuth = true
		default:
			return fmt.Errorf("invalid usage for client certificate: %s", u)
		}
	}
	if !hasClientAuth {
		return fmt.Errorf("missing required usage for client certificate: %s", certificatesv1.UsageClientAuth)
	}
	return nil
}

func checkKubeletClient(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errOrganization
	}
	switch {
	case len(req.DNSNames) > 0:
		return errDNSNotAllowed
	case len(req.EmailAddresses) > 0:
		return errEmailForbidden
	case len(req.IPAddresses) > 0:
		return errIPNotAllowed
	case len(req.URIs) > 0:
		return errURINotAllowed
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errCommonName
	}
	return usagesAre(usages, certificatesv1.UsageClientAuth)
}

func checkKubeletServing(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage) error {
	if !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		return errOrganization
	}
	switch {
	case len(req.DNSNames) == 0 && len(req.IPAddresses) == 0:
		return errDNSOrIPNeeded
	case len(req.EmailAddresses) > 0:
		return errEmailForbidden
	case len(req.URIs) > 0:
		return errURINotAllowed
	}
	if err := usagesAre(usages, certificatesv1.UsageServerAuth); err != nil {
		return err
	}
	if !strings.HasPrefix(req.Subject.CommonName, "system:node:") {
		return errCommonName
	}
	return nil
}

// usagesAre accepts exactly {digital signature, key encipherment, auth}
// or, for keys that cannot encipher (ECDSA, Ed25519), {digital
// signature, auth}, in any order and without repeats mattering.
func usagesAre(usages []certificatesv1.KeyUsage, auth certificatesv1.KeyUsage) error {
	got := slices.Clone(usages)
	slices.Sort(got)
	got = slices.Compact(got)
	withRSA := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, auth}
	slices.Sort(withRSA)
	noRSA := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, auth}
	slices.Sort(noRSA)
	if slices.Equal(got, withRSA) || slices.Equal(got, noRSA) {
		return nil
	}
	names := make([]string, len(withRSA))
	for i, u := range withRSA {
		names[i] = string(u)
	}
	return fmt.Errorf("usages did not match [%s]", strings.Join(names, " "))
}

// parseRequest decodes spec.request (validated by the API server).
func parseRequest(data []byte) (*x509.CertificateRequest, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return nil, errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	return x509.ParseCertificateRequest(block.Bytes)
}

// isApproved: Approved and not Denied. Denied wins if a stored object has
// both, as it can from before validation forbade it.
func isApproved(csr *certificatesv1.CertificateSigningRequest) bool {
	return hasCondition(csr, certificatesv1.CertificateApproved) && !hasCondition(csr, certificatesv1.CertificateDenied)
}

func hasCondition(csr *certificatesv1.CertificateSigningRequest, t certificatesv1.RequestConditionType) bool {
	for _, c := range csr.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
