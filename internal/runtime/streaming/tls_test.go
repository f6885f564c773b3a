package streaming

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// selfSigned returns a server certificate for 127.0.0.1 and its PEM.
func selfSigned(t *testing.T) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "streaming-test"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IsCA:         true, BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestTLS(t *testing.T) {
	requireSh(t)
	cert, caPEM := selfSigned(t)
	s := startServer(t, newHostRuntime(), func(c *Config) {
		c.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	})
	if !strings.HasPrefix(s.URL(), "https://") {
		t.Fatalf("URL %q is not https", s.URL())
	}
	cfg := &rest.Config{Host: s.URL(), TLSClientConfig: rest.TLSClientConfig{CAData: caPEM}}
	for _, tc := range []struct {
		name string
		new  func(u string) (remotecommand.Executor, error)
	}{
		{"spdy", func(u string) (remotecommand.Executor, error) {
			pu, err := url.Parse(u)
			if err != nil {
				return nil, err
			}
			return remotecommand.NewSPDYExecutor(cfg, "POST", pu)
		}},
		{"websocket", func(u string) (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(cfg, "GET", u)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"echo", "over tls"}, Stdout: true})
			if err != nil {
				t.Fatal(err)
			}
			e, err := tc.new(resp.Url)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := stream(t, e, remotecommand.StreamOptions{Stdout: &out}); err != nil {
				t.Fatal(err)
			}
			if out.String() != "over tls\n" {
				t.Fatalf("got %q", out.String())
			}
		})
	}
}
