package kubeletapi

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"
)

func TestKubeletSubresources(t *testing.T) {
	for _, tc := range []struct {
		path string
		want []string
	}{
		{"/metrics/resource", []string{"metrics"}},
		{"/metrics", []string{"metrics"}},
		{"/metricsfoo", []string{"proxy"}},
		{"/stats/summary", []string{"stats"}},
		{"/logs/", []string{"log"}},
		{"/pods", []string{"pods", "proxy"}},
		{"/healthz", []string{"healthz", "proxy"}},
		{"/configz", []string{"configz", "proxy"}},
		{"/containerLogs/ns/pod/c", []string{"proxy"}},
		{"/exec/ns/pod/c", []string{"proxy"}},
		{"/checkpoint/ns/pod/c", []string{"checkpoint"}},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if got := Subresources(tc.path); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// The authorizer asks once per decision and keeps allowed answers 5 min,
// denied ones 30 s.
func TestKubeletAuthorizerCache(t *testing.T) {
	client := fake.NewClientset()
	var asked []authorizationv1.ResourceAttributes
	client.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sar := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		attrs := *sar.Spec.ResourceAttributes
		asked = append(asked, attrs)
		// admin may do anything; alice may get node healthz through proxy only.
		allowed := sar.Spec.User == "admin" || (sar.Spec.User == "alice" && attrs.Subresource == "proxy" && attrs.Verb == "get")
		sar.Status.Allowed = allowed
		if !slices.Contains(sar.Spec.Groups, "system:authenticated") {
			sar.Status.Allowed = false
		}
		return true, sar, nil
	})
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	a := NewAuthorizer(client, clk, slog.New(slog.DiscardHandler))
	user := func(name string) User {
		return CertUser(&x509.Certificate{Subject: pkix.Name{CommonName: name, Organization: []string{"devs"}}})
	}
	try := func(u User, method, path string) int {
		w := httptest.NewRecorder()
		if a.Authorize(w, httptest.NewRequest(method, path, nil), u, "sim-0") {
			return http.StatusOK
		}
		return w.Code
	}

	steps := []struct {
		name         string
		user         string
		method, path string
		advance      time.Duration
		wantCode     int
		wantAsked    int // reviews so far
	}{
		{"allowed: one review", "admin", "GET", "/metrics/resource", 0, 200, 1},
		{"allowed again: cached", "admin", "GET", "/metrics/resource", 4 * time.Minute, 200, 1},
		{"allowed after 5 min: asked again", "admin", "GET", "/metrics/resource", 2 * time.Minute, 200, 2},
		{"fine-grained first, then proxy", "alice", "GET", "/healthz", 0, 200, 4},
		{"denied", "alice", "GET", "/metrics/resource", 0, 403, 5},
		{"denied again: cached", "alice", "GET", "/metrics/resource", 20 * time.Second, 403, 5},
		{"denied after 30 s: asked again", "alice", "GET", "/metrics/resource", 11 * time.Second, 403, 6},
		{"another verb is another decision", "alice", "POST", "/exec/ns/p/c", 0, 403, 7},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			clk.Step(s.advance)
			if got := try(user(s.user), s.method, s.path); got != s.wantCode {
				t.Errorf("code %d, want %d", got, s.wantCode)
			}
			if len(asked) != s.wantAsked {
				t.Errorf("%d reviews, want %d: %+v", len(asked), s.wantAsked, asked)
			}
		})
	}
	last := asked[len(asked)-1]
	if last != (authorizationv1.ResourceAttributes{Verb: "create", Version: "v1", Resource: "nodes", Subresource: "proxy", Name: "sim-0"}) {
		t.Errorf("last review %+v", last)
	}
	w := httptest.NewRecorder()
	a.Authorize(w, httptest.NewRequest("GET", "/healthz", nil), user("bob"), "sim-0")
	if want := "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n"; w.Body.String() != want {
		t.Errorf("body %q, want %q", w.Body.String(), want)
	}
}

// A review the API server refuses (the fleet's client may not create
// them) is a 500, as upstream's "Authorization error", and is not cached.
func TestKubeletAuthorizerReviewFails(t *testing.T) {
	client := fake.NewClientset()
	calls := 0
	client.PrependReactor("create", "subjectaccessreviews", func(clienttesting.Action) (bool, runtime.Object, error) {
		calls++
		return true, nil, apierrors.NewForbidden(authorizationv1.Resource("subjectaccessreviews"), "", errors.New("no"))
	})
	a := NewAuthorizer(client, testingclock.NewFakeClock(time.Unix(1000, 0)), slog.New(slog.DiscardHandler))
	u := CertUser(&x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client"}})
	for range 2 {
		w := httptest.NewRecorder()
		if a.Authorize(w, httptest.NewRequest("GET", "/metrics/resource", nil), u, "sim-0") || w.Code != http.StatusInternalServerError ||
			w.Body.String() != "Authorization error (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource=metrics)\n" {
			t.Errorf("got %d %q, want 500 Authorization error", w.Code, w.Body.String())
		}
	}
	if calls != 2 {
		t.Errorf("%d reviews, want 2 (failures are not cached)", calls)
	}
}

// BenchmarkKubeletAuthorizeCached is the cost a scrape pays once the
// decision is cached: go test ./internal/simnode -run '^$' -bench KubeletAuthorize
func BenchmarkKubeletAuthorizeCached(b *testing.B) {
	client := fake.NewClientset()
	client.PrependReactor("create", "subjectaccessreviews", func(a clienttesting.Action) (bool, runtime.Object, error) {
		sar := a.(clienttesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		sar.Status.Allowed = true
		return true, sar, nil
	})
	a := NewAuthorizer(client, testingclock.NewFakeClock(time.Unix(1000, 0)), slog.New(slog.DiscardHandler))
	u := CertUser(&x509.Certificate{Subject: pkix.Name{CommonName: "kube-apiserver-kubelet-client"}})
	r := httptest.NewRequest("GET", "/metrics/resource", nil)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		if !a.Authorize(w, r, u, "sim-0") {
			b.Fatal("denied")
		}
	}
}
