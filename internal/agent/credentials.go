package agent

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/rudder-dev/rudder/internal/pki"
)

// A node's two identities:
//
//   - its client identity to the API server, system:node:<name> in group
//     system:nodes, which the Node authorizer and NodeRestriction confine
//     to the node's own objects and the pods bound to it;
//   - the kubelet API's serving certificate, which the API server checks
//     against the cluster CA when it forwards logs, exec and port-forward.
//
// `rudder up` holds the cluster CA and issues both directly
// (LocalCredentials); `rudder agent` on another machine gets its client
// certificate through a bootstrap token and a CertificateSigningRequest
// (internal/nodeidentity) and its serving certificate the same way, as
// the node itself (Join, join.go).

// nodeCertTTL is how long the certificates `rudder up` issues live; they
// are issued anew at every start.
const nodeCertTTL = 365 * 24 * time.Hour

// Credentials are what the agent authenticates with.
type Credentials struct {
	// Kubeconfig reaches the API server as system:node:<name>.
	Kubeconfig string
	// ProxyKubeconfig reaches it as system:kube-proxy (bound to
	// system:node-proxier: Services, EndpointSlices, Nodes), for the
	// service proxy; empty when the agent has no such identity.
	ProxyKubeconfig string
	// ServingCert is the kubelet API's certificate.
	ServingCert tls.Certificate
	// ClientCAs verify callers of the kubelet API (the API server's
	// kubelet client certificate).
	ClientCAs *x509.CertPool
}

// LocalCredentials issues a node's credentials from the cluster CA, for
// an agent running beside the server that holds it. The kubeconfig is
// written to dir/kubelet.kubeconfig (0600).
func LocalCredentials(bundle *pki.Bundle, dir, serverURL, nodeName string, nodeIP net.IP) (Credentials, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return Credentials{}, err
	}
	user := "system:node:" + nodeName
	certPEM, keyPEM, err := bundle.IssueClientCert(user, []string{"system:nodes"}, nodeCertTTL)
	if err != nil {
		return Credentials{}, fmt.Errorf("node client certificate: %w", err)
	}
	kc := filepath.Join(dir, "kubelet.kubeconfig")
	if err := pki.WriteKubeconfig(kc, serverURL, bundle.CAPEM, certPEM, keyPEM, user); err != nil {
		return Credentials{}, err
	}
	serving, err := bundle.IssueServingCert(user, []net.IP{nodeIP}, []string{nodeName}, nodeCertTTL)
	if err != nil {
		return Credentials{}, fmt.Errorf("kubelet serving certificate: %w", err)
	}
	proxyCert, proxyKey, err := bundle.IssueClientCert("system:kube-proxy", nil, nodeCertTTL)
	if err != nil {
		return Credentials{}, fmt.Errorf("proxy client certificate: %w", err)
	}
	pkc := filepath.Join(dir, "proxy.kubeconfig")
	if err := pki.WriteKubeconfig(pkc, serverURL, bundle.CAPEM, proxyCert, proxyKey, "system:kube-proxy"); err != nil {
		return Credentials{}, err
	}
	return Credentials{Kubeconfig: kc, ProxyKubeconfig: pkc, ServingCert: serving, ClientCAs: bundle.CAPool}, nil
}
