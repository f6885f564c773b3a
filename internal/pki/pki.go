package pki

import (
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"
)

// Error classes. Callers test with errors.Is; the wrapped message names
// the file and the reason.
var (
	// ErrInvalidConfig: the Config itself is wrong (no Dir, a --tls-san
	// that is neither an IP nor a DNS name).
	ErrInvalidConfig = errors.New("pki: invalid config")
	// ErrUnusable: a root of trust (CA or service-account key) exists on
	// disk but cannot be used, and Ensure refuses to replace it because
	// doing so would silently invalidate every credential issued from it.
	ErrUnusable = errors.New("pki: existing file unusable")
)

// File names inside Config.Dir.
const (
	CACertFile     = "ca.crt"
	CAKeyFile      = "ca.key"
	ServerCertFile = "server.crt"
	ServerKeyFile  = "server.key"
	AdminCertFile  = "admin.crt"
	AdminKeyFile   = "admin.key"
	SAKeyFile      = "sa.key"
	SAPubFile      = "sa.pub"
)

// Identities baked into the generated certificates.
const (
	CACommonName    = "rudder-ca"
	AdminCommonName = "rudder-admin"
	AdminGroup      = "system:masters"
)

const (
	caLifetime   = 10 * 365 * 24 * time.Hour
	leafLifetime = 365 * 24 * time.Hour
	// renewBefore is wide enough that a server restarted monthly never
	// serves an expired certificate.
	renewBefore = 30 * 24 * time.Hour
)

// Config says where the PKI lives and what the serving certificate must
// cover.
type Config struct {
	// Dir holds the files listed in the package doc. Required.
	Dir string
	// Hosts are extra SANs (IPs or DNS names) from --tls-san.
	Hosts []string
	// Clock decides validity and stamps new certificates. Defaults to the
	// real clock.
	Clock clock.PassiveClock
}

// Paths are the absolute locations of the files Ensure manages.
type Paths struct {
	CACert, CAKey         string
	ServerCert, ServerKey string
	AdminCert, AdminKey   string
	SAKey, SAPub          string
}

// Bundle is the loaded PKI. It is immutable once Ensure returns it and safe
// for concurrent use.
type Bundle struct {
	Paths Paths

	CACert *x509.Certificate
	CAPEM  []byte
	CAPool *x509.CertPool

	// ServingCert has Leaf set. Its chain is just the leaf: clients are
	// expected to trust the CA directly, as kubeconfigs do.
	ServingCert tls.Certificate

	AdminCertPEM, AdminKeyPEM []byte

	// ServiceAccountKey signs service-account tokens; ServiceAccountPubPEM
	// is what verifiers are given.
	ServiceAccountKey    crypto.Signer
	ServiceAccountPubPEM []byte

	// Written lists the files this Ensure call created or replaced, in
	// write order, so the server can log what changed on disk.
	Written []string

	caKey crypto.Signer
	clock clock.PassiveClock
}

// Ensure loads the PKI in cfg.Dir, creating or re-issuing whatever is
// missing or no longer fit for use (see the package doc for the rules).
// Errors wrap ErrInvalidConfig or ErrUnusable where they apply; anything
// else is an I/O or crypto failure.
func Ensure(cfg Config) (*Bundle, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: Dir is empty", ErrInvalidConfig)
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	ips, dnsNames, err := servingSANs(cfg.Hosts)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("pki: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: create %s: %w", dir, err)
	}
	p := func(name string) string { return filepath.Join(dir, name) }
	b := &Bundle{
		Paths: Paths{
			CACert: p(CACertFile), CAKey: p(CAKeyFile),
			ServerCert: p(ServerCertFile), ServerKey: p(ServerKeyFile),
			AdminCert: p(AdminCertFile), AdminKey: p(AdminKeyFile),
			SAKey: p(SAKeyFile), SAPub: p(SAPubFile),
		},
		clock: cfg.Clock,
	}
	if err := b.ensureCA(); err != nil {
		return nil, err
	}
	if err := b.ensureServing(ips, dnsNames); err != nil {
		return nil, err
	}
	if err := b.ensureAdmin(); err != nil {
		return nil, err
	}
	if err := b.ensureServiceAccountKey(); err != nil {
		return nil, err
	}
	return b, nil
}

