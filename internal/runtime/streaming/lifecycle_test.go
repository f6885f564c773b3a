package streaming

import (
	"bytes"
	"context"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// signalWriter closes started on the first write.
type signalWriter struct {
	once    sync.Once
	started chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.started) })
	return len(p), nil
}

// abandon starts `sleep 30` and drops the connection once it runs. The
// server must notice, kill the command and end the session.
func abandon(t *testing.T, s *Server, c client) {
	t.Helper()
	resp, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"sh", "-c", "echo started; exec sleep 30"}, Stdout: true})
	if err != nil {
		t.Fatal(err)
	}
	w := &signalWriter{started: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-w.started:
		case <-time.After(30 * time.Second):
		}
		cancel()
	}()
	_ = c.new(t, s, resp.Url).StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: w})
	select {
	case <-w.started:
	default:
		t.Fatal("the command never started")
	}
}

// TestNoGoroutineLeak runs sessions of every kind, ending in every way,
// and then wants the goroutine count back where it started: whatever a
// session starts ends when its connection does.
func TestNoGoroutineLeak(t *testing.T) {
	requireSh(t)
	rt := newHostRuntime()
	s := startServer(t, rt)
	echo := echoServer(t)
	modern := []client{clients[0], clients[1], clients[2]} // spdy, websocket v5, fallback

	// Warm up once: first use starts lazy singletons (e.g. in net/http).
	for _, c := range modern {
		u, _ := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"true"}, Stdout: true})
		_ = stream(t, c.new(t, s, u.Url), remotecommand.StreamOptions{Stdout: io.Discard})
	}
	baseline := runtime.NumGoroutine()

	for _, c := range modern {
		u, _ := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"sh", "-c", "cat; exit 3"}, Stdin: true, Stdout: true, Stderr: true})
		if err := stream(t, c.new(t, s, u.Url), remotecommand.StreamOptions{Stdin: strings.NewReader("x"), Stdout: io.Discard, Stderr: io.Discard}); err == nil {
			t.Errorf("%s: exit 3 reported as success", c.name)
		}
		a, _ := s.GetAttach(&runtimeapi.AttachRequest{ContainerId: "c", Stdin: true, Stdout: true})
		if err := stream(t, c.new(t, s, a.Url), remotecommand.StreamOptions{Stdin: strings.NewReader("x"), Stdout: io.Discard}); err != nil {
			t.Errorf("%s attach: %v", c.name, err)
		}
		t.Run(c.name+" tty", func(t *testing.T) { testTTY(t, s, rt, c) })
		abandon(t, s, c)
	}
	t.Run("port-forward", func(t *testing.T) {
		for _, d := range pfDialers {
			func() {
				sub := &cleanupT{T: t}
				defer sub.run()
				f := forward(sub, s, d, echo)
				if got, err := roundTrip(f.local, []byte("leak?")); err != nil || !bytes.Equal(got, []byte("leak?")) {
					t.Errorf("%s: %q %v", d.name, got, err)
				}
				f = forward(sub, s, d, closedPort(t))
				_, _ = roundTrip(f.local, []byte("x"))
				<-f.done
			}()
		}
		conn := wsForward(t, s, echo)
		conn.Close()
	})
	checkNoGoroutineLeak(t, baseline)
}

// cleanupT runs the cleanups registered on it when run is called, so a
// loop body can end its port forwards before the leak check.
type cleanupT struct {
	*testing.T
	fns []func()
}

func (c *cleanupT) Cleanup(f func()) { c.fns = append(c.fns, f) }

func (c *cleanupT) run() {
	for i := len(c.fns) - 1; i >= 0; i-- {
		c.fns[i]()
	}
}

func TestIdleTimeoutEndsSession(t *testing.T) {
	requireSh(t)
	s := startServer(t, newHostRuntime(), func(c *Config) { c.StreamIdleTimeout = 300 * time.Millisecond })
	for _, c := range clients[:2] { // spdy, websocket v5
		t.Run(c.name, func(t *testing.T) {
			resp, _ := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"sleep", "30"}, Stdout: true})
			start := time.Now()
			_ = stream(t, c.new(t, s, resp.Url), remotecommand.StreamOptions{Stdout: io.Discard})
			if d := time.Since(start); d > 15*time.Second {
				t.Fatalf("an idle session lasted %v with a 300ms idle timeout", d)
			}
		})
	}
}

func TestShutdownEndsSessions(t *testing.T) {
	requireSh(t)
	for _, c := range clients[:2] { // spdy, websocket v5
		t.Run(c.name, func(t *testing.T) {
			s, err := New(Config{Addr: "127.0.0.1:0", Runtime: newHostRuntime()})
			if err != nil {
				t.Fatal(err)
			}
			ctx, stop := context.WithCancel(context.Background())
			defer stop()
			if err := s.Start(ctx); err != nil {
				t.Fatal(err)
			}
			resp, _ := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"sh", "-c", "echo started; exec sleep 30"}, Stdout: true})
			w := &signalWriter{started: make(chan struct{})}
			ended := make(chan error, 1)
			go func() { ended <- stream(t, c.new(t, s, resp.Url), remotecommand.StreamOptions{Stdout: w}) }()
			select {
			case <-w.started:
			case <-time.After(30 * time.Second):
				t.Fatal("command never started")
			}
			stop()
			select {
			case <-ended:
			case <-time.After(15 * time.Second):
				t.Fatal("session outlived the server")
			}
		})
	}
}

// A SPDY client that does not open every stream the request asked for
// is dropped after StreamCreationTimeout rather than waited for.
func TestStreamCreationTimeout(t *testing.T) {
	requireSh(t)
	s := startServer(t, newHostRuntime(), func(c *Config) { c.StreamCreationTimeout = time.Second })
	resp, _ := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"cat"}, Stdin: true, Stdout: true})
	start := time.Now()
	err := stream(t, clients[0].new(t, s, resp.Url), remotecommand.StreamOptions{Stdout: io.Discard}) // no stdin stream
	if err == nil || !strings.Contains(err.Error(), "stdin") {
		t.Fatalf("got %v, want an error naming the missing stdin stream", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Fatalf("took %v to give up on the missing stream", d)
	}
}
