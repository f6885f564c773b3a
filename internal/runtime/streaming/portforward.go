package streaming

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	pf "k8s.io/apimachinery/pkg/util/portforward"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Port-forward is served three ways:
//   - SPDY/3.1 with subprotocol portforward.k8s.io: per forwarded
//     connection the client opens an error stream and a data stream with
//     the same requestID and port headers;
//   - the same SPDY session tunnelled through a WebSocket whose binary
//     messages carry the SPDY bytes (subprotocol
//     "SPDY/3.1+portforward.k8s.io", kubectl 1.31+'s first choice);
//   - a channel WebSocket (v4.channel.k8s.io): two channels per port
//     named in the request, data then error, each starting with the port
//     as two little-endian bytes; one connection per port.
var wsPortForwardProtocols = []string{"", wsV4Binary, wsV4Base64}

func (s *Server) servePortForward(w http.ResponseWriter, r *http.Request) {
	switch {
	case wsstream.IsWebSocketRequestWithTunnelingProtocol(r):
		if !offersAny(r, []string{pf.WebsocketsSPDYTunnelingPortForwardV1}) {
			writeStatusError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "unable to upgrade: tunnelled protocol must be "+pf.WebsocketsSPDYTunnelingPortForwardV1)
			return
		}
		req, ok := consume[*runtimeapi.PortForwardRequest](s, w, r)
		if !ok {
			return
		}
		s.servePortForwardTunnel(w, r, req)
	case wsstream.IsWebSocketRequest(r):
		if !offersAny(r, wsPortForwardProtocols) {
			writeStatusError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("unable to upgrade: no supported WebSocket subprotocol in %q; supported: %s, %s, %s",
				r.Header.Get(wsstream.WebSocketProtocolHeader), wsV4Binary, wsV4Base64, pf.WebsocketsSPDYTunnelingPortForwardV1))
			return
		}
		req, ok := consume[*runtimeapi.PortForwardRequest](s, w, r)
		if !ok {
			return
		}
		s.servePortForwardWebSocket(w, r, req)
	case httpstream.IsUpgradeRequest(r):
		if _, err := httpstream.Handshake(r, w, []string{pf.PortForwardV1Name}); err != nil {
			return // Handshake wrote the response
		}
		req, ok := consume[*runtimeapi.PortForwardRequest](s, w, r)
		if !ok {
			return
		}
		s.servePortForwardSPDY(w, r, req)
	default:
		writeStatusError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "expected a SPDY/3.1 or WebSocket upgrade request")
	}
}

func (s *Server) servePortForwardSPDY(w http.ResponseWriter, r *http.Request, req *runtimeapi.PortForwardRequest) {
	sess := s.newPFSession(req.PodSandboxId)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, sess.onStream)
	if conn == nil {
		sess.cancel()
		return // the upgrader wrote the error response
	}
	sess.run(conn)
}

func (s *Server) servePortForwardTunnel(w http.ResponseWriter, r *http.Request, req *runtimeapi.PortForwardRequest) {
	ws := websocket.Server{
		Handshake: func(cfg *websocket.Config, _ *http.Request) error {
			for _, p := range cfg.Protocol {
				if p == pf.WebsocketsSPDYTunnelingPortForwardV1 {
					cfg.Protocol = []string{p}
					return nil
				}
			}
			return fmt.Errorf("unsupported tunnelled protocols %q", cfg.Protocol)
		},
		Handler: func(wsConn *websocket.Conn) {
			// The client reads the tunnel with gorilla's NextReader and
			// accepts binary messages only.
			wsConn.PayloadType = websocket.BinaryFrame
			sess := s.newPFSession(req.PodSandboxId)
			conn, err := spdy.NewServerConnection(wsConn, sess.onStream)
			if err != nil {
				sess.cancel()
				s.log.Error("port-forward tunnel: SPDY over WebSocket failed", "err", err)
				return
			}
			sess.run(conn)
		},
	}
	ws.ServeHTTP(w, r)
}