// IssueClientCert signs a client-auth certificate for user with groups as
// its organizations, which is how Kubernetes maps x509 identities. The key
// is fresh ECDSA P-256. The lifetime is capped at the CA's.
func (b *Bundle) IssueClientCert(user string, groups []string, ttl time.Duration) (certPEM, keyPEM []byte, err error) {
	if user == "" {
		return nil, nil, errors.New("pki: client certificate needs a user name")
	}
	if ttl <= 0 {
		return nil, nil, fmt.Errorf("pki: client certificate ttl must be positive, got %s", ttl)
	}
	leaf, err := b.issue(leafSpec{
		subject: pkix.Name{CommonName: user, Organization: append([]string(nil), groups...)},
		usage:   x509.ExtKeyUsageClientAuth,
		ttl:     ttl,
	})
	if err != nil {
		return nil, nil, err
	}
	return leaf.certPEM, leaf.keyPEM, nil
}

func (b *Bundle) ensureCA() error {
	certPEM, err := os.ReadFile(b.Paths.CACert)
	switch {
	case errors.Is(err, os.ErrNotExist):
		// A ca.key without ca.crt was never handed to anyone (the cert is
		// written second), so it is safe to start over.
		ca, err := newCA(b.clock.Now())
		if err != nil {
			return err
		}
		if err := b.writePair(b.Paths.CAKey, ca.keyPEM, b.Paths.CACert, ca.certPEM); err != nil {
			return err
		}
		b.setCA(ca.cert, ca.certPEM, ca.key)
		return nil
	case err != nil:
		return fmt.Errorf("pki: %w", err)
	}

	keyPEM, err := os.ReadFile(b.Paths.CAKey)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnusable, b.Paths.CAKey, err)
	}
	cert, key, err := parsePair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrUnusable, b.Paths.CACert, err)
	}
	if !cert.IsCA || cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return fmt.Errorf("%w: %s is not a CA certificate", ErrUnusable, b.Paths.CACert)
	}
	if now := b.clock.Now(); !now.Before(cert.NotAfter) {
		return fmt.Errorf("%w: %s expired at %s; remove %s and %s to generate a new CA",
			ErrUnusable, b.Paths.CACert, cert.NotAfter.Format(time.RFC3339), CACertFile, CAKeyFile)
	}
	b.setCA(cert, certPEM, key)
	return nil
}

func (b *Bundle) setCA(cert *x509.Certificate, certPEM []byte, key crypto.Signer) {
	b.CACert, b.CAPEM, b.caKey = cert, certPEM, key
	b.CAPool = x509.NewCertPool()
	b.CAPool.AddCert(cert)
}

func (b *Bundle) ensureServing(ips []net.IP, dnsNames []string) error {
	reuse := func(cert *x509.Certificate) bool {
		return b.fresh(cert, x509.ExtKeyUsageServerAuth) && coversSANs(cert, ips, dnsNames)
	}
	certPEM, keyPEM, err := b.loadOrIssueLeaf(b.Paths.ServerKey, b.Paths.ServerCert, reuse, leafSpec{
		subject:  pkix.Name{CommonName: "rudder-apiserver"},
		usage:    x509.ExtKeyUsageServerAuth,
		ttl:      leafLifetime,
		ips:      ips,
		dnsNames: dnsNames,
	})
	if err != nil {
		return err
	}
	tc, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return fmt.Errorf("pki: %s: %w", b.Paths.ServerCert, err)
	}
	b.ServingCert = tc
	return nil
}

func (b *Bundle) ensureAdmin() error {
	reuse := func(cert *x509.Certificate) bool {
		return b.fresh(cert, x509.ExtKeyUsageClientAuth) &&
			cert.Subject.CommonName == AdminCommonName &&
			len(cert.Subject.Organization) == 1 && cert.Subject.Organization[0] == AdminGroup
	}
	certPEM, keyPEM, err := b.loadOrIssueLeaf(b.Paths.AdminKey, b.Paths.AdminCert, reuse, leafSpec{
		subject: pkix.Name{CommonName: AdminCommonName, Organization: []string{AdminGroup}},
		usage:   x509.ExtKeyUsageClientAuth,
		ttl:     leafLifetime,
	})
	if err != nil {
		return err
	}
	b.AdminCertPEM, b.AdminKeyPEM = certPEM, keyPEM
	return nil
}

