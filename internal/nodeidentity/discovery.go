package nodeidentity

// Discovery of the cluster's CA with nothing but a bootstrap token, as
// kubeadm's token discovery does it. The cluster publishes, in the
// ConfigMap kube-public/cluster-info that anyone may read, a kubeconfig
// naming its CA, and beside it one signature per bootstrap token marked
// for signing: a detached JWS (HS256) of that kubeconfig keyed with the
// token's secret. A node fetches the ConfigMap without trusting the server
// yet, checks the signature made with its own token, and only then
// trusts the CA in it: whoever could forge the signature already holds
// the token. The node then fetches the ConfigMap again, now verifying
// the server with that CA, and insists on the same content.

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Where the cluster publishes what a joining node needs to trust it.
const (
	ClusterInfoNamespace     = "kube-public"
	ClusterInfoName          = "cluster-info"
	ClusterInfoKubeconfigKey = "kubeconfig"
	// ClusterInfoSignaturePrefix + <token id> holds a token's signature.
	ClusterInfoSignaturePrefix = "jws-kubeconfig-"
)

// errWrongToken: the cluster knows the token's ID with another secret.
var errWrongToken = errors.New("the token's secret is wrong")

var tokenRE = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)

// SignClusterInfo returns the detached JWS (header..signature) of content
// for the token <id>.<secret>, byte for byte what kubeadm's bootstrap
// signer writes: header {"alg":"HS256","kid":"<id>"}, HMAC-SHA256 keyed
// with the token's secret.
func SignClusterInfo(content, tokenID, tokenSecret string) (string, error) {
	if !tokenRE.MatchString(tokenID + "." + tokenSecret) {
		return "", errors.New("not a bootstrap token")
	}
	return detachedJWS(content, tokenID, tokenSecret)
}

func detachedJWS(content, tokenID, tokenSecret string) (string, error) {
	header, err := json.Marshal(struct {
		Alg string `json:"alg"`
		Kid string `json:"kid"`
	}{"HS256", tokenID})
	if err != nil {
		return "", err
	}
	enc := base64.RawURLEncoding
	h := enc.EncodeToString(header)
	mac := hmac.New(sha256.New, []byte(tokenSecret))
	mac.Write([]byte(h + "." + enc.EncodeToString([]byte(content))))
	return h + ".." + enc.EncodeToString(mac.Sum(nil)), nil
}

// discoverCA reads cluster-info from serverURL, checks the token's
// signature over it and returns the CA it names (see the file comment).
// Until ctx ends it tries again, backing off from a quarter second to
// four: a token created a moment ago is signed a moment later, and the
// server may still be starting. The last failure is returned with ctx's.
// A signature that does not match is final, returned at once: the
// token's ID is known to the cluster but its secret is not this one.
func discoverCA(ctx context.Context, serverURL, token string) ([]byte, error) {
	m := tokenRE.FindStringSubmatch(token)
	if m == nil {
		return nil, errors.New("discovery: the token is not a bootstrap token (<id>.<secret>)")
	}
	delay := 250 * time.Millisecond
	for {
		caPEM, err := discoverOnce(ctx, serverURL, m[1], m[2])
		if err == nil {
			return caPEM, nil
		}
		if errors.Is(err, errWrongToken) {
			return nil, err
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("%w (%w)", err, ctx.Err())
		case <-time.After(delay):
		}
		delay = min(2*delay, 4*time.Second)
	}
}

func discoverOnce(ctx context.Context, serverURL, id, secret string) ([]byte, error) {
	// Not yet trusted: no credentials go over this connection, and
	// nothing from it is believed until the signature checks.
	insecure, err := fetchClusterInfo(ctx, &rest.Config{Host: serverURL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	if err != nil {
		return nil, err
	}
	content, ok := insecure.Data[ClusterInfoKubeconfigKey]
	if !ok {
		return nil, fmt.Errorf("discovery: %s/%s has no %q", ClusterInfoNamespace, ClusterInfoName, ClusterInfoKubeconfigKey)
	}
	sig, ok := insecure.Data[ClusterInfoSignaturePrefix+id]
	if !ok {
		return nil, fmt.Errorf("discovery: %s/%s has no signature for token ID %q (is the token valid, and marked for signing?)", ClusterInfoNamespace, ClusterInfoName, id)
	}
	want, err := SignClusterInfo(content, id, secret)
	if err != nil {
		return nil, err
	}
	if subtle.ConstantTimeCompare([]byte(sig), []byte(want)) != 1 {
		return nil, fmt.Errorf("discovery: the signature of %s/%s does not match token ID %q: %w", ClusterInfoNamespace, ClusterInfoName, id, errWrongToken)
	}
	cfg, err := clientcmd.Load([]byte(content))
	if err != nil {
		return nil, fmt.Errorf("discovery: the published kubeconfig: %w", err)
	}
	var caPEM []byte
	for _, c := range cfg.Clusters {
		caPEM = c.CertificateAuthorityData
		break
	}
	if _, err := parseCertificates(caPEM); err != nil {
		return nil, fmt.Errorf("discovery: the published CA: %w", err)
	}
	// Now ask again over a connection verified with that CA, as kubeadm
	// does: the server we talk to must hold the CA's key.
	secure, err := fetchClusterInfo(ctx, &rest.Config{Host: serverURL, TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}})
	if err != nil {
		return nil, err
	}
	if !bytes.Equal([]byte(secure.Data[ClusterInfoKubeconfigKey]), []byte(content)) {
		return nil, errors.New("discovery: cluster-info changed between the unverified and the verified read")
	}
	return caPEM, nil
}

func fetchClusterInfo(ctx context.Context, cfg *rest.Config) (*corev1.ConfigMap, error) {
	cfg.UserAgent = "rudder-agent/discovery"
	cfg.Timeout = 30 * time.Second
	if cfg.TLSClientConfig.Insecure {
		// rest.Config refuses Insecure together with CA data; there is none.
		cfg.Transport = &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS12}} //nolint:gosec // verified by the JWS below
		cfg.TLSClientConfig = rest.TLSClientConfig{}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	cm, err := client.CoreV1().ConfigMaps(ClusterInfoNamespace).Get(ctx, ClusterInfoName, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("discovery: reading %s/%s: %w", ClusterInfoNamespace, ClusterInfoName, err)
	}
	return cm, nil
}
