package admission_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// hookServer is a real admission webhook: HTTPS on loopback with a
// certificate from its own CA, one handler per path. It records every
// review it gets.
type hookServer struct {
	URL      string // https://127.0.0.1:port
	Addr     *net.TCPAddr
	CABundle []byte

	mu       sync.Mutex
	handlers map[string]hookHandler
	reviews  map[string][]*admissionv1.AdmissionRequest
}

// hookHandler answers one request; the server fills in the uid.
type hookHandler func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// startHookServer starts a webhook server whose certificate is valid
// for 127.0.0.1 and dnsNames. It stops when the test ends.
func startHookServer(t testing.TB, dnsNames ...string) *hookServer {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "webhook"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), DNSNames: dnsNames,
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}},
		NextProtos:   []string{"h2", "http/1.1"},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := &hookServer{
		URL: "https://" + ln.Addr().String(), Addr: ln.Addr().(*net.TCPAddr),
		CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		handlers: map[string]hookHandler{}, reviews: map[string][]*admissionv1.AdmissionRequest{},
	}
	// Tests that distrust the certificate make the server log failed
	// handshakes: expected, so not printed.
	srv := &http.Server{Handler: http.HandlerFunc(s.serve), ErrorLog: log.New(io.Discard, "", 0)}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// Handle serves path with h.
func (s *hookServer) Handle(path string, h hookHandler) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handlers[path] = h
}

// Reviews returns the requests path has received.
func (s *hookServer) Reviews(path string) []*admissionv1.AdmissionRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*admissionv1.AdmissionRequest(nil), s.reviews[path]...)
}

func (s *hookServer) serve(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "bad review", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	h := s.handlers[r.URL.Path]
	s.reviews[r.URL.Path] = append(s.reviews[r.URL.Path], review.Request)
	s.mu.Unlock()
	if h == nil {
		http.NotFound(w, r)
		return
	}
	resp := h(r.Context(), review.Request)
	if resp == nil {
		return // the handler gave up (a cancelled slow hook)
	}
	if resp.UID == "" {
		resp.UID = review.Request.UID
	}
	review.Request, review.Response = nil, resp
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(&review)
}

// allow admits unchanged.
func allow(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: true}
}

// addLabel admits with a JSON patch that sets one label.
func addLabel(key, value string) hookHandler {
	return func(_ context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		var obj struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		json.Unmarshal(req.Object.Raw, &obj)
		var patch []map[string]any
		if obj.Metadata.Labels == nil {
			patch = append(patch, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{}})
		}
		patch = append(patch, map[string]any{"op": "add", "path": "/metadata/labels/" + jsonPointerEscape(key), "value": value})
		b, _ := json.Marshal(patch)
		pt := admissionv1.PatchTypeJSONPatch
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: b, PatchType: &pt}
	}
}

func jsonPointerEscape(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

// sleepFor answers after d, or gives up when the caller does.
func sleepFor(d time.Duration) hookHandler {
	return func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		select {
		case <-time.After(d):
			return &admissionv1.AdmissionResponse{Allowed: true}
		case <-ctx.Done():
			return nil
		}
	}
}

// downURL is an https URL nothing listens on.
func downURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "https://" + addr + "/down"
}
