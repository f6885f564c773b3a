package pki

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/utils/clock"
)

// Identities of the certificates between the API server and kubelets.
const (
	// KubeletClientCommonName is the API server's identity to kubelets,
	// as upstream's kube-apiserver-kubelet-client.
	KubeletClientCommonName = "kube-apiserver-kubelet-client"
	// SimNodeServingCommonName names the serving certificate every
	// simulated node of a fleet shares.
	SimNodeServingCommonName = "rudder-simnode-kubelet"
)

// IssueServingCert signs a server-auth certificate for the given names
// and returns it ready to serve. The key is fresh ECDSA P-256; the
// lifetime is capped at the CA's. Nothing is written to disk: these are
// issued at each start (the kubelet API of simulated nodes).
func (b *Bundle) IssueServingCert(commonName string, ips []net.IP, dnsNames []string, ttl time.Duration) (tls.Certificate, error) {
	if commonName == "" {
		return tls.Certificate{}, errors.New("pki: serving certificate needs a common name")
	}
	if ttl <= 0 {
		return tls.Certificate{}, fmt.Errorf("pki: serving certificate ttl must be positive, got %s", ttl)
	}
	leaf, err := b.issue(leafSpec{
		subject:  pkix.Name{CommonName: commonName},
		usage:    x509.ExtKeyUsageServerAuth,
		ttl:      ttl,
		ips:      ips,
		dnsNames: dnsNames,
	})
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(leaf.certPEM, leaf.keyPEM)
}

// KubeletClientCert issues the API server's client certificate to
// kubelets, ready to present. It is issued at each start, like the
// in-memory credentials of other components.
func (b *Bundle) KubeletClientCert(ttl time.Duration) (tls.Certificate, error) {
	certPEM, keyPEM, err := b.IssueClientCert(KubeletClientCommonName, nil, ttl)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(certPEM, keyPEM)
}

// LoadCA loads the CA of the PKI in dir (ca.crt and ca.key) and nothing
// else, for issuing certificates away from the server (rudder simnodes
// serving the kubelet API). It never writes.
func LoadCA(dir string) (*Bundle, error) {
	certPEM, err := os.ReadFile(filepath.Join(dir, CACertFile))
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	keyPEM, err := os.ReadFile(filepath.Join(dir, CAKeyFile))
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	cert, key, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrUnusable, filepath.Join(dir, CACertFile), err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("%w: %s is not a CA certificate", ErrUnusable, filepath.Join(dir, CACertFile))
	}
	b := &Bundle{clock: clock.RealClock{}}
	b.setCA(cert, certPEM, key)
	return b, nil
}
