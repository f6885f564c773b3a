package nodeidentity

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	watchtools "k8s.io/client-go/tools/watch"
)

// The files Bootstrap keeps in its directory, all mode 0600. The
// kubeconfig names the other three by absolute path, so a rotated
// certificate takes effect without rewriting it.
const (
	KubeconfigFile = "kubelet.kubeconfig"
	CertFile       = "kubelet-client.crt"
	KeyFile        = "kubelet-client.key"
	CAFile         = "ca.crt"
)

// Node identities as the API server reads them from a certificate.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// minRemaining is how much of its lifetime a certificate must have left
// to be reused rather than replaced: upstream's kubelet rotates at 70-90 %
// of the lifetime; a node starting with less than a tenth left asks anew.
const minRemaining = 0.1

// Bootstrap returns the path of a kubeconfig that authenticates as
// system:node:<nodeName> to serverURL, trusting only caPEM. When dir
// already holds a certificate for that node, signed by caPEM's CA and
// with a tenth of its life left, it is reused and token is not needed.
// Otherwise Bootstrap asks for one with token (see the package doc) and
// waits for it until ctx ends.
//
// With caPEM nil the CA is the one dir already trusts, else it is
// discovered from kube-public/cluster-info and accepted only if the
// token's signature over it checks (kubeadm's token discovery): the
// server is never trusted on first use.
//
// Errors: bad arguments, an unreachable or untrusted server, a token the
// server refuses (401) or a bootstrap user without permission (403), a
// CSR denied or failed by the cluster, or ctx ending first. A failed call
// writes nothing to dir but the private key, which a later call reuses
// to find its CSR again; a previous identity it replaces is removed
// first (the CA file stays until overwritten).
func Bootstrap(ctx context.Context, serverURL string, caPEM []byte, token, nodeName, dir string) (string, error) {
	if err := checkArgs(serverURL, caPEM, nodeName, dir); err != nil {
		return "", err
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	kubeconfig := filepath.Join(dir, KubeconfigFile)
	trusted := caPEM
	if trusted == nil {
		trusted, _ = os.ReadFile(filepath.Join(dir, CAFile))
	}
	if len(trusted) > 0 && Valid(dir, nodeName, trusted, time.Now()) == nil {
		return kubeconfig, nil
	}
	if token == "" {
		return "", errors.New("node bootstrap: no valid certificate in " + dir + " and no bootstrap token to ask for one")
	}
	if caPEM == nil {
		if caPEM, err = discoverCA(ctx, serverURL, token); err != nil {
			return "", fmt.Errorf("node bootstrap: %w", err)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("node bootstrap: %w", err)
	}
	// A finished identity that is no longer good (expiring, another
	// cluster's, another node's) is replaced with a new key. Only an
	// interrupted bootstrap (a key, no kubeconfig) keeps its key, to find
	// its own CSR again.
	if _, err := os.Stat(kubeconfig); err == nil {
		for _, f := range []string{KubeconfigFile, CertFile, KeyFile} {
			if err := os.Remove(filepath.Join(dir, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return "", fmt.Errorf("node bootstrap: %w", err)
			}
		}
	}
	key, err := loadOrCreateKey(filepath.Join(dir, KeyFile))
	if err != nil {
		return "", fmt.Errorf("node bootstrap: %w", err)
	}
	client, err := kubernetes.NewForConfig(&rest.Config{
		Host:            serverURL,
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: caPEM},
		UserAgent:       "rudder-agent/tls-bootstrap",
	})
	if err != nil {
		return "", fmt.Errorf("node bootstrap: %w", err)
	}
	certPEM, err := requestCertificate(ctx, client, key, nodeName, clientRequest)
	if err != nil {
		return "", fmt.Errorf("node bootstrap: %w", err)
	}
	if err := writeFile(filepath.Join(dir, CAFile), caPEM); err != nil {
		return "", err
	}
	if err := writeFile(filepath.Join(dir, CertFile), certPEM); err != nil {
		return "", err
	}
	if err := writeKubeconfig(kubeconfig, serverURL, dir, nodeName); err != nil {
		return "", err
	}
	return kubeconfig, nil
}

func checkArgs(serverURL string, caPEM []byte, nodeName, dir string) error {
	if u, err := url.Parse(serverURL); err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("node bootstrap: server %q is not an https:// URL", serverURL)
	}
	if caPEM != nil {
		if _, err := parseCertificates(caPEM); err != nil {
			return fmt.Errorf("node bootstrap: CA: %w", err)
		}
	}
	if errs := validation.IsDNS1123Subdomain(nodeName); len(errs) > 0 {
		return fmt.Errorf("node bootstrap: node name %q: %s", nodeName, strings.Join(errs, "; "))
	}
	if dir == "" {
		return errors.New("node bootstrap: no directory for the credentials")
	}
	return nil
}

// Valid reports, with the reason when not, whether dir holds a usable
// identity for nodeName: the kubeconfig, a key matching a certificate for
// system:node:<nodeName> in system:nodes that chains to caPEM for client
// authentication, with at least a tenth of its lifetime left at now.
func Valid(dir, nodeName string, caPEM []byte, now time.Time) error {
	if _, err := os.Stat(filepath.Join(dir, KubeconfigFile)); err != nil {
		return err
	}
	stored, err := os.ReadFile(filepath.Join(dir, CAFile))
	if err != nil {
		return err
	}
	if !bytes.Equal(bytes.TrimSpace(stored), bytes.TrimSpace(caPEM)) {
		return errors.New("the stored CA is not the cluster's")
	}
	certPEM, err := os.ReadFile(filepath.Join(dir, CertFile))
	if err != nil {
		return err
	}
	key, err := readKey(filepath.Join(dir, KeyFile))
	if err != nil {
		return err
	}
	_, err = checkIdentity(certPEM, key, nodeName, caPEM, now, x509.ExtKeyUsageClientAuth)
	return err
}

// checkIdentity checks that certPEM is a certificate for key naming
// system:node:<nodeName> in system:nodes, chaining to caPEM for usage at
// now, with a tenth of its lifetime left; it returns the certificate.
func checkIdentity(certPEM []byte, key *ecdsa.PrivateKey, nodeName string, caPEM []byte, now time.Time, usage x509.ExtKeyUsage) (*x509.Certificate, error) {
	certs, err := parseCertificates(certPEM)
	if err != nil {
		return nil, err
	}
	cert := certs[0]
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, errors.New("the certificate is not for the stored key")
	}
	if cert.Subject.CommonName != NodeUserPrefix+nodeName || !slices.Contains(cert.Subject.Organization, NodesGroup) {
		return nil, fmt.Errorf("the certificate is for %q %v, not node %q", cert.Subject.CommonName, cert.Subject.Organization, nodeName)
	}
	cas, err := parseCertificates(caPEM)
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	roots := x509.NewCertPool()
	for _, c := range cas {
		roots.AddCert(c)
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return nil, err
	}
	life := cert.NotAfter.Sub(cert.NotBefore)
	if cert.NotAfter.Sub(now) < time.Duration(float64(life)*minRemaining) {
		return nil, fmt.Errorf("the certificate expires at %s", cert.NotAfter.UTC().Format(time.RFC3339))
	}
	return cert, nil
}

