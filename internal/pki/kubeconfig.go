package pki

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KubeconfigName names the cluster and the context in every kubeconfig this
// package writes, so users can merge one into ~/.kube/config and switch to
// it by a predictable name.
const KubeconfigName = "rudder"

// WriteKubeconfig writes a kubeconfig at path that reaches server, trusts
// caPEM, and authenticates as user with the client certificate
// certPEM/keyPEM. The file is replaced atomically with mode 0600, as it
// holds a private key.
func WriteKubeconfig(path, server string, caPEM, certPEM, keyPEM []byte, user string) error {
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return fmt.Errorf("%w: kubeconfig client certificate: %w", ErrInvalidConfig, err)
	}
	return writeKubeconfig(path, server, caPEM, user, &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         keyPEM,
	})
}

// WriteTokenKubeconfig is WriteKubeconfig for a user that presents a bearer
// token (a service-account or bootstrap token) instead of a certificate.
func WriteTokenKubeconfig(path, server string, caPEM []byte, token, user string) error {
	if token == "" {
		return fmt.Errorf("%w: kubeconfig token is empty", ErrInvalidConfig)
	}
	return writeKubeconfig(path, server, caPEM, user, &clientcmdapi.AuthInfo{Token: token})
}

func writeKubeconfig(path, server string, caPEM []byte, user string, auth *clientcmdapi.AuthInfo) error {
	if path == "" {
		return fmt.Errorf("%w: kubeconfig path is empty", ErrInvalidConfig)
	}
	if user == "" {
		return fmt.Errorf("%w: kubeconfig user is empty", ErrInvalidConfig)
	}
	// The file pins a CA, which means nothing over plain HTTP; catch the
	// mistake here rather than as a confusing client error later.
	if u, err := url.Parse(server); err != nil || u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("%w: kubeconfig server %q is not an https:// URL", ErrInvalidConfig, server)
	}
	if !x509.NewCertPool().AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%w: kubeconfig CA holds no PEM certificate", ErrInvalidConfig)
	}

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigName] = &clientcmdapi.Cluster{
		Server:                   server,
		CertificateAuthorityData: caPEM,
	}
	cfg.AuthInfos[user] = auth
	cfg.Contexts[KubeconfigName] = &clientcmdapi.Context{
		Cluster:  KubeconfigName,
		AuthInfo: user,
	}
	cfg.CurrentContext = KubeconfigName

	// clientcmd.WriteToFile creates missing parents 0755 and writes in
	// place; making the parent ourselves keeps it private, and pointing
	// WriteToFile at a temporary file that we then rename makes it atomic.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("pki: %w", err)
	}
	err := replaceFile(path, 0o600, func(tmp *os.File) error {
		return clientcmd.WriteToFile(*cfg, tmp.Name())
	})
	if err != nil {
		return fmt.Errorf("pki: kubeconfig: %w", err)
	}
	return nil
}
