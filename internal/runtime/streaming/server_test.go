package streaming

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// startServer runs a server on a loopback port for the test's duration.
func startServer(t testing.TB, rt Runtime, mutate ...func(*Config)) *Server {
	t.Helper()
	cfg := Config{Addr: "127.0.0.1:0", Runtime: rt}
	for _, m := range mutate {
		m(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestNewRequiresRuntime(t *testing.T) {
	if _, err := New(Config{Addr: "127.0.0.1:0"}); err == nil {
		t.Fatal("New without a Runtime succeeded")
	}
}

func TestRequestValidation(t *testing.T) {
	s := startServer(t, newHostRuntime())
	tests := []struct {
		name string
		call func() error
		ok   bool
	}{
		{"exec ok", func() error {
			_, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"true"}, Stdout: true})
			return err
		}, true},
		{"exec nil", func() error { _, err := s.GetExec(nil); return err }, false},
		{"exec no container", func() error {
			_, err := s.GetExec(&runtimeapi.ExecRequest{Cmd: []string{"true"}, Stdout: true})
			return err
		}, false},
		{"exec no cmd", func() error {
			_, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Stdout: true})
			return err
		}, false},
		{"exec tty with stderr", func() error {
			_, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"sh"}, Tty: true, Stdout: true, Stderr: true})
			return err
		}, false},
		{"exec no streams", func() error {
			_, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"true"}})
			return err
		}, false},
		{"attach ok", func() error {
			_, err := s.GetAttach(&runtimeapi.AttachRequest{ContainerId: "c", Stdin: true, Tty: true})
			return err
		}, true},
		{"attach tty with stderr", func() error {
			_, err := s.GetAttach(&runtimeapi.AttachRequest{ContainerId: "c", Stderr: true, Tty: true})
			return err
		}, false},
		{"attach no streams", func() error { _, err := s.GetAttach(&runtimeapi.AttachRequest{ContainerId: "c"}); return err }, false},
		{"portforward ok", func() error {
			_, err := s.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: "p", Port: []int32{80}})
			return err
		}, true},
		{"portforward no sandbox", func() error { _, err := s.GetPortForward(&runtimeapi.PortForwardRequest{}); return err }, false},
		{"portforward bad port", func() error {
			_, err := s.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: "p", Port: []int32{70000}})
			return err
		}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if tc.ok && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if !tc.ok && !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("got %v, want ErrInvalidRequest", err)
			}
		})
	}
}

func TestURLs(t *testing.T) {
	s := startServer(t, newHostRuntime())
	e, _ := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"true"}, Stdout: true})
	a, _ := s.GetAttach(&runtimeapi.AttachRequest{ContainerId: "c", Stdout: true})
	p, _ := s.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: "p"})
	for _, tc := range []struct{ url, prefix string }{
		{e.Url, s.URL() + "/exec/"}, {a.Url, s.URL() + "/attach/"}, {p.Url, s.URL() + "/portforward/"},
	} {
		if !strings.HasPrefix(tc.url, tc.prefix) || len(tc.url) < len(tc.prefix)+20 {
			t.Errorf("URL %q: want prefix %q and a 22-character token", tc.url, tc.prefix)
		}
	}
	tok := func(u string) string { return u[strings.LastIndex(u, "/")+1:] }
	if tok(e.Url) == tok(a.Url) || tok(a.Url) == tok(p.Url) {
		t.Error("two requests got the same token")
	}
}

// get does a plain GET and returns status and body.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestTokenNotFoundAndExpiry(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	s := startServer(t, newHostRuntime(), func(c *Config) { c.Clock = clk })

	t.Run("unknown token is 404 with an explanation", func(t *testing.T) {
		code, body := execOnceSPDY(t, s.URL()+"/exec/nosuchtoken")
		if code != http.StatusNotFound || !strings.Contains(body, "expired or already used") {
			t.Fatalf("got %d %q", code, body)
		}
	})
	t.Run("expired token is 404", func(t *testing.T) {
		resp, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"true"}, Stdout: true})
		if err != nil {
			t.Fatal(err)
		}
		clk.SetTime(clk.Now().Add(time.Minute + time.Second))
		code, body := execOnceSPDY(t, resp.Url)
		if code != http.StatusNotFound {
			t.Fatalf("got %d %q, want 404", code, body)
		}
	})
	t.Run("token at the wrong endpoint is 404 and not burnt", func(t *testing.T) {
		resp, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"true"}, Stdout: true})
		if err != nil {
			t.Fatal(err)
		}
		wrong := strings.Replace(resp.Url, "/exec/", "/attach/", 1)
		if code, _ := execOnceSPDY(t, wrong); code != http.StatusNotFound {
			t.Fatalf("attach with an exec token: got %d, want 404", code)
		}
		if s.tokens.len() == 0 {
			t.Fatal("the exec token was consumed by the attach endpoint")
		}
	})
	t.Run("plain GET is 400 and leaves the token", func(t *testing.T) {
		resp, _ := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"true"}, Stdout: true})
		n := s.tokens.len()
		if code, _ := get(t, resp.Url); code != http.StatusBadRequest {
			t.Fatalf("got %d, want 400", code)
		}
		if s.tokens.len() != n {
			t.Fatal("a non-upgrade request consumed the token")
		}
	})
}

func TestTooManyTokens(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	s := startServer(t, newHostRuntime(), func(c *Config) { c.MaxInFlight = 2; c.Clock = clk })
	req := &runtimeapi.PortForwardRequest{PodSandboxId: "p"}
	for range 2 {
		if _, err := s.GetPortForward(req); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.GetPortForward(req); !errors.Is(err, ErrTooManyRequests) {
		t.Fatalf("third request: got %v, want ErrTooManyRequests", err)
	}
	clk.SetTime(clk.Now().Add(2 * time.Minute)) // the two expire and make room
	if _, err := s.GetPortForward(req); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
}

// execOnceSPDY sends a SPDY upgrade for url by hand and returns the
// status code and body when the server refuses it.
func execOnceSPDY(t *testing.T, url string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "SPDY/3.1")
	req.Header.Set("X-Stream-Protocol-Version", "v4.channel.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// checkNoGoroutineLeak fails t unless the goroutine count comes back to
// at most baseline within the deadline, and shows the stacks if not.
func checkNoGoroutineLeak(t *testing.T, baseline int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= baseline {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			_ = os.WriteFile(t.TempDir()+"/stacks", buf, 0o600)
			t.Fatalf("%d goroutines, baseline %d; stacks:\n%s", n, baseline, buf)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