// certRequest is what a node asks a signer for, beside its identity.
type certRequest struct {
	signer   string
	usages   []certificatesv1.KeyUsage
	dnsNames []string
	ips      []net.IP
}

// clientRequest is the kubelet's client certificate request.
var clientRequest = certRequest{
	signer: certificatesv1.KubeAPIServerClientKubeletSignerName,
	usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
}

// requestCertificate creates (or finds) the CSR for key and waits for
// its certificate, which it checks is for key and the node.
func requestCertificate(ctx context.Context, client kubernetes.Interface, key *ecdsa.PrivateKey, nodeName string, cr certRequest) ([]byte, error) {
	reqPEM, err := certificateRequest(key, nodeName, cr)
	if err != nil {
		return nil, err
	}
	name, err := csrName(key, nodeName, cr)
	if err != nil {
		return nil, err
	}
	csrs := client.CertificatesV1().CertificateSigningRequests()
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    reqPEM,
			SignerName: cr.signer,
			Usages:     cr.usages,
		},
	}
	if _, err := csrs.Create(ctx, csr, metav1.CreateOptions{}); err != nil {
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating certificate signing request: %w", err)
		}
		// An earlier attempt with the same key made it: wait for that one.
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			return csrs.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
			return csrs.Watch(ctx, o)
		},
	}
	var issued []byte
	_, err = watchtools.UntilWithSync(ctx, lw, &certificatesv1.CertificateSigningRequest{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("certificate signing request %s was deleted", name)
		}
		c, ok := ev.Object.(*certificatesv1.CertificateSigningRequest)
		if !ok {
			return false, nil
		}
		for _, cond := range c.Status.Conditions {
			switch cond.Type {
			case certificatesv1.CertificateDenied, certificatesv1.CertificateFailed:
				return false, fmt.Errorf("certificate signing request %s %s: %s: %s", name, strings.ToLower(string(cond.Type)), cond.Reason, cond.Message)
			}
		}
		if len(c.Status.Certificate) == 0 {
			return false, nil
		}
		if !samePublicKey(c.Spec.Request, key) {
			return false, fmt.Errorf("certificate signing request %s was made for another key", name)
		}
		issued = c.Status.Certificate
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for the certificate of %s: %w", name, err)
	}
	certs, err := parseCertificates(issued)
	if err != nil {
		return nil, fmt.Errorf("issued certificate: %w", err)
	}
	if !publicKeysEqual(certs[0].PublicKey, key.Public()) || certs[0].Subject.CommonName != NodeUserPrefix+nodeName {
		return nil, fmt.Errorf("issued certificate of %s is not for this key and node", name)
	}
	return issued, nil
}