// pfSession is one SPDY port-forward connection: it pairs the streams the
// client opens by requestID and runs one Runtime.PortForward per pair.
type pfSession struct {
	s       *Server
	sandbox string
	ctx     context.Context
	cancel  context.CancelFunc

	// ready is closed once conn is set; the stream handler can run before.
	ready chan struct{}
	conn  httpstream.Connection

	mu     sync.Mutex
	pairs  map[string]*pfPair
	closed bool
	wg     sync.WaitGroup
}

type pfPair struct {
	id          string
	data, errs  httpstream.Stream
	dataReplied <-chan struct{}
	errsReplied <-chan struct{}
	timer       *time.Timer
}

func (s *Server) newPFSession(sandbox string) *pfSession {
	ctx, cancel := context.WithCancel(s.base)
	return &pfSession{
		s: s, sandbox: sandbox, ctx: ctx, cancel: cancel,
		ready: make(chan struct{}),
		pairs: make(map[string]*pfPair),
	}
}

// run serves conn until it ends (client close, idle timeout, server
// stop) and returns once every forward has returned.
func (p *pfSession) run(conn httpstream.Connection) {
	conn.SetIdleTimeout(p.s.cfg.StreamIdleTimeout)
	p.conn = conn
	close(p.ready)
	select {
	case <-conn.CloseChan():
	case <-p.ctx.Done():
	}
	p.cancel()
	_ = conn.Close()

	p.mu.Lock()
	p.closed = true
	for id, pair := range p.pairs {
		pair.timer.Stop()
		delete(p.pairs, id)
	}
	p.mu.Unlock()
	p.wg.Wait()
}

// requestID names the pair a stream belongs to. Clients before 1.6 sent
// no requestID; their two streams have consecutive odd IDs (error, then
// data), which is the best guess available for them.
func requestID(st httpstream.Stream) string {
	if id := st.Headers().Get(corev1.PortForwardRequestIDHeader); id != "" {
		return id
	}
	if st.Headers().Get(corev1.StreamType) == corev1.StreamTypeData {
		return strconv.FormatUint(uint64(st.Identifier())-2, 10)
	}
	return strconv.FormatUint(uint64(st.Identifier()), 10)
}

// onStream is spdystream's new-stream handler. It runs on the frame
// goroutine, so it only files the stream and never blocks.
func (p *pfSession) onStream(st httpstream.Stream, replySent <-chan struct{}) error {
	typ := st.Headers().Get(corev1.StreamType)
	if typ != corev1.StreamTypeData && typ != corev1.StreamTypeError {
		return fmt.Errorf("unexpected streamType %q", typ)
	}
	id := requestID(st)

	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("connection is closing")
	}
	pair := p.pairs[id]
	if pair == nil {
		pair = &pfPair{id: id}
		pair.timer = time.AfterFunc(p.s.cfg.StreamCreationTimeout, func() { p.expire(pair) })
		p.pairs[id] = pair
	}
	switch typ {
	case corev1.StreamTypeData:
		if pair.data != nil {
			return fmt.Errorf("duplicate data stream for request %s", id)
		}
		pair.data, pair.dataReplied = st, replySent
	case corev1.StreamTypeError:
		if pair.errs != nil {
			return fmt.Errorf("duplicate error stream for request %s", id)
		}
		pair.errs, pair.errsReplied = st, replySent
	}
	if pair.data != nil && pair.errs != nil {
		pair.timer.Stop()
		delete(p.pairs, id)
		p.wg.Add(1)
		go p.forward(pair)
	}
	return nil
}

// expire drops a pair whose second stream never came.
func (p *pfSession) expire(pair *pfPair) {
	p.mu.Lock()
	if p.pairs[pair.id] != pair {
		p.mu.Unlock()
		return
	}
	delete(p.pairs, pair.id)
	p.mu.Unlock()

	p.s.log.Error("port-forward: timed out waiting for the paired stream", "sandbox", p.sandbox, "requestID", pair.id)
	<-p.ready
	if pair.errs != nil {
		_, _ = io.WriteString(pair.errs, "timed out waiting for the paired data stream")
		_ = pair.errs.Close()
	}
	if pair.data != nil {
		_ = pair.data.Reset()
	}
	p.conn.RemoveStreams(pair.data, pair.errs)
}

