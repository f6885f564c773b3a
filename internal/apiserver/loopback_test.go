package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/rudder-dev/rudder/internal/auth"
)

// lbNobody rejects every network credential: only loopback requests can
// be authenticated on the test server.
type lbNobody struct{}

func (lbNobody) AuthenticateRequest(*http.Request) (*auth.User, bool, error) { return nil, false, nil }

// newLoopbackServer is a real server that authenticates nobody from the
// network and lets only "alice" do anything.
func newLoopbackServer(t *testing.T) *Server {
	t.Helper()
	s := newApplyServer(t)
	s.SetAuthenticator(lbNobody{})
	s.SetAuthorization(auth.AuthorizerFunc(func(a auth.Attributes) (auth.Decision, string, error) {
		if a.User != nil && a.User.Name == "alice" {
			return auth.DecisionAllow, "", nil
		}
		return auth.DecisionNoOpinion, "", nil
	}), nil)
	return s
}

func lbClient(t *testing.T, s *Server, user *auth.User) *kubernetes.Clientset {
	t.Helper()
	c, err := kubernetes.NewForConfig(&rest.Config{
		Host:        "http://loopback",
		Transport:   s.LoopbackTransport(user),
		RateLimiter: flowcontrol.NewFakeAlwaysRateLimiter(),
		ContentConfig: rest.ContentConfig{
			ContentType:        "application/vnd.kubernetes.protobuf",
			AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json",
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// lbRequestGoroutines counts the goroutines that belong to loopback
// requests: handlers run by the transport and client-go's watch decoders.
// Counting every goroutine would also count the embedded etcd's and the
// watch caches', which come and go on their own.
func lbRequestGoroutines() (int, string) {
	buf := make([]byte, 8<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	var ours []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "(*loopbackTransport).serve") || strings.Contains(g, "(*StreamWatcher).receive") {
			n++
			ours = append(ours, g)
		}
	}
	return n, strings.Join(ours, "\n\n")
}

// lbSettle waits for the request goroutines to fall back to at most base:
// the handlers of finished, cancelled and closed requests must all end.
func lbSettle(t *testing.T, base int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		n, stacks := lbRequestGoroutines()
		if n <= base {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("request goroutines leaked: %d now, %d before\n%s", n, base, stacks)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

var (
	lbAlice = &auth.User{Name: "alice", Groups: []string{"team", auth.AllAuthenticated}}
	lbBob   = &auth.User{Name: "bob", Groups: []string{auth.AllAuthenticated}}
)

func TestLoopbackIdentity(t *testing.T) {
	s := newLoopbackServer(t)
	ctx := context.Background()

	t.Run("the transport's user is who the server sees", func(t *testing.T) {
		r, err := lbClient(t, s, lbAlice).AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Status.UserInfo; got.Username != "alice" || strings.Join(got.Groups, ",") != "team,system:authenticated" {
			t.Fatalf("user = %+v, want alice in team", got)
		}
	})
	t.Run("authorization still decides", func(t *testing.T) {
		_, err := lbClient(t, s, lbBob).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("bob's list: err = %v, want Forbidden", err)
		}
		if _, err := lbClient(t, s, lbAlice).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatalf("alice's list: %v", err)
		}
	})
	t.Run("the network cannot claim a loopback identity", func(t *testing.T) {
		hs := httptest.NewServer(s)
		defer hs.Close()
		c, err := kubernetes.NewForConfig(&rest.Config{Host: hs.URL, UserAgent: "alice", Username: "alice", Password: "x",
			Impersonate: rest.ImpersonationConfig{UserName: "alice"}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsUnauthorized(err) {
			t.Fatalf("network list: err = %v, want Unauthorized", err)
		}
	})
	t.Run("impersonation headers are not ignored", func(t *testing.T) {
		rc := &rest.Config{Host: "http://loopback", Transport: s.LoopbackTransport(lbBob),
			Impersonate: rest.ImpersonationConfig{UserName: "alice"}}
		c, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		// Impersonation is not enabled on this server: refused, never
		// silently ignored.
		_, err = c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("impersonating list: err = %v, want Forbidden", err)
		}
	})
}

func TestLoopbackWatch(t *testing.T) {
	s := newLoopbackServer(t)
	c := lbClient(t, s, lbAlice)
	ctx := context.Background()
	// Connections and caches the first requests set up are not leaks.
	if _, err := c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("events stream, and stopping early ends the handler", func(t *testing.T) {
		base, _ := lbRequestGoroutines()
		w, err := c.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("w%d", i)}}
			if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-w.ResultChan():
				if ev.Type != watch.Added || ev.Object.(*corev1.ConfigMap).Name != cm.Name {
					t.Fatalf("event %d = %s %v, want ADDED %s", i, ev.Type, ev.Object, cm.Name)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("no event for %s", cm.Name)
			}
		}
		w.Stop()
		lbSettle(t, base)
	})
	t.Run("a client timeout ends the watch and its handler", func(t *testing.T) {
		base, _ := lbRequestGoroutines()
		tctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		w, err := c.CoreV1().ConfigMaps("default").Watch(tctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		timeout := time.After(10 * time.Second)
		for open := true; open; {
			select {
			case _, open = <-w.ResultChan():
			case <-timeout:
				t.Fatal("watch still open after its context ended")
			}
		}
		lbSettle(t, base)
	})
	t.Run("many concurrent requests", func(t *testing.T) {
		base, _ := lbRequestGoroutines()
		var wg sync.WaitGroup
		errs := make(chan error, 400)
		for i := range 100 {
			wg.Go(func() {
				name := fmt.Sprintf("c%d", i)
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": name}}
				if _, err := c.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
				got, err := c.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					errs <- err
					return
				}
				if got.Data["i"] != name {
					errs <- fmt.Errorf("%s: data %v", name, got.Data)
				}
				// A watch abandoned right away, concurrently with the rest.
				wctx, cancel := context.WithCancel(ctx)
				w, err := c.CoreV1().ConfigMaps("default").Watch(wctx, metav1.ListOptions{})
				if err != nil {
					errs <- err
				} else {
					w.Stop()
				}
				cancel()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		list, err := c.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 103 {
			t.Fatalf("%d config maps, want 103", len(list.Items))
		}
		lbSettle(t, base)
	})
}

// The transport's mechanics, against handlers that misbehave on purpose.
func TestLoopbackTransportMechanics(t *testing.T) {
	rt := func(h http.HandlerFunc) http.RoundTripper { return &loopbackTransport{handler: h, user: lbAlice} }
	get := func(t *testing.T, ctx context.Context, h http.HandlerFunc) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://loopback/x", nil)
		if err != nil {
			t.Fatal(err)
		}
		return rt(h).RoundTrip(req)
	}
	base, _ := lbRequestGoroutines()

	t.Run("headers return before the body is written", func(t *testing.T) {
		release := make(chan struct{})
		resp, err := get(t, context.Background(), func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Test", "1")
			w.WriteHeader(http.StatusTeapot)
			w.(http.Flusher).Flush()
			<-release
			io.WriteString(w, "late")
		})
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != http.StatusTeapot || resp.Header.Get("X-Test") != "1" {
			t.Fatalf("response %d %v", resp.StatusCode, resp.Header)
		}
		close(release)
		b, err := io.ReadAll(resp.Body)
		if err != nil || string(b) != "late" {
			t.Fatalf("body %q, %v", b, err)
		}
		resp.Body.Close()
	})
	t.Run("a large body arrives whole", func(t *testing.T) {
		chunk := strings.Repeat("0123456789abcdef", 1024)
		resp, err := get(t, context.Background(), func(w http.ResponseWriter, r *http.Request) {
			for range 64 {
				io.WriteString(w, chunk)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil || len(b) != 64*len(chunk) || string(b[:len(chunk)]) != chunk {
			t.Fatalf("body of %d bytes, %v", len(b), err)
		}
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
			t.Fatalf("response %d %v", resp.StatusCode, resp.Header)
		}
	})
	t.Run("closing the body stops an endless handler", func(t *testing.T) {
		stopped := make(chan error, 1)
		resp, err := get(t, context.Background(), func(w http.ResponseWriter, r *http.Request) {
			for {
				if _, err := io.WriteString(w, "tick\n"); err != nil {
					stopped <- err
					return
				}
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 5)
		if _, err := io.ReadFull(resp.Body, buf); err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		select {
		case err := <-stopped:
			if err == nil {
				t.Fatal("write after close succeeded")
			}
		case <-time.After(5 * time.Second):
			t.Fatal("handler still writing after the body was closed")
		}
		if _, err := resp.Body.Read(buf); err == nil {
			t.Fatal("read after close succeeded")
		}
	})
	t.Run("cancelling before headers returns the context's error", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		handlerDone := make(chan struct{})
		_, err := get(t, ctx, func(w http.ResponseWriter, r *http.Request) {
			defer close(handlerDone)
			<-r.Context().Done()
		})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want deadline exceeded", err)
		}
		select {
		case <-handlerDone:
		case <-time.After(5 * time.Second):
			t.Fatal("handler's context did not end")
		}
	})
	t.Run("cancelling mid-body fails the read and ends the handler", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		handlerDone := make(chan struct{})
		resp, err := get(t, ctx, func(w http.ResponseWriter, r *http.Request) {
			defer close(handlerDone)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		cancel()
		if _, err := io.ReadAll(resp.Body); !errors.Is(err, context.Canceled) {
			t.Fatalf("read err = %v, want context canceled", err)
		}
		select {
		case <-handlerDone:
		case <-time.After(5 * time.Second):
			t.Fatal("handler's context did not end")
		}
	})
	t.Run("an aborted handler truncates the body", func(t *testing.T) {
		resp, err := get(t, context.Background(), func(w http.ResponseWriter, r *http.Request) {
			io.WriteString(w, "part")
			panic(http.ErrAbortHandler)
		})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if _, err := io.ReadAll(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("read err = %v, want unexpected EOF", err)
		}
	})
	t.Run("a handler that writes nothing answers 200 with no body", func(t *testing.T) {
		resp, err := get(t, context.Background(), func(w http.ResponseWriter, r *http.Request) {})
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || len(b) != 0 || err != nil {
			t.Fatalf("response %d %q %v", resp.StatusCode, b, err)
		}
	})
	t.Run("responses without a body have none", func(t *testing.T) {
		for _, tc := range []struct {
			name, method string
			code         int
		}{
			{"HEAD", http.MethodHead, http.StatusOK},
			{"204", http.MethodGet, http.StatusNoContent},
		} {
			t.Run(tc.name, func(t *testing.T) {
				req, err := http.NewRequest(tc.method, "http://loopback/z", nil)
				if err != nil {
					t.Fatal(err)
				}
				resp, err := rt(func(w http.ResponseWriter, r *http.Request) {
					w.WriteHeader(tc.code)
					io.WriteString(w, "not sent")
				}).RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				b, err := io.ReadAll(resp.Body)
				if resp.StatusCode != tc.code || len(b) != 0 || err != nil {
					t.Fatalf("response %d %q %v", resp.StatusCode, b, err)
				}
			})
		}
	})
	t.Run("the handler gets the request body and the user, not the caller's request", func(t *testing.T) {
		req, err := http.NewRequest(http.MethodPost, "http://loopback/y?a=b", strings.NewReader("payload"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-In", "1")
		resp, err := rt(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			u, _ := loopbackUser(r)
			r.Header.Set("X-In", "changed")
			fmt.Fprintf(w, "%s %s %s %s", r.Method, r.RequestURI, b, u.Name)
		}).RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if string(b) != "POST /y?a=b payload alice" {
			t.Fatalf("handler saw %q", b)
		}
		if req.Header.Get("X-In") != "1" {
			t.Fatal("the handler changed the caller's request")
		}
	})
	lbSettle(t, base)
}
