package certificates_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// clusterCA returns the cluster CA certificate and key as the server
// keeps them on disk.
func clusterCA(t *testing.T, c *clustertest.Cluster) (certPEM, keyPEM []byte) {
	t.Helper()
	keyPEM, err := os.ReadFile(c.Server.PKI.Paths.CAKey)
	if err != nil {
		t.Fatal(err)
	}
	return c.Server.PKI.CAPEM, keyPEM
}

// keyAndRequest makes a fresh key and a PKCS#10 request for subject and
// SANs, as a client that wants a certificate does.
func keyAndRequest(t *testing.T, subject pkix.Name, dnsNames []string, ips []net.IP) (keyPEM, requestPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: subject, DNSNames: dnsNames, IPAddresses: ips}, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

func newCSR(name, signer string, request []byte, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: signer, Usages: usages}}
}

// waitIssued waits for the request's certificate and parses it.
func waitIssued(t *testing.T, cs kubernetes.Interface, name string) *x509.Certificate {
	t.Helper()
	var issued []byte
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		csr, err := cs.CertificatesV1().CertificateSigningRequests().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		issued = csr.Status.Certificate
		return len(issued) > 0, "no certificate yet; conditions " + conditionsOf(csr)
	})
	block, _ := pem.Decode(issued)
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("status.certificate is not a PEM certificate: %q", issued)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func conditionsOf(csr *certificatesv1.CertificateSigningRequest) string {
	var parts []string
	for _, c := range csr.Status.Conditions {
		parts = append(parts, string(c.Type)+"/"+c.Reason+": "+c.Message)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// clientAs is a client of the cluster authenticating with a certificate
// and key, trusting the cluster CA.
func clientAs(t *testing.T, c *clustertest.Cluster, certPEM, keyPEM []byte) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: c.Config.Host,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.Server.PKI.CAPEM, CertData: certPEM, KeyData: keyPEM}})
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// impersonating is the admin acting as user in groups: how the tests
// create requests whose recorded requester is someone else.
func impersonating(t *testing.T, c *clustertest.Cluster, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	rc := rest.CopyConfig(c.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
