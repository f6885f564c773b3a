package streaming

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	rc "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream"
)

// client is one way kubectl-like clients reach the server.
type client struct {
	name string
	new  func(t *testing.T, s *Server, u string) remotecommand.Executor
	// exitCodes: the protocol carries the exit code (v4+); older ones
	// carry a failure's message only (v2, v3) or may drop it (v1).
	exitCodes, exitMessages bool
	// stdinEOF: the client can end stdin (all but WebSocket before v5 and
	// SPDY v1).
	stdinEOF bool
	// tty: the protocol carries resizes (v3+).
	tty bool
}

func restConfig(s *Server) *rest.Config { return &rest.Config{Host: s.URL()} }

func spdyExec(protocols ...string) func(*testing.T, *Server, string) remotecommand.Executor {
	return func(t *testing.T, s *Server, u string) remotecommand.Executor {
		t.Helper()
		parsed, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		if len(protocols) == 0 {
			e, err := remotecommand.NewSPDYExecutor(restConfig(s), "POST", parsed)
			if err != nil {
				t.Fatal(err)
			}
			return e
		}
		tr, up, err := spdy.RoundTripperFor(restConfig(s))
		if err != nil {
			t.Fatal(err)
		}
		e, err := remotecommand.NewSPDYExecutorForProtocols(tr, up, "POST", parsed, protocols...)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

func wsExec(protocols ...string) func(*testing.T, *Server, string) remotecommand.Executor {
	return func(t *testing.T, s *Server, u string) remotecommand.Executor {
		t.Helper()
		var e remotecommand.Executor
		var err error
		if len(protocols) == 0 {
			e, err = remotecommand.NewWebSocketExecutor(restConfig(s), "GET", u)
		} else {
			e, err = remotecommand.NewWebSocketExecutorForProtocols(restConfig(s), "GET", u, protocols...)
		}
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

// fallbackExec is what kubectl 1.30+ does: WebSocket first, SPDY if the
// upgrade fails.
func fallbackExec(wsProtocols ...string) func(*testing.T, *Server, string) remotecommand.Executor {
	return func(t *testing.T, s *Server, u string) remotecommand.Executor {
		t.Helper()
		e, err := remotecommand.NewFallbackExecutor(wsExec(wsProtocols...)(t, s, u), spdyExec()(t, s, u), func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
}

var clients = []client{
	{name: "spdy", new: spdyExec(), exitCodes: true, stdinEOF: true, tty: true},
	{name: "websocket v5", new: wsExec(), exitCodes: true, stdinEOF: true, tty: true},
	{name: "fallback", new: fallbackExec(), exitCodes: true, stdinEOF: true, tty: true},
	// The WebSocket offer is refused before the token is used, so the
	// SPDY retry finds it.
	{name: "fallback after refused websocket", new: fallbackExec("v9.channel.k8s.io"), exitCodes: true, stdinEOF: true, tty: true},
	{name: "spdy v4", new: spdyExec(rc.StreamProtocolV4Name), exitCodes: true, stdinEOF: true, tty: true},
	{name: "spdy v3", new: spdyExec(rc.StreamProtocolV3Name), exitMessages: true, stdinEOF: true, tty: true},
	{name: "spdy v2", new: spdyExec(rc.StreamProtocolV2Name), exitMessages: true, stdinEOF: true},
	{name: "spdy v1", new: spdyExec(rc.StreamProtocolV1Name)},
	{name: "websocket v4", new: wsExec(rc.StreamProtocolV4Name), exitCodes: true, tty: true},
	// client-go speaks v1 over WebSocket without resizes; v1 may drop
	// the status message.
	{name: "websocket channel.k8s.io", new: wsExec(rc.StreamProtocolV1Name)},
}

func stream(t *testing.T, e remotecommand.Executor, opts remotecommand.StreamOptions) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return e.StreamWithContext(ctx, opts)
}

func TestExec(t *testing.T) {
	requireSh(t)
	rt := newHostRuntime()
	s := startServer(t, rt)

	execURL := func(t *testing.T, req *runtimeapi.ExecRequest) string {
		t.Helper()
		req.ContainerId = "c1"
		resp, err := s.GetExec(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Url
	}

	for _, c := range clients {
		t.Run(c.name, func(t *testing.T) {
			t.Run("stdout and stderr apart", func(t *testing.T) {
				u := execURL(t, &runtimeapi.ExecRequest{Cmd: []string{"sh", "-c", "echo out; echo err >&2"}, Stdout: true, Stderr: true})
				var out, errOut bytes.Buffer
				if err := stream(t, c.new(t, s, u), remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}); err != nil {
					t.Fatal(err)
				}
				if out.String() != "out\n" || errOut.String() != "err\n" {
					t.Fatalf("stdout %q stderr %q, want \"out\\n\" and \"err\\n\"", out.String(), errOut.String())
				}
			})
			t.Run("stdin piped", func(t *testing.T) {
				if !c.stdinEOF {
					t.Skip("the protocol cannot end stdin")
				}
				u := execURL(t, &runtimeapi.ExecRequest{Cmd: []string{"cat"}, Stdin: true, Stdout: true, Stderr: true})
				in := strings.Repeat("hello world\n", 10000) // 120 kB: several frames
				var out bytes.Buffer
				if err := stream(t, c.new(t, s, u), remotecommand.StreamOptions{Stdin: strings.NewReader(in), Stdout: &out, Stderr: io.Discard}); err != nil {
					t.Fatal(err)
				}
				if out.String() != in {
					t.Fatalf("got %d bytes back, want the %d sent", out.Len(), len(in))
				}
			})
			t.Run("exit code", func(t *testing.T) {
				u := execURL(t, &runtimeapi.ExecRequest{Cmd: []string{"sh", "-c", "echo bye; exit 7"}, Stdout: true})
				var out syncBuffer
				err := stream(t, c.new(t, s, u), remotecommand.StreamOptions{Stdout: &out})
				// A v1 client returns as soon as it sees an error, output
				// or not.
				if (c.exitCodes || c.exitMessages) && out.String() != "bye\n" {
					t.Errorf("stdout %q", out.String())
				}
				var ce exec.CodeExitError
				switch {
				case c.exitCodes:
					if !errors.As(err, &ce) || ce.Code != 7 {
						t.Fatalf("got %#v, want exec.CodeExitError with code 7", err)
					}
				case c.exitMessages:
					if err == nil || !strings.Contains(err.Error(), "exit code 7") {
						t.Fatalf("got %v, want an error naming exit code 7", err)
					}
				}
			})
			t.Run("runtime error", func(t *testing.T) {
				u := execURL(t, &runtimeapi.ExecRequest{Cmd: []string{"/nonexistent/binary"}, Stdout: true})
				err := stream(t, c.new(t, s, u), remotecommand.StreamOptions{Stdout: io.Discard})
				if (c.exitCodes || c.exitMessages) && (err == nil || !strings.Contains(err.Error(), "error executing command in container")) {
					t.Fatalf("got %v, want the runtime's error", err)
				}
			})
			t.Run("token is single-use", func(t *testing.T) {
				u := execURL(t, &runtimeapi.ExecRequest{Cmd: []string{"true"}, Stdout: true})
				if err := stream(t, c.new(t, s, u), remotecommand.StreamOptions{Stdout: io.Discard}); err != nil {
					t.Fatal(err)
				}
				err := stream(t, c.new(t, s, u), remotecommand.StreamOptions{Stdout: io.Discard})
				if err == nil || !strings.Contains(err.Error(), "404") && !strings.Contains(err.Error(), "not found") {
					t.Fatalf("second use: got %v, want a 404", err)
				}
			})
			t.Run("tty and resize", func(t *testing.T) {
				if !c.tty {
					t.Skip("the protocol has no resize stream")
				}
				testTTY(t, s, rt, c)
			})
		})
	}
}

// sizeQueue feeds the client's resize stream.
type sizeQueue chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	sz, ok := <-q
	if !ok {
		return nil
	}
	return &sz
}

func testTTY(t *testing.T, s *Server, rt *hostRuntime, c client) {
	resp, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c1", Cmd: []string{"sh", "-c", "read line; stty size"}, Stdin: true, Stdout: true, Tty: true})
	if err != nil {
		t.Fatal(err)
	}
	drain(rt.resized)
	queue := make(sizeQueue, 2)
	queue <- remotecommand.TerminalSize{Width: 80, Height: 24}
	queue <- remotecommand.TerminalSize{Width: 100, Height: 50}
	defer close(queue)

	// The line that lets the command finish is typed only after both
	// resizes reached the pty, so stty must see the second size.
	stdinR, stdinW := io.Pipe()
	typed := make(chan error, 1)
	streamDone := make(chan struct{})
	go func() {
		defer stdinW.Close()
		for seen := 0; seen < 2; seen++ {
			select {
			case <-rt.resized:
			case <-streamDone:
				typed <- errors.New("resizes never reached the runtime")
				return
			}
		}
		_, err := io.WriteString(stdinW, "go\n")
		typed <- err
	}()
	var out syncBuffer
	err = stream(t, c.new(t, s, resp.Url), remotecommand.StreamOptions{Stdin: stdinR, Stdout: &out, Tty: true, TerminalSizeQueue: queue})
	close(streamDone)
	if err != nil {
		t.Fatalf("stream: %v (output %q)", err, out.String())
	}
	if err := <-typed; err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "50 100") {
		t.Fatalf("stty size printed %q, want rows 50 cols 100", out.String())
	}
}

func drain(ch chan TerminalSize) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func TestAttach(t *testing.T) {
	requireSh(t)
	s := startServer(t, newHostRuntime())
	for _, c := range clients {
		if !c.stdinEOF {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			resp, err := s.GetAttach(&runtimeapi.AttachRequest{ContainerId: "c1", Stdin: true, Stdout: true, Stderr: true})
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := stream(t, c.new(t, s, resp.Url), remotecommand.StreamOptions{Stdin: strings.NewReader("attached\n"), Stdout: &out, Stderr: io.Discard}); err != nil {
				t.Fatal(err)
			}
			if out.String() != "attached\n" {
				t.Fatalf("got %q", out.String())
			}
		})
	}
}
