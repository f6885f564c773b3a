package auth

import (
	"crypto/ecdsa"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestPipeline wires the package the way doc.go tells the API server to,
// behind a real TLS listener, and checks what clients see.
func TestPipeline(t *testing.T) {
	ca := newTestCA(t, "cluster-ca")
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	now := time.Now()
	adminCert, adminKey := ca.issue(t, certOpts{cn: "rudder-admin", orgs: []string{SystemPrivilegedGroup},
		notBefore: now.Add(-time.Hour), notAfter: now.Add(time.Hour)})

	tokens, err := ParseTokenFile(strings.NewReader("viewer-token,viewer,1\nstranger-token,stranger,2\n"))
	if err != nil {
		t.Fatal(err)
	}
	authn := NewAuthenticator(AuthenticatorConfig{
		Authenticators: []Authenticator{NewX509Authenticator(X509Config{}), tokens},
	})
	authz := NewDefaultAuthorizer(bootstrapSource())

	// The test's stand-in for request info: the attributes come in headers.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, ok, err := authn.AuthenticateRequest(r)
		if err != nil || !ok {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		r.Header.Del("Authorization")
		if HasImpersonationHeaders(r.Header) {
			if user, err = Impersonate(user, r.Header, authz); err != nil {
				writeStatus(w, err)
				return
			}
			DeleteImpersonationHeaders(r.Header)
		}
		attrs := Attributes{User: user, Verb: r.Header.Get("X-Verb"), ResourceRequest: true, APIVersion: "v1",
			Resource: r.Header.Get("X-Resource"), Namespace: r.Header.Get("X-Namespace"), Name: r.Header.Get("X-Name")}
		if attrs.Resource == "" {
			attrs.ResourceRequest, attrs.Path = false, r.URL.Path
		}
		if err := Authorize(authz, attrs); err != nil {
			writeStatus(w, err)
			return
		}
		fmt.Fprintf(w, "ok %s", user.Name)
	})
	srv := httptest.NewUnstartedServer(handler)
	srv.TLS = &tls.Config{ClientCAs: pool, ClientAuth: tls.VerifyClientCertIfGiven}
	srv.StartTLS()
	defer srv.Close()

	plain := srv.Client()
	withCert := func(c *x509.Certificate, k *ecdsa.PrivateKey) *http.Client {
		tr := plain.Transport.(*http.Transport).Clone()
		tr.TLSClientConfig.Certificates = []tls.Certificate{{Certificate: [][]byte{c.Raw}, PrivateKey: k, Leaf: c}}
		return &http.Client{Transport: tr, Timeout: 10 * time.Second}
	}
	admin := withCert(adminCert, adminKey)

	tests := []struct {
		name     string
		client   *http.Client
		path     string
		header   []string
		wantCode int
		wantBody string // substring
	}{
		{"admin certificate may do anything", admin, "/", []string{"X-Verb", "delete", "X-Resource", "nodes", "X-Name", "n1"},
			200, "ok rudder-admin"},
		{"viewer token lists pods in its namespace", plain, "/", []string{"Authorization", "Bearer viewer-token", "X-Verb", "list", "X-Resource", "pods", "X-Namespace", "team"},
			200, "ok viewer"},
		{"viewer can't read secrets", plain, "/", []string{"Authorization", "Bearer viewer-token", "X-Verb", "get", "X-Resource", "secrets", "X-Namespace", "team", "X-Name", "db"},
			403, `secrets \"db\" is forbidden: User \"viewer\" cannot get resource \"secrets\" in API group \"\" in the namespace \"team\"`},
		{"authenticated users discover APIs", plain, "/apis", []string{"Authorization", "Bearer stranger-token", "X-Verb", "get"},
			200, "ok stranger"},
		{"no credentials is 401 with anonymous off", plain, "/version", []string{"X-Verb", "get"}, 401, "Unauthorized"},
		{"unknown token is 401", plain, "/", []string{"Authorization", "Bearer nope", "X-Verb", "get"}, 401, "Unauthorized"},
		{"viewer may not impersonate", plain, "/", []string{"Authorization", "Bearer viewer-token", "Impersonate-User", "rudder-admin", "X-Verb", "get"},
			403, `users \"rudder-admin\" is forbidden: User \"viewer\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope`},
		{"admin impersonating viewer gets viewer's rights", admin, "/", []string{"Impersonate-User", "viewer", "X-Verb", "get", "X-Resource", "secrets", "X-Namespace", "team", "X-Name", "db"},
			403, `User \"viewer\" cannot get resource \"secrets\"`},
		{"admin impersonating viewer", admin, "/", []string{"Impersonate-User", "viewer", "X-Verb", "list", "X-Resource", "pods", "X-Namespace", "team"},
			200, "ok viewer"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest("GET", srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < len(tc.header); i += 2 {
				req.Header.Set(tc.header[i], tc.header[i+1])
			}
			resp, err := tc.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode || !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("got %d %s\nwant %d containing %s", resp.StatusCode, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}

// writeStatus is the one place a server maps these errors to HTTP; a
// test-sized version of it, writing the message as JSON-ish text.
func writeStatus(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	s := status.Status()
	w.WriteHeader(int(s.Code))
	fmt.Fprintf(w, "{%q: %q}", "message", s.Message)
}