func (p *pfSession) forward(pair *pfPair) {
	defer p.wg.Done()
	select {
	case <-p.ready:
	case <-p.ctx.Done():
		return
	}
	defer p.conn.RemoveStreams(pair.data, pair.errs)
	// Reset after the FIN: data the client sent that nobody will read
	// would otherwise block spdystream's frame worker for good (the
	// client's own RST queues behind it), and with it the connection.
	// The connection's Close would reset it, but removed streams are not
	// its any more.
	defer pair.data.Reset()
	defer pair.errs.Close()
	defer pair.data.Close()
	for _, replied := range []<-chan struct{}{pair.dataReplied, pair.errsReplied} {
		select {
		case <-replied:
		case <-p.ctx.Done():
			return
		}
	}

	port, err := parsePort(pair.data.Headers().Get(corev1.PortHeader))
	if err == nil {
		err = p.s.cfg.Runtime.PortForward(p.ctx, p.sandbox, port, pair.data)
		if err != nil {
			err = fmt.Errorf("error forwarding port %d to pod sandbox %s: %w", port, p.sandbox, err)
		}
	}
	if err != nil {
		if p.ctx.Err() == nil {
			p.s.log.Error("port-forward failed", "sandbox", p.sandbox, "err", err)
		}
		_, _ = io.WriteString(pair.errs, err.Error())
	}
}

func parsePort(s string) (int32, error) {
	port, err := strconv.ParseUint(s, 10, 16)
	if err != nil || port == 0 {
		return 0, fmt.Errorf("invalid port %q: must be 1-65535", s)
	}
	return int32(port), nil
}

// servePortForwardWebSocket serves the channel flavour: the ports come
// from the URL's "ports" query (as kubectl and the apiserver pass them),
// or else from the CRI request.
func (s *Server) servePortForwardWebSocket(w http.ResponseWriter, r *http.Request, req *runtimeapi.PortForwardRequest) {
	ports, err := wsPorts(r, req)
	if err != nil {
		writeStatusError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, err.Error())
		return
	}
	channels := make([]wsstream.ChannelType, 0, 2*len(ports))
	for range ports {
		channels = append(channels, wsstream.ReadWriteChannel, wsstream.WriteChannel)
	}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		"":         {Binary: true, Channels: channels},
		wsV4Binary: {Binary: true, Channels: channels},
		wsV4Base64: {Binary: false, Channels: channels},
	})
	conn.SetIdleTimeout(s.cfg.StreamIdleTimeout)
	hw := newHijackNotifier(w)
	_, streams, err := conn.Open(hw, s.withKlogContext(r))
	if err != nil {
		s.log.Debug("websocket upgrade failed", "err", err)
		return
	}
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()
	defer conn.Close()
	go func() {
		select {
		case <-hw.closed:
		case <-ctx.Done():
		}
		cancel()
		_ = conn.Close()
	}()

	var wg sync.WaitGroup
	for i, port := range ports {
		data, errs := streams[2*i], streams[2*i+1]
		var prefix [2]byte
		binary.LittleEndian.PutUint16(prefix[:], uint16(port))
		_, _ = data.Write(prefix[:])
		_, _ = errs.Write(prefix[:])
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer errs.Close()
			defer data.Close()
			if err := s.cfg.Runtime.PortForward(ctx, req.PodSandboxId, port, data); err != nil {
				err = fmt.Errorf("error forwarding port %d to pod sandbox %s: %w", port, req.PodSandboxId, err)
				if ctx.Err() == nil {
					s.log.Error("port-forward failed", "sandbox", req.PodSandboxId, "err", err)
				}
				_, _ = io.WriteString(errs, err.Error())
			}
		}()
	}
	wg.Wait()
}

func wsPorts(r *http.Request, req *runtimeapi.PortForwardRequest) ([]int32, error) {
	var ports []int32
	for _, v := range r.URL.Query()[corev1.PortHeader+"s"] {
		for _, f := range strings.Split(v, ",") {
			p, err := parsePort(strings.TrimSpace(f))
			if err != nil {
				return nil, err
			}
			ports = append(ports, p)
		}
	}
	if len(ports) == 0 {
		ports = req.Port
	}
	if len(ports) == 0 {
		return nil, errors.New("a WebSocket port-forward needs at least one port (query parameter \"ports\")")
	}
	return ports, nil
}
