package streaming

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	rc "k8s.io/apimachinery/pkg/util/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The remotecommand (exec/attach) subprotocols, newest first: the order
// the server prefers when a client offers several.
var spdyExecProtocols = []string{
	rc.StreamProtocolV5Name, rc.StreamProtocolV4Name, rc.StreamProtocolV3Name,
	rc.StreamProtocolV2Name, rc.StreamProtocolV1Name,
}

// WebSocket flavours: binary frames with a channel byte, or text frames
// with the channel as an ASCII digit and base64 data (for browsers).
const (
	wsV4Binary = "v4." + wsstream.ChannelWebSocketProtocol
	wsV4Base64 = "v4." + wsstream.Base64ChannelWebSocketProtocol
	wsV5Binary = rc.StreamProtocolV5Name
)

var wsExecProtocols = []string{
	"", wsstream.ChannelWebSocketProtocol, wsstream.Base64ChannelWebSocketProtocol,
	wsV4Binary, wsV4Base64, wsV5Binary,
}

// stdio is which of a session's streams the stored request asked for.
type stdio struct {
	stdin, stdout, stderr, tty bool
}

// rcSession is one exec or attach connection's streams, whichever
// transport carries them. Absent streams are nil.
type rcSession struct {
	stdin  io.Reader
	stdout io.WriteCloser
	stderr io.WriteCloser
	resize io.Reader
	// writeStatus reports the outcome on the error stream in the
	// negotiated version's encoding and ends the stream.
	writeStatus func(*metav1.Status) error
	// closed is closed once the connection has ended.
	closed <-chan bool
	// close ends the connection; safe to call more than once.
	close func()
}

// transport is how a remotecommand client asked to be served.
type transport struct {
	websocket bool
	protocol  string // negotiated SPDY subprotocol; set by httpstream.Handshake
}

// negotiateRemoteCommand checks the request is an upgrade we can serve,
// before its token is consumed, so that a client that falls back from
// WebSocket to SPDY on an upgrade failure still finds its token.
func negotiateRemoteCommand(w http.ResponseWriter, r *http.Request) (transport, bool) {
	if wsstream.IsWebSocketRequest(r) {
		if !offersAny(r, wsExecProtocols) {
			writeStatusError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, fmt.Sprintf("unable to upgrade: no supported WebSocket subprotocol in %q; supported: %s",
				r.Header.Get(wsstream.WebSocketProtocolHeader), strings.Join(wsExecProtocols[1:], ", ")))
			return transport{}, false
		}
		return transport{websocket: true}, true
	}
	if !httpstream.IsUpgradeRequest(r) {
		writeStatusError(w, http.StatusBadRequest, metav1.StatusReasonBadRequest, "expected a SPDY/3.1 or WebSocket upgrade request")
		return transport{}, false
	}
	proto, err := httpstream.Handshake(r, w, spdyExecProtocols)
	if err != nil {
		return transport{}, false // Handshake wrote the response
	}
	return transport{protocol: proto}, true
}

// offersAny reports whether the WebSocket client offered one of
// protocols; offering none selects "" (the legacy binary protocol).
func offersAny(r *http.Request, protocols []string) bool {
	var offered []string
	for _, v := range r.Header.Values(wsstream.WebSocketProtocolHeader) {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				offered = append(offered, p)
			}
		}
	}
	if len(offered) == 0 {
		offered = []string{""}
	}
	for _, o := range offered {
		for _, p := range protocols {
			if o == p {
				return true
			}
		}
	}
	return false
}

func (s *Server) serveExec(w http.ResponseWriter, r *http.Request) {
	tr, ok := negotiateRemoteCommand(w, r)
	if !ok {
		return
	}
	req, ok := consume[*runtimeapi.ExecRequest](s, w, r)
	if !ok {
		return
	}
	opts := stdio{stdin: req.Stdin, stdout: req.Stdout, stderr: req.Stderr, tty: req.Tty}
	s.serveRemoteCommand(w, r, tr, opts, func(ctx context.Context, ss *rcSession, resize <-chan TerminalSize) *metav1.Status {
		code, err := s.cfg.Runtime.Exec(ctx, req.ContainerId, req.Cmd, ss.stdin, ss.stdout, ss.stderr, req.Tty, resize)
		if err != nil {
			s.log.Error("exec failed", "container", req.ContainerId, "cmd", req.Cmd, "err", err)
			return internalErrorStatus(fmt.Errorf("error executing command in container: %w", err))
		}
		return exitCodeStatus(code)
	})
}

