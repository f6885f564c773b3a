package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// backdate keeps a freshly issued certificate valid on machines whose
// clocks lag ours, such as a node that joins seconds after issuance.
const backdate = time.Hour

type generated struct {
	cert    *x509.Certificate
	certPEM []byte
	key     crypto.Signer
	keyPEM  []byte
}

type leafSpec struct {
	subject  pkix.Name
	usage    x509.ExtKeyUsage
	ttl      time.Duration
	ips      []net.IP
	dnsNames []string
}

func newCA(now time.Time) (*generated, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: CACommonName},
		NotBefore:             now.Add(-backdate),
		NotAfter:              now.Add(caLifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The CA signs leaves only; an intermediate minted from a leaked
		// leaf key must not verify.
		MaxPathLen:     0,
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	return finish(der, key, keyPEM)
}

// issue signs a leaf with the bundle's CA. The lifetime is capped at the
// CA's so that no certificate outlives the root that vouches for it.
func (b *Bundle) issue(spec leafSpec) (*generated, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	now := b.clock.Now()
	notAfter := now.Add(spec.ttl)
	if notAfter.After(b.CACert.NotAfter) {
		notAfter = b.CACert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               spec.subject,
		NotBefore:             now.Add(-backdate),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{spec.usage},
		BasicConstraintsValid: true,
		IPAddresses:           spec.ips,
		DNSNames:              spec.dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, b.CACert, key.Public(), b.caKey)
	if err != nil {
		return nil, fmt.Errorf("pki: sign certificate for %q: %w", spec.subject.CommonName, err)
	}
	return finish(der, key, keyPEM)
}

func finish(der []byte, key crypto.Signer, keyPEM []byte) (*generated, error) {
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("pki: parse new certificate: %w", err)
	}
	return &generated{
		cert:    cert,
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:     key,
		keyPEM:  keyPEM,
	}, nil
}

// newKey makes an ECDSA P-256 key: small, fast to generate on every
// start-up that needs one, and accepted by every Kubernetes client.
func newKey() (crypto.Signer, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: generate key: %w", err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: marshal key: %w", err)
	}
	return key, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func newSerial() (*big.Int, error) {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return n, nil
}

// parseKey accepts the encodings openssl and other tools commonly write
// (PKCS#8, SEC 1 EC, PKCS#1 RSA; an "EC PARAMETERS" block before the key
// is skipped), as client-go's keyutil reads them, so that an operator can
// drop in their own CA or service-account key.
func parseKey(data []byte) (crypto.Signer, error) {
	key, err := keyutil.ParsePrivateKeyPEM(data)
	if err != nil {
		return nil, err
	}
	switch k := key.(type) {
	case *ecdsa.PrivateKey:
		return k, nil
	case *rsa.PrivateKey:
		if k.N.BitLen() < 2048 {
			return nil, fmt.Errorf("RSA key has %d bits, need at least 2048", k.N.BitLen())
		}
		return k, nil
	default:
		return nil, fmt.Errorf("unsupported key type %T (want ECDSA or RSA)", key)
	}
}

// parsePair parses the first certificate in certPEM and checks that keyPEM
// holds its private half.
func parsePair(certPEM, keyPEM []byte) (*x509.Certificate, crypto.Signer, error) {
	certs, err := certutil.ParseCertsPEM(certPEM)
	if err != nil {
		return nil, nil, err
	}
	cert := certs[0]
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	pub, ok := cert.PublicKey.(interface{ Equal(crypto.PublicKey) bool })
	if !ok || !pub.Equal(key.Public()) {
		return nil, nil, errors.New("private key does not match certificate")
	}
	return cert, key, nil
}

func publicKeyPEM(pub crypto.PublicKey) ([]byte, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("pki: marshal public key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), nil
}
