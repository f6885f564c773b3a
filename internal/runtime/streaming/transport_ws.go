package streaming

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	rc "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/klog/v2"
)

// openWebSocketSession upgrades to a channel WebSocket. Unlike SPDY, the
// server fixes the channels: every frame starts with its channel byte
// (stdin 0, stdout 1, stderr 2, error 3, resize 4), and in v5 a frame
// {255, n} from the client half-closes channel n (how stdin ends).
func (s *Server) openWebSocketSession(w http.ResponseWriter, r *http.Request, opts stdio) *rcSession {
	channels := []wsstream.ChannelType{
		rc.StreamStdIn:  pick(opts.stdin, wsstream.ReadChannel),
		rc.StreamStdOut: pick(opts.stdout, wsstream.WriteChannel),
		rc.StreamStdErr: pick(opts.stderr, wsstream.WriteChannel),
		rc.StreamErr:    wsstream.WriteChannel,
		rc.StreamResize: pick(opts.tty, wsstream.ReadChannel),
	}
	binary := wsstream.ChannelProtocolConfig{Binary: true, Channels: channels}
	base64 := wsstream.ChannelProtocolConfig{Binary: false, Channels: channels}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		"":                                      binary,
		wsstream.ChannelWebSocketProtocol:       binary,
		wsstream.Base64ChannelWebSocketProtocol: base64,
		wsV4Binary:                              binary,
		wsV4Base64:                              base64,
		wsV5Binary:                              binary,
	})
	conn.SetIdleTimeout(s.cfg.StreamIdleTimeout)

	hw := newHijackNotifier(w)
	protocol, streams, err := conn.Open(hw, s.withKlogContext(r))
	if err != nil {
		s.log.Debug("websocket upgrade failed", "err", err)
		return nil
	}

	// An empty frame on the first writable channel tells older clients
	// that wait for one (browsers) that the session is up. client-go, the
	// v4 and v5 binary speaker, may not have set up its streams yet and
	// would log the frame as one for an unknown stream.
	switch {
	case protocol == wsV4Binary || protocol == wsV5Binary:
	case opts.stdout:
		_, _ = streams[rc.StreamStdOut].Write(nil)
	case opts.stderr:
		_, _ = streams[rc.StreamStdErr].Write(nil)
	default:
		_, _ = streams[rc.StreamErr].Write(nil)
	}

	var once sync.Once
	ss := &rcSession{
		closed: hw.closed,
		close:  func() { once.Do(func() { _ = conn.Close() }) },
	}
	if opts.stdin {
		ss.stdin = streams[rc.StreamStdIn]
	}
	if opts.stdout {
		ss.stdout = streams[rc.StreamStdOut]
	}
	if opts.stderr {
		ss.stderr = streams[rc.StreamStdErr]
	}
	if opts.tty {
		ss.resize = streams[rc.StreamResize]
	}
	errStream := streams[rc.StreamErr]
	ss.writeStatus = func(status *metav1.Status) error {
		b := encodeStatus(protocol, status)
		if len(b) == 0 {
			return nil
		}
		_, err := errStream.Write(b)
		// The end of the connection, which follows, ends the status.
		return err
	}
	return ss
}

func pick(on bool, t wsstream.ChannelType) wsstream.ChannelType {
	if on {
		return t
	}
	return wsstream.IgnoreChannel
}

// hijackNotifier lets the session see its WebSocket connection end:
// wsstream gives no signal, but the hijacked net.Conn is closed exactly
// when its read loop stops (client gone, idle timeout, or our Close).
type hijackNotifier struct {
	http.ResponseWriter
	once   sync.Once
	closed chan bool
}

func newHijackNotifier(w http.ResponseWriter) *hijackNotifier {
	return &hijackNotifier{ResponseWriter: w, closed: make(chan bool)}
}

func (h *hijackNotifier) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, rw, err := http.NewResponseController(h.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &notifyConn{Conn: c, h: h}, rw, nil
}

type notifyConn struct {
	net.Conn
	h *hijackNotifier
}

func (c *notifyConn) Close() error {
	err := c.Conn.Close()
	c.h.once.Do(func() { close(c.h.closed) })
	return err
}

// withKlogContext routes the klog output of apimachinery's stream code
// (e.g. "Error on socket receive" each time a session ends) to our
// logger at debug level: they are normal ends of connections.
func (s *Server) withKlogContext(r *http.Request) *http.Request {
	logger := logr.FromSlogHandler(debugHandler{s.log.Handler()})
	return r.WithContext(klog.NewContext(r.Context(), logger))
}

// debugHandler demotes every record to debug level.
type debugHandler struct{ slog.Handler }

func (h debugHandler) Enabled(ctx context.Context, _ slog.Level) bool {
	return h.Handler.Enabled(ctx, slog.LevelDebug)
}

func (h debugHandler) Handle(ctx context.Context, r slog.Record) error {
	r.Level = slog.LevelDebug
	return h.Handler.Handle(ctx, r)
}

func (h debugHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return debugHandler{h.Handler.WithAttrs(as)}
}

func (h debugHandler) WithGroup(name string) slog.Handler {
	return debugHandler{h.Handler.WithGroup(name)}
}

var _ io.ReadWriteCloser = (*notifyConn)(nil)