// samePublicKey reports whether the PEM certificate request reqPEM is
// for key. (An ECDSA signature differs at each signing, so a request
// found again is compared by its key, not its bytes.)
func samePublicKey(reqPEM []byte, key *ecdsa.PrivateKey) bool {
	block, _ := pem.Decode(reqPEM)
	if block == nil {
		return false
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	return err == nil && publicKeysEqual(req.PublicKey, key.Public())
}

func certificateRequest(key *ecdsa.PrivateKey, nodeName string, cr certRequest) ([]byte, error) {
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{
		Subject:     pkix.Name{CommonName: NodeUserPrefix + nodeName, Organization: []string{NodesGroup}},
		DNSNames:    cr.dnsNames,
		IPAddresses: cr.ips,
	}, key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), nil
}

// csrName is derived from the key and the node, as the kubelet's is, so
// that a retry with the same key finds its own request; a serving
// request's name also covers its names, so that a node whose address
// changed asks anew rather than finding its old request.
func csrName(key *ecdsa.PrivateKey, nodeName string, cr certRequest) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return "", err
	}
	h := sha256.New()
	h.Write(der)
	h.Write([]byte(nodeName))
	if cr.signer == certificatesv1.KubeAPIServerClientKubeletSignerName {
		return "node-csr-" + hex.EncodeToString(h.Sum(nil))[:32], nil
	}
	for _, n := range cr.dnsNames {
		h.Write([]byte("\x00dns:" + n))
	}
	for _, ip := range cr.ips {
		h.Write([]byte("\x00ip:" + ip.String()))
	}
	return "node-serving-csr-" + hex.EncodeToString(h.Sum(nil))[:32], nil
}

func loadOrCreateKey(path string) (*ecdsa.PrivateKey, error) {
	if key, err := readKey(path); err == nil {
		return key, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		// A corrupt key is replaced: nothing was issued for it that works.
		if err := os.Remove(path); err != nil {
			return nil, err
		}
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := writeFile(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})); err != nil {
		return nil, err
	}
	return key, nil
}

func readKey(path string) (*ecdsa.PrivateKey, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return nil, fmt.Errorf("%s: no PEM data", path)
	}
	switch block.Type {
	case "EC PRIVATE KEY":
		return x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
		if err != nil {
			return nil, err
		}
		if ec, ok := k.(*ecdsa.PrivateKey); ok {
			return ec, nil
		}
	}
	return nil, fmt.Errorf("%s: not an ECDSA private key", path)
}

func parseCertificates(data []byte) ([]*x509.Certificate, error) {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	if len(out) == 0 {
		return nil, errors.New("no PEM certificate found")
	}
	return out, nil
}

func publicKeysEqual(a crypto.PublicKey, b crypto.PublicKey) bool {
	k, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && k.Equal(b)
}

// writeKubeconfig names the files in dir by absolute path.
func writeKubeconfig(path, serverURL, dir, nodeName string) error {
	user := NodeUserPrefix + nodeName
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["default"] = &clientcmdapi.Cluster{Server: serverURL, CertificateAuthority: filepath.Join(dir, CAFile)}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(dir, CertFile), ClientKey: filepath.Join(dir, KeyFile)}
	cfg.Contexts["default"] = &clientcmdapi.Context{Cluster: "default", AuthInfo: user}
	cfg.CurrentContext = "default"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		return err
	}
	return writeFile(path, data)
}

// writeFile replaces path atomically with data, mode 0600, so that a
// crash never leaves a half-written credential.
func writeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