// loadOrIssueLeaf returns the pair on disk if it parses, matches, and
// passes reuse; otherwise it issues spec and writes it. Any failure to load
// is a reason to re-issue, never an error: a leaf carries no trust of its
// own.
func (b *Bundle) loadOrIssueLeaf(keyPath, certPath string, reuse func(*x509.Certificate) bool, spec leafSpec) (certPEM, keyPEM []byte, err error) {
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if certErr == nil && keyErr == nil {
		if cert, _, err := parsePair(certPEM, keyPEM); err == nil && reuse(cert) {
			return certPEM, keyPEM, nil
		}
	}
	leaf, err := b.issue(spec)
	if err != nil {
		return nil, nil, err
	}
	if err := b.writePair(keyPath, leaf.keyPEM, certPath, leaf.certPEM); err != nil {
		return nil, nil, err
	}
	return leaf.certPEM, leaf.keyPEM, nil
}

// fresh reports whether cert chains to our CA for usage and stays valid
// past the renewal window.
func (b *Bundle) fresh(cert *x509.Certificate, usage x509.ExtKeyUsage) bool {
	now := b.clock.Now()
	_, err := cert.Verify(x509.VerifyOptions{
		Roots:       b.CAPool,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{usage},
	})
	return err == nil && now.Add(renewBefore).Before(cert.NotAfter)
}

func (b *Bundle) ensureServiceAccountKey() error {
	keyPEM, err := os.ReadFile(b.Paths.SAKey)
	var key crypto.Signer
	switch {
	case errors.Is(err, os.ErrNotExist):
		key, keyPEM, err = newKey()
		if err != nil {
			return err
		}
		if err := b.write(b.Paths.SAKey, keyPEM, 0o600); err != nil {
			return err
		}
	case err != nil:
		return fmt.Errorf("pki: %w", err)
	default:
		if key, err = parseKey(keyPEM); err != nil {
			return fmt.Errorf("%w: %s: %w", ErrUnusable, b.Paths.SAKey, err)
		}
	}
	b.ServiceAccountKey = key

	pubPEM, err := publicKeyPEM(key.Public())
	if err != nil {
		return err
	}
	b.ServiceAccountPubPEM = pubPEM
	// Rewrite only on difference so a healthy restart touches nothing.
	if onDisk, err := os.ReadFile(b.Paths.SAPub); err == nil && string(onDisk) == string(pubPEM) {
		return nil
	}
	return b.write(b.Paths.SAPub, pubPEM, 0o644)
}

// writePair writes the key before the certificate; see the package doc
// for why that order matters after a crash.
func (b *Bundle) writePair(keyPath string, keyPEM []byte, certPath string, certPEM []byte) error {
	if err := b.write(keyPath, keyPEM, 0o600); err != nil {
		return err
	}
	return b.write(certPath, certPEM, 0o644)
}

func (b *Bundle) write(path string, data []byte, mode os.FileMode) error {
	if err := writeFileAtomic(path, data, mode); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	b.Written = append(b.Written, path)
	return nil
}

// servingSANs is the fixed SAN set plus extra, deduplicated, with DNS
// names lower-cased so that comparison with an existing certificate does
// not trip over case.
func servingSANs(extra []string) ([]net.IP, []string, error) {
	ips := []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}
	dns := []string{
		"localhost",
		"kubernetes",
		"kubernetes.default",
		"kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local",
	}
	// An odd host name (underscores, say) must not stop the server from
	// starting; it is simply not a SAN.
	if h, err := os.Hostname(); err == nil {
		if h = strings.ToLower(h); validDNSName(h) {
			dns = append(dns, h)
		}
	}
	for _, h := range extra {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
			continue
		}
		h = strings.ToLower(strings.TrimSuffix(h, "."))
		if !validDNSName(h) {
			return nil, nil, fmt.Errorf("%w: SAN %q is neither an IP address nor a DNS name", ErrInvalidConfig, h)
		}
		dns = append(dns, h)
	}
	return dedupIPs(ips), dedupStrings(dns), nil
}

func validDNSName(s string) bool {
	return len(validation.IsDNS1123Subdomain(s)) == 0 || len(validation.IsWildcardDNS1123Subdomain(s)) == 0
}

func coversSANs(cert *x509.Certificate, ips []net.IP, dnsNames []string) bool {
	for _, want := range ips {
		found := false
		for _, have := range cert.IPAddresses {
			if have.Equal(want) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, want := range dnsNames {
		found := false
		for _, have := range cert.DNSNames {
			if strings.EqualFold(have, want) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func dedupIPs(in []net.IP) []net.IP {
	var out []net.IP
	for _, ip := range in {
		dup := false
		for _, o := range out {
			if o.Equal(ip) {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, ip)
		}
	}
	return out
}

func dedupStrings(in []string) []string {
	seen := make(map[string]bool, len(in))
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
