package streaming

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	gwebsocket "github.com/gorilla/websocket"
	"k8s.io/apimachinery/pkg/util/httpstream"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	streamhttp "k8s.io/streaming/pkg/httpstream"
)

type pfDialer struct {
	name string
	new  func(t testing.TB, s *Server, u *url.URL) httpstream.Dialer
}

func spdyDialer(t testing.TB, s *Server, u *url.URL) httpstream.Dialer {
	tr, up, err := spdy.RoundTripperFor(restConfig(s))
	if err != nil {
		t.Fatal(err)
	}
	return spdy.NewDialer(up, &http.Client{Transport: tr}, "POST", u)
}

func tunnelDialer(t testing.TB, s *Server, u *url.URL) httpstream.Dialer {
	d, err := portforward.NewSPDYOverWebsocketDialer(u, restConfig(s))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var pfDialers = []pfDialer{
	{"spdy", spdyDialer},
	{"spdy over websocket", tunnelDialer},
	// kubectl 1.31+: the tunnel first, SPDY if the upgrade fails.
	{"fallback", func(t testing.TB, s *Server, u *url.URL) httpstream.Dialer {
		return portforward.NewFallbackDialer(tunnelDialer(t, s, u), spdyDialer(t, s, u), func(err error) bool {
			return streamhttp.IsUpgradeFailure(err) || streamhttp.IsHTTPSProxyError(err)
		})
	}},
}

// forwarded is a running client-go PortForwarder.
type forwarded struct {
	local int
	done  chan struct{} // closed when ForwardPorts has returned err
	err   error
}

// forward runs a client-go PortForwarder from a local port to remote.
func forward(t testing.TB, s *Server, d pfDialer, remote int) *forwarded {
	t.Helper()
	resp, err := s.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: "sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(resp.Url)
	if err != nil {
		t.Fatal(err)
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(d.new(t, s, u), []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", remote)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	f := &forwarded{done: make(chan struct{})}
	go func() {
		f.err = fw.ForwardPorts()
		close(f.done)
	}()
	t.Cleanup(func() {
		close(stop)
		<-f.done
	})
	select {
	case <-ready:
	case <-f.done:
		t.Fatalf("ForwardPorts: %v", f.err)
	case <-time.After(30 * time.Second):
		t.Fatal("port forward not ready after 30s")
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 {
		t.Fatalf("GetPorts: %v %v", ports, err)
	}
	f.local = int(ports[0].Local)
	return f
}

// roundTrip sends payload through the local port and returns what the
// echo server sent back once it closed.
func roundTrip(local int, payload []byte) ([]byte, error) {
	c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", local), 5*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	writeErr := make(chan error, 1)
	go func() {
		_, err := c.Write(payload)
		if err == nil {
			err = c.(*net.TCPConn).CloseWrite()
		}
		writeErr <- err
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		return got, err
	}
	return got, <-writeErr
}

func TestPortForward(t *testing.T) {
	s := startServer(t, newHostRuntime())
	echo := echoServer(t)
	for _, d := range pfDialers {
		t.Run(d.name, func(t *testing.T) {
			t.Run("round trip", func(t *testing.T) {
				local := forward(t, s, d, echo).local
				payload := make([]byte, 256<<10)
				_, _ = rand.Read(payload)
				got, err := roundTrip(local, payload)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, payload) {
					t.Fatalf("got %d bytes back, want the %d sent", len(got), len(payload))
				}
			})
			t.Run("20 concurrent connections", func(t *testing.T) {
				local := forward(t, s, d, echo).local
				var wg sync.WaitGroup
				errs := make(chan error, 20)
				for i := range 20 {
					wg.Add(1)
					go func() {
						defer wg.Done()
						payload := []byte(strings.Repeat(fmt.Sprintf("connection %02d;", i), 2000))
						got, err := roundTrip(local, payload)
						if err == nil && !bytes.Equal(got, payload) {
							err = fmt.Errorf("connection %d: got %d bytes back, want %d", i, len(got), len(payload))
						}
						errs <- err
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Error(err)
					}
				}
			})
			t.Run("closed port reports the error", func(t *testing.T) {
				reported := captureHandledErrors(t)
				port := closedPort(t)
				f := forward(t, s, d, port)
				got, _ := roundTrip(f.local, []byte("anyone?"))
				if len(got) != 0 {
					t.Fatalf("got %q from a closed port", got)
				}
				// client-go reports the error stream's text and drops the
				// connection, which ends ForwardPorts.
				select {
				case <-f.done:
					if !errors.Is(f.err, portforward.ErrLostConnectionToPod) {
						t.Fatalf("ForwardPorts: got %v, want ErrLostConnectionToPod", f.err)
					}
				case <-time.After(30 * time.Second):
					t.Fatal("ForwardPorts did not end after the remote error")
				}
				want := fmt.Sprintf("error forwarding port %d to pod sandbox sandbox", port)
				if !reported.waitFor(want, 15*time.Second) || !reported.waitFor("connection refused", time.Second) {
					t.Fatalf("client reported %q, want %q and \"connection refused\"", reported.all(), want)
				}
			})
		})
	}
}

// handledErrors collects what client-go passes to runtime.HandleError.
type handledErrors struct {
	mu   sync.Mutex
	msgs []string
	more chan struct{}
}

func captureHandledErrors(t testing.TB) *handledErrors {
	h := &handledErrors{more: make(chan struct{}, 100)}
	saved := utilruntime.ErrorHandlers
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{func(_ context.Context, err error, msg string, _ ...any) {
		h.mu.Lock()
		h.msgs = append(h.msgs, msg+": "+err.Error())
		h.mu.Unlock()
		select {
		case h.more <- struct{}{}:
		default:
		}
	}}
	t.Cleanup(func() { utilruntime.ErrorHandlers = saved })
	return h
}

func (h *handledErrors) all() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.msgs, "\n")
}

func (h *handledErrors) waitFor(sub string, d time.Duration) bool {
	deadline := time.After(d)
	for !strings.Contains(h.all(), sub) {
		select {
		case <-h.more:
		case <-deadline:
			return false
		}
	}
	return true
}

// wsForward opens a v4.channel.k8s.io port-forward WebSocket the way
// browser clients do; client-go has no client for this flavour.
func wsForward(t *testing.T, s *Server, port int) *gwebsocket.Conn {
	t.Helper()
	resp, err := s.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: "sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	u := strings.Replace(resp.Url, "http://", "ws://", 1) + fmt.Sprintf("?ports=%d", port)
	// wsstream reads one frame per message, so messages must not be
	// fragmented: a write buffer bigger than any message keeps them whole.
	d := gwebsocket.Dialer{Subprotocols: []string{wsV4Binary}, HandshakeTimeout: 5 * time.Second, WriteBufferSize: 64 << 10}
	conn, hr, err := d.Dial(u, nil)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	hr.Body.Close()
	t.Cleanup(func() { conn.Close() })
	if conn.Subprotocol() != wsV4Binary {
		t.Fatalf("negotiated %q", conn.Subprotocol())
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	// Each channel opens with the port, little-endian.
	for ch := byte(0); ch < 2; ch++ {
		_, m, err := conn.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		if len(m) != 3 || m[0] != ch || int(binary.LittleEndian.Uint16(m[1:])) != port {
			t.Fatalf("first frame on channel %d: % x, want the port %d", ch, m, port)
		}
	}
	return conn
}

func TestPortForwardWebSocketChannels(t *testing.T) {
	s := startServer(t, newHostRuntime())
	t.Run("round trip", func(t *testing.T) {
		conn := wsForward(t, s, echoServer(t))
		payload := []byte(strings.Repeat("ping over channel 0;", 1000))
		if err := conn.WriteMessage(gwebsocket.BinaryMessage, append([]byte{0}, payload...)); err != nil {
			t.Fatal(err)
		}
		var got []byte
		for len(got) < len(payload) {
			_, m, err := conn.ReadMessage()
			if err != nil {
				t.Fatalf("after %d bytes: %v", len(got), err)
			}
			if len(m) == 0 || m[0] != 0 {
				t.Fatalf("unexpected frame % x", m)
			}
			got = append(got, m[1:]...)
		}
		if !bytes.Equal(got, payload) {
			t.Fatal("echo differs from what was sent")
		}
	})
	t.Run("closed port", func(t *testing.T) {
		port := closedPort(t)
		conn := wsForward(t, s, port)
		var errText []byte
		for {
			_, m, err := conn.ReadMessage()
			if err != nil {
				break // the server closes once the only port is done
			}
			if len(m) > 0 && m[0] == 1 {
				errText = append(errText, m[1:]...)
			}
		}
		if !strings.Contains(string(errText), "connection refused") {
			t.Fatalf("error channel said %q, want connection refused", errText)
		}
	})
	t.Run("no ports", func(t *testing.T) {
		resp, _ := s.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: "sandbox"})
		u := strings.Replace(resp.Url, "http://", "ws://", 1)
		_, hr, err := (&gwebsocket.Dialer{Subprotocols: []string{wsV4Binary}}).Dial(u, nil)
		if err == nil || hr == nil || hr.StatusCode != http.StatusBadRequest {
			t.Fatalf("got %v, want 400", err)
		}
		hr.Body.Close()
	})
}
