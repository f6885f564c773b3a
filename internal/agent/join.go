package agent

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/nodeidentity"
)

// JoinConfig is how a node on another machine joins a running server
// (`rudder agent --server URL --token T`).
type JoinConfig struct {
	// Server is the API server's https:// URL.
	Server string
	// Token is a bootstrap token "<id>.<secret>" (`rudder token create`).
	// It is not needed while Dir holds valid certificates.
	Token string
	// CAPEM is the cluster CA. Nil: the CA Dir already trusts, else the
	// one discovered with the token (kube-public/cluster-info, signed
	// with the token's secret).
	CAPEM []byte
	// NodeName and NodeIP are the node's; the serving certificate is
	// for them.
	NodeName string
	NodeIP   net.IP
	// Dir keeps the credentials (the agent's directory, Config.Dir).
	Dir string
	// Timeout bounds the whole join (default 2 minutes): the certificate
	// requests wait for the cluster's approver and signer.
	Timeout time.Duration
}

// Join gives a node its credentials from a running server, as upstream's
// TLS bootstrap does: a client certificate for system:node:<name>
// through the bootstrap token (nodeidentity.Bootstrap), then, as that
// node, a kubelet serving certificate for NodeIP and NodeName
// (nodeidentity.ServingCertificate; the node's Node object is created
// first if missing, so the approver can check the addresses). Both are
// kept in Dir (0600) and reused by a later Join while they have a tenth
// of their life left, without the token.
//
// Errors are one line: a refused token, an unreachable or untrusted
// server, a denied request, or the timeout.
func Join(ctx context.Context, jc JoinConfig) (Credentials, error) {
	if jc.NodeIP == nil {
		return Credentials{}, errors.New("join: the node's IP is required")
	}
	if jc.Timeout <= 0 {
		jc.Timeout = 2 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, jc.Timeout)
	defer cancel()
	kubeconfig, err := nodeidentity.Bootstrap(ctx, jc.Server, jc.CAPEM, jc.Token, jc.NodeName, jc.Dir)
	if err != nil {
		return Credentials{}, fmt.Errorf("join: %w", err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return Credentials{}, fmt.Errorf("join: %w", err)
	}
	rc.UserAgent = "rudder-agent/" + jc.NodeName
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return Credentials{}, fmt.Errorf("join: %w", err)
	}
	dir := filepath.Dir(kubeconfig)
	serving, err := nodeidentity.ServingCertificate(ctx, client, jc.NodeName, []net.IP{jc.NodeIP}, dir)
	if err != nil {
		return Credentials{}, fmt.Errorf("join: %w", err)
	}
	caPEM, err := os.ReadFile(filepath.Join(dir, nodeidentity.CAFile))
	if err != nil {
		return Credentials{}, fmt.Errorf("join: %w", err)
	}
	cas := x509.NewCertPool()
	if !cas.AppendCertsFromPEM(caPEM) {
		return Credentials{}, fmt.Errorf("join: %s holds no certificate", nodeidentity.CAFile)
	}
	return Credentials{Kubeconfig: kubeconfig, ServingCert: serving, ClientCAs: cas}, nil
}

// SourceIP is the address this host uses to reach serverURL's host:
// the default node IP of a joining agent. A UDP "connect" picks the
// route and the source address without sending anything.
func SourceIP(serverURL string) (net.IP, error) {
	u, err := url.Parse(serverURL)
	if err != nil || u.Hostname() == "" {
		return nil, fmt.Errorf("server %q is not a URL with a host", serverURL)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	conn, err := net.Dial("udp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		return nil, fmt.Errorf("finding the address that reaches %s: %w", u.Host, err)
	}
	defer conn.Close()
	addr, ok := conn.LocalAddr().(*net.UDPAddr)
	if !ok || addr.IP.IsUnspecified() {
		return nil, fmt.Errorf("no source address reaches %s", u.Host)
	}
	return addr.IP, nil
}
