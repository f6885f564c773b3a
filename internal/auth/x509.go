package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/utils/clock"
)

// CredentialIDKey is the User.Extra key under which authenticators record
// which credential was used, so audit logs can tell two credentials of one
// user apart. Certificates record "X509SHA256=<hex SHA-256 of the DER>".
const CredentialIDKey = "authentication.kubernetes.io/credential-id"

// certUIDOID is the subject attribute upstream reads as the user's UID
// (Kubernetes' private enterprise number, arc 2).
var certUIDOID = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57683, 2}

// X509Config configures NewX509Authenticator.
type X509Config struct {
	// Clock decides whether a certificate is expired. Defaults to the real
	// clock.
	Clock clock.PassiveClock
}

// X509Authenticator identifies the user of a request by its TLS client
// certificate: the subject's CommonName is the user name, each
// Organization a group, and a 1.3.6.1.4.1.57683.2 attribute the UID.
//
// It trusts the chain verification the TLS server already did
// (tls.VerifyClientCertIfGiven with the cluster CA in ClientCAs) and takes
// the chains from r.TLS.VerifiedChains. It checks validity dates and the
// client-auth usage again on every request anyway, because one HTTP/2
// connection can outlive the certificate it was opened with: the handshake
// was the only check, and requests keep coming after NotAfter.
type X509Authenticator struct {
	clock clock.PassiveClock
}

// NewX509Authenticator returns the client-certificate authenticator.
func NewX509Authenticator(cfg X509Config) *X509Authenticator {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &X509Authenticator{clock: cfg.Clock}
}

// errNotVerified is returned for a certificate the TLS layer passed up
// without verifying it, which happens when the server asks for client
// certificates without giving the CA pool to check them (tls.RequestClientCert).
// Such a certificate proves nothing, so it is rejected rather than ignored.
var errNotVerified = errors.New("certificate was not verified against a trusted CA")

// AuthenticateRequest implements Authenticator. It returns ok=false when
// the request has no client certificate or the certificate has an empty
// CommonName (as upstream, the next authenticator may still succeed), and
// an error for a certificate that is unverified, expired, not yet valid,
// restricted to other usages than client auth, or whose UID attribute is
// malformed.
func (a *X509Authenticator) AuthenticateRequest(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	if len(r.TLS.VerifiedChains) == 0 {
		return nil, false, fmt.Errorf("verifying certificate %s failed: %w", certificateID(leaf), errNotVerified)
	}
	now := a.clock.Now()
	var errs []error
	for _, chain := range r.TLS.VerifiedChains {
		if len(chain) == 0 {
			continue
		}
		if err := checkChain(chain, now); err != nil {
			errs = append(errs, fmt.Errorf("verifying certificate %s failed: %w", certificateID(chain[0]), err))
			continue
		}
		u, ok, err := userFromCertificate(chain[0])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return u, true, nil
		}
	}
	return nil, false, utilerrors.NewAggregate(errs)
}

// checkChain re-applies the two checks of x509.Verify that depend on when
// and what for, not on signatures: every certificate must be within its
// validity period, and every certificate that restricts its extended key
// usages must allow client auth (Go and upstream treat a certificate that
// lists no usages as allowing all). The errors are crypto/x509's own, so
// the messages read as upstream's.
func checkChain(chain []*x509.Certificate, now time.Time) error {
	for _, c := range chain {
		if now.Before(c.NotBefore) {
			return x509.CertificateInvalidError{Cert: c, Reason: x509.Expired,
				Detail: fmt.Sprintf("current time %s is before %s", now.UTC().Format(time.RFC3339), c.NotBefore.UTC().Format(time.RFC3339))}
		}
		if now.After(c.NotAfter) {
			return x509.CertificateInvalidError{Cert: c, Reason: x509.Expired,
				Detail: fmt.Sprintf("current time %s is after %s", now.UTC().Format(time.RFC3339), c.NotAfter.UTC().Format(time.RFC3339))}
		}
	}
	for _, c := range chain {
		if len(c.ExtKeyUsage) == 0 && len(c.UnknownExtKeyUsage) == 0 {
			continue
		}
		if !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageAny) && !slices.Contains(c.ExtKeyUsage, x509.ExtKeyUsageClientAuth) {
			return x509.CertificateInvalidError{Cert: chain[0], Reason: x509.IncompatibleUsage}
		}
	}
	return nil
}

// userFromCertificate maps a verified leaf certificate to its user.
func userFromCertificate(c *x509.Certificate) (*User, bool, error) {
	if c.Subject.CommonName == "" {
		return nil, false, nil
	}
	uid, err := certificateUID(c.Subject)
	if err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256(c.Raw)
	return &User{
		Name: c.Subject.CommonName,
		UID:  uid,
		// Cloned: the certificate is shared with the TLS connection state.
		Groups: slices.Clone(c.Subject.Organization),
		Extra:  map[string][]string{CredentialIDKey: {"X509SHA256=" + hex.EncodeToString(sum[:])}},
	}, true, nil
}

// certificateUID reads the optional UID attribute. More than one, a
// non-string or an empty one is an error rather than "no UID": a CA that
// signs such a subject is confused, and guessing would give two different
// identities the same UID.
func certificateUID(subject pkix.Name) (string, error) {
	var uid string
	found := false
	for _, atv := range subject.Names {
		if !atv.Type.Equal(certUIDOID) {
			continue
		}
		if found {
			return "", errors.New("expected 1 UID, but found multiple")
		}
		found = true
		s, ok := atv.Value.(string)
		if !ok {
			return "", errors.New("unable to parse UID into a string")
		}
		if s == "" {
			return "", errors.New("UID cannot be an empty string")
		}
		uid = s
	}
	return uid, nil
}

// certificateID names a certificate in errors by serial number and key
// identifiers, as upstream does: an operator can find those in the CA's
// records, while the subject is unverified text whenever the error is
// about verification.
func certificateID(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%d, SKID=%s, AKID=%s", c.SerialNumber, colonHex(c.SubjectKeyId), colonHex(c.AuthorityKeyId))
}

func colonHex(b []byte) string {
	var sb strings.Builder
	for i, x := range b {
		if i > 0 {
			sb.WriteByte(':')
		}
		fmt.Fprintf(&sb, "%02X", x)
	}
	return sb.String()
}