func (s *Server) serveAttach(w http.ResponseWriter, r *http.Request) {
	tr, ok := negotiateRemoteCommand(w, r)
	if !ok {
		return
	}
	req, ok := consume[*runtimeapi.AttachRequest](s, w, r)
	if !ok {
		return
	}
	opts := stdio{stdin: req.Stdin, stdout: req.Stdout, stderr: req.Stderr, tty: req.Tty}
	s.serveRemoteCommand(w, r, tr, opts, func(ctx context.Context, ss *rcSession, resize <-chan TerminalSize) *metav1.Status {
		if err := s.cfg.Runtime.Attach(ctx, req.ContainerId, ss.stdin, ss.stdout, ss.stderr, req.Tty, resize); err != nil {
			s.log.Error("attach failed", "container", req.ContainerId, "err", err)
			return internalErrorStatus(fmt.Errorf("error attaching to container: %w", err))
		}
		return &metav1.Status{Status: metav1.StatusSuccess}
	})
}

type runFunc func(ctx context.Context, ss *rcSession, resize <-chan TerminalSize) *metav1.Status

// serveRemoteCommand upgrades the connection, runs the command with the
// session's streams and reports its outcome. Everything it starts ends
// when the connection does: the command's context is cancelled then.
func (s *Server) serveRemoteCommand(w http.ResponseWriter, r *http.Request, tr transport, opts stdio, run runFunc) {
	ctx, cancel := context.WithCancel(s.base)
	defer cancel()

	var ss *rcSession
	if tr.websocket {
		ss = s.openWebSocketSession(w, r, opts)
	} else {
		ss = s.openSPDYSession(w, r, tr.protocol, opts)
	}
	if ss == nil {
		return
	}
	defer ss.close()

	// The client going away, the idle timeout, or the server stopping
	// ends the command too.
	go func() {
		select {
		case <-ss.closed:
		case <-ctx.Done():
		}
		cancel()
		ss.close()
	}()

	var resize chan TerminalSize
	if ss.resize != nil {
		resize = make(chan TerminalSize)
		go s.forwardResizes(ctx, ss.resize, resize)
	}

	status := run(ctx, ss, resize)
	// Ending stdout and stderr before the status is what lets a client
	// know it has seen all the output when the status arrives.
	if ss.stdout != nil {
		_ = ss.stdout.Close()
	}
	if ss.stderr != nil {
		_ = ss.stderr.Close()
	}
	if ctx.Err() != nil {
		return // nobody left to tell
	}
	if err := ss.writeStatus(status); err != nil {
		s.log.Debug("write remotecommand status", "err", err)
	}
}

// forwardResizes decodes the client's {"Width":w,"Height":h} messages
// into out until the resize stream ends, then closes out.
func (s *Server) forwardResizes(ctx context.Context, in io.Reader, out chan<- TerminalSize) {
	defer close(out)
	dec := json.NewDecoder(in)
	for {
		var size TerminalSize
		if err := dec.Decode(&size); err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil {
				s.log.Debug("resize stream ended", "err", err)
			}
			return
		}
		select {
		case out <- size:
		case <-ctx.Done():
			return
		}
	}
}

// exitCodeStatus is the v4+ encoding of a command's exit: Success, or
// NonZeroExitCode with the code as an ExitCode cause, which is how
// kubectl exec learns the code it exits with.
func exitCodeStatus(code int) *metav1.Status {
	if code == 0 {
		return &metav1.Status{Status: metav1.StatusSuccess}
	}
	return &metav1.Status{
		Status:  metav1.StatusFailure,
		Reason:  rc.NonZeroExitCodeReason,
		Message: fmt.Sprintf("command terminated with non-zero exit code %d", code),
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{
			Type:    rc.ExitCodeCauseType,
			Message: strconv.Itoa(code),
		}}},
	}
}

func badRequestStatus(msg string) *metav1.Status {
	return &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusBadRequest,
		Reason:  metav1.StatusReasonBadRequest,
		Message: msg,
	}
}

func internalErrorStatus(err error) *metav1.Status {
	return &metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Reason:  metav1.StatusReasonInternalError,
		Message: err.Error(),
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Message: err.Error()}}},
	}
}

// encodeStatus renders status for the error stream: versions 4 and 5
// send the Status as JSON, success included; older versions send only a
// failure's message as text and nothing on success.
func encodeStatus(protocol string, status *metav1.Status) []byte {
	switch protocol {
	case rc.StreamProtocolV5Name, rc.StreamProtocolV4Name, wsV4Base64: // v4 and v5 name SPDY and WebSocket alike
		st := *status
		st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
		b, err := json.Marshal(&st)
		if err != nil { // a Status always marshals; keep the client informed regardless
			return []byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","message":"unencodable status"}`)
		}
		return b
	default:
		if status.Status == metav1.StatusSuccess {
			return nil
		}
		return []byte(status.Message)
	}
}

// streamTypes maps the SPDY streamType header to the stream's role.
var streamTypes = []string{
	corev1.StreamTypeStdin, corev1.StreamTypeStdout, corev1.StreamTypeStderr,
	corev1.StreamTypeError, corev1.StreamTypeResize,
}
