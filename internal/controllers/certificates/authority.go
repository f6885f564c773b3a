package certificates

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// Signing policy constants, upstream's.
const (
	// DefaultSigningDuration is --cluster-signing-duration's default: the
	// longest certificate the signer issues.
	DefaultSigningDuration = 365 * 24 * time.Hour
	// minDuration is the shortest certificate issued, whatever a request
	// asks: twice the backdate, so a certificate is valid for at least
	// five minutes after it is issued.
	minDuration = 10 * time.Minute
	// backdate moves NotBefore into the past, so a client whose clock is a
	// little behind the signer's can use the certificate at once.
	backdate = 5 * time.Minute
	// shortLived certificates keep their full requested lifetime after
	// now; longer ones lose the backdate from the end, about 1% of 8h.
	shortLived = 8 * time.Hour
)

// authority is the cluster CA as the signer uses it. It is immutable and
// safe for concurrent use.
type authority struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// newAuthority parses a CA certificate (the first CERTIFICATE block of
// certPEM) and its private key (PKCS#8, EC or PKCS#1 PEM).
func newAuthority(certPEM, keyPEM []byte) (*authority, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("CA certificate: %w", err)
	}
	parsed, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("CA key: %w", err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("CA key: %T cannot sign", parsed)
	}
	pub, ok := certs[0].PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return nil, errors.New("CA key does not match the CA certificate")
	}
	if !certs[0].IsCA {
		return nil, errors.New("CA certificate is not a CA (basic constraints)")
	}
	return &authority{cert: certs[0], key: key}, nil
}

// certDuration is the lifetime of a certificate for a request that asked
// for expirationSeconds (nil: no wish), given the signer's maximum.
func certDuration(expirationSeconds *int32, max time.Duration) time.Duration {
	if expirationSeconds == nil {
		return max
	}
	d := time.Duration(*expirationSeconds) * time.Second
	switch {
	case d > max:
		return max
	case d < minDuration:
		return minDuration
	}
	return d
}

// validity computes NotBefore and NotAfter for a certificate of lifetime
// ttl issued at now, never past the CA's own expiry.
func validity(now time.Time, ttl time.Duration, caNotAfter time.Time) (notBefore, notAfter time.Time, err error) {
	if !now.Before(caNotAfter) {
		return time.Time{}, time.Time{}, fmt.Errorf("refusing to sign a certificate that expired in the past: NotAfter=%v", caNotAfter)
	}
	notBefore = now.Add(-backdate)
	notAfter = now.Add(ttl)
	if ttl >= shortLived {
		notAfter = notAfter.Add(-backdate)
	}
	if notAfter.After(caNotAfter) {
		notAfter = caNotAfter
	}
	return notBefore, notAfter, nil
}

// sign issues a certificate for req: its subject and subject alternative
// names, the public key it proved it holds, the key usages of the API
// object, never a CA. It returns the certificate PEM.
func (a *authority) sign(req *x509.CertificateRequest, usages []certificatesv1.KeyUsage, ttl time.Duration, now time.Time) ([]byte, error) {
	if err := req.CheckSignature(); err != nil {
		return nil, fmt.Errorf("unable to verify certificate request signature: %w", err)
	}
	keyUsage, extUsages, err := x509Usages(usages)
	if err != nil {
		return nil, err
	}
	notBefore, notAfter, err := validity(now, ttl, a.cert.NotAfter)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("serial number: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               req.Subject,
		DNSNames:              req.DNSNames,
		IPAddresses:           req.IPAddresses,
		EmailAddresses:        req.EmailAddresses,
		URIs:                  req.URIs,
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              keyUsage,
		ExtKeyUsage:           extUsages,
		BasicConstraintsValid: true,
		IsCA:                  false,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, req.PublicKey, a.key)
	if err != nil {
		return nil, fmt.Errorf("failed to sign certificate: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

var (
	keyUsages = map[certificatesv1.KeyUsage]x509.KeyUsage{
		certificatesv1.UsageSigning:           x509.KeyUsageDigitalSignature,
		certificatesv1.UsageDigitalSignature:  x509.KeyUsageDigitalSignature,
		certificatesv1.UsageContentCommitment: x509.KeyUsageContentCommitment,
		certificatesv1.UsageKeyEncipherment:   x509.KeyUsageKeyEncipherment,
		certificatesv1.UsageKeyAgreement:      x509.KeyUsageKeyAgreement,
		certificatesv1.UsageDataEncipherment:  x509.KeyUsageDataEncipherment,
		certificatesv1.UsageCertSign:          x509.KeyUsageCertSign,
		certificatesv1.UsageCRLSign:           x509.KeyUsageCRLSign,
		certificatesv1.UsageEncipherOnly:      x509.KeyUsageEncipherOnly,
		certificatesv1.UsageDecipherOnly:      x509.KeyUsageDecipherOnly,
	}
	extKeyUsages = map[certificatesv1.KeyUsage]x509.ExtKeyUsage{
		certificatesv1.UsageAny:             x509.ExtKeyUsageAny,
		certificatesv1.UsageServerAuth:      x509.ExtKeyUsageServerAuth,
		certificatesv1.UsageClientAuth:      x509.ExtKeyUsageClientAuth,
		certificatesv1.UsageCodeSigning:     x509.ExtKeyUsageCodeSigning,
		certificatesv1.UsageEmailProtection: x509.ExtKeyUsageEmailProtection,
		certificatesv1.UsageSMIME:           x509.ExtKeyUsageEmailProtection,
		certificatesv1.UsageIPsecEndSystem:  x509.ExtKeyUsageIPSECEndSystem,
		certificatesv1.UsageIPsecTunnel:     x509.ExtKeyUsageIPSECTunnel,
		certificatesv1.UsageIPsecUser:       x509.ExtKeyUsageIPSECUser,
		certificatesv1.UsageTimestamping:    x509.ExtKeyUsageTimeStamping,
		certificatesv1.UsageOCSPSigning:     x509.ExtKeyUsageOCSPSigning,
		certificatesv1.UsageMicrosoftSGC:    x509.ExtKeyUsageMicrosoftServerGatedCrypto,
		certificatesv1.UsageNetscapeSGC:     x509.ExtKeyUsageNetscapeServerGatedCrypto,
	}
)

// x509Usages translates the API's usages into the certificate's key
// usage bits and sorted, deduplicated extended key usages.
func x509Usages(usages []certificatesv1.KeyUsage) (x509.KeyUsage, []x509.ExtKeyUsage, error) {
	var (
		ku           x509.KeyUsage
		ext          []x509.ExtKeyUsage
		unrecognized []certificatesv1.KeyUsage
	)
	for _, u := range usages {
		if bit, ok := keyUsages[u]; ok {
			ku |= bit
		} else if e, ok := extKeyUsages[u]; ok {
			ext = append(ext, e)
		} else {
			unrecognized = append(unrecognized, u)
		}
	}
	if len(unrecognized) > 0 {
		return 0, nil, fmt.Errorf("unrecognized usage values: %q", unrecognized)
	}
	slices.Sort(ext)
	return ku, slices.Compact(ext), nil
}
