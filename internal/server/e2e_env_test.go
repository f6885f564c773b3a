package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/storage"
)

// apiEnv is one real server and every kind of client the end-to-end API
// tests drive it with. Each client is a separate rest.Config so one test can
// change a setting (content type, impersonation) without touching others.
type apiEnv struct {
	srv *Server
	cfg *rest.Config // admin, untouched: copy it before changing
	// cs is the typed clientset; for built-in kinds it speaks protobuf.
	cs *kubernetes.Clientset
	// jcs is the same clientset forced to JSON.
	jcs  *kubernetes.Clientset
	dyn  dynamic.Interface
	meta metadata.Interface
	// http is a plain HTTPS client with the admin credentials, for the
	// edge cases where headers and raw bytes are the point.
	http *http.Client
}

// newAPIEnv starts a server with cfg (DataDir and port are filled in) and
// builds the clients. Client-side rate limiting is off: the tests make
// hundreds of requests and the default 5 QPS would make them slow, not
// more correct.
func newAPIEnv(t *testing.T, cfg Config) *apiEnv {
	t.Helper()
	srv, rc := startTestServer(t, cfg)
	rc.QPS, rc.Burst = -1, -1
	e := &apiEnv{srv: srv, cfg: rc}
	e.cs = kubernetes.NewForConfigOrDie(rest.CopyConfig(rc))
	jc := rest.CopyConfig(rc)
	jc.ContentType = "application/json"
	jc.AcceptContentTypes = "application/json"
	e.jcs = kubernetes.NewForConfigOrDie(jc)
	e.dyn = dynamic.NewForConfigOrDie(rest.CopyConfig(rc))
	e.meta = metadata.NewForConfigOrDie(rest.CopyConfig(rc))
	var err error
	if e.http, err = rest.HTTPClientFor(rest.CopyConfig(rc)); err != nil {
		t.Fatal(err)
	}
	return e
}

// namespace creates a namespace for one test case, so cases sharing a
// server do not see each other's objects.
func (e *apiEnv) namespace(t *testing.T, name string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := e.cs.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// rawResponse is what came back from a raw request.
type rawResponse struct {
	code   int
	header http.Header
	body   []byte
}

// do sends one raw HTTPS request to the server's path (with query).
func (e *apiEnv) do(t *testing.T, method, path string, header map[string]string, body []byte) rawResponse {
	t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.http.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return rawResponse{code: resp.StatusCode, header: resp.Header, body: data}
}

// store is a handle on the server's etcd, for compacting history.
func (e *apiEnv) store() *storage.Store { return storage.NewStore(e.srv.etcd.Client) }

// compact writes a throwaway key so etcd's revision moves past everything
// the test has seen, then compacts history up to that revision: every
// resourceVersion the test holds is now expired in etcd.
func (e *apiEnv) compact(t *testing.T) int64 {
	t.Helper()
	ctx := context.Background()
	resp, err := e.srv.etcd.Client.Put(ctx, "/e2e-test/compact-marker", time.Now().String())
	if err != nil {
		t.Fatal(err)
	}
	rev := resp.Header.Revision
	if err := e.store().CompactNow(ctx, rev); err != nil {
		t.Fatalf("compact to %d: %v", rev, err)
	}
	return rev
}

// statusOf returns the metav1.Status carried by an API error, failing the
// test if err is not one.
func statusOf(t *testing.T, err error) metav1.Status {
	t.Helper()
	var st apierrors.APIStatus
	if err == nil || !errors.As(err, &st) {
		t.Fatalf("want an API status error, got %v", err)
	}
	return st.Status()
}

// wantStatus checks the HTTP code and reason of an API error.
func wantStatus(t *testing.T, err error, code int32, reason metav1.StatusReason) metav1.Status {
	t.Helper()
	st := statusOf(t, err)
	if st.Code != code || st.Reason != reason {
		t.Fatalf("want %d %s, got %d %s: %s", code, reason, st.Code, st.Reason, st.Message)
	}
	return st
}

// eventually polls cond with the shared controllertest.Eventually until it
// holds or the deadline passes; an error from cond fails the test at once.
// State the server reaches asynchronously is waited for this way, never by
// sleeping.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	controllertest.Eventually(t, timeout, func() (bool, string) {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return ok, what
	})
}

// warningRecorder collects the Warning headers client-go sees.
type warningRecorder struct {
	mu       sync.Mutex
	messages []string
}

func (w *warningRecorder) HandleWarningHeader(code int, agent, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.messages = append(w.messages, text)
}

func (w *warningRecorder) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.messages...)
}

// requestLog records the URLs of requests a client sends, to check which
// API calls client-go machinery (informers) made.
type requestLog struct {
	mu   sync.Mutex
	reqs []string // "GET /api/v1/...?query"
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.reqs = append(l.reqs, fmt.Sprintf("%s %s", r.Method, r.URL.RequestURI()))
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (l *requestLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.reqs...)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
