package apiserver

// The loopback transport: the server's own components (scheduler,
// controllers, simulated nodes) are API clients like any other, but they
// live in the server's process. Sending their requests over loopback HTTPS
// costs a TLS handshake, encryption both ways and HTTP/2 framing — in the
// density benchmark more than a tenth of the server's CPU — for bytes
// that never leave the process. LoopbackTransport hands the request to
// ServeHTTP directly instead and streams the response back through a pipe.
//
// Only authentication differs from the network path: the caller's
// identity is the user the transport was made for, carried in a context
// value under a key no other code can construct. An HTTP request cannot
// set a context value, so the identity cannot be claimed from the
// network. Authorization, admission, metrics and everything after them
// run unchanged.

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/auth"
)

// loopbackUserKey carries the identity of a loopback request. Its type is
// unexported: only this file can put one in a context.
type loopbackUserKey struct{}

// loopbackUser returns the user a loopback request runs as, if the
// request came through LoopbackTransport.
func loopbackUser(r *http.Request) (*auth.User, bool) {
	u, ok := r.Context().Value(loopbackUserKey{}).(*auth.User)
	return u, ok && u != nil
}

// LoopbackTransport returns a RoundTripper that serves requests with this
// server's handler, in process, as user. The response returns as soon as
// the handler writes its headers (or flushes, or ends); its body streams,
// so watches work. Cancelling the request's context or closing the body
// stops the handler. Requests that need a raw connection (exec, attach,
// port-forward upgrades) are not supported.
func (s *Server) LoopbackTransport(user *auth.User) http.RoundTripper {
	return &loopbackTransport{handler: s, user: user, fair: s.loopbackFair}
}

type loopbackTransport struct {
	handler http.Handler
	user    *auth.User
	// fair queues writes for a seat (loopback_fair.go); nil: none.
	fair *fairShare
}

func (t *loopbackTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	parent := req.Context()
	if err := parent.Err(); err != nil {
		closeRequestBody(req)
		return nil, err
	}
	release := func() {}
	if flow := fairFlowOf(req); flow != "" && t.fair != nil {
		var err error
		if release, err = t.fair.acquire(parent, flow); err != nil {
			closeRequestBody(req)
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(context.WithValue(parent, loopbackUserKey{}, t.user))
	// The handler gets its own copy: a RoundTripper must not change the
	// caller's request, and handlers do (impersonation headers, say).
	r := req.Clone(ctx)
	r.RequestURI = req.URL.RequestURI()
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	r.RemoteAddr = "127.0.0.1:0"
	if r.Host == "" {
		r.Host = req.URL.Host
	}
	if r.Body == nil {
		r.Body = http.NoBody
	}

	pr, pw := io.Pipe()
	w := &loopbackWriter{header: make(http.Header), pw: pw, headersSent: make(chan struct{}), head: req.Method == http.MethodHead}
	body := &loopbackBody{pr: pr, cancel: cancel}
	// A request context that ends while the body is read fails the read,
	// as it does over the network. Registered on the caller's context, not
	// ours: ours ends when the handler does, with the body possibly still
	// being read.
	body.stop = context.AfterFunc(parent, func() { pw.CloseWithError(parent.Err()) })

	loopbackWorkers.run(func() {
		defer release()
		t.serve(w, r, cancel)
	})

	select {
	case <-w.headersSent:
	case <-parent.Done():
		body.Close()
		return nil, parent.Err()
	}
	resp := &http.Response{
		Status:        strconv.Itoa(w.code) + " " + http.StatusText(w.code),
		StatusCode:    w.code,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		Body:          body,
		ContentLength: -1,
		Request:       req,
	}
	if cl, err := strconv.ParseInt(w.sent.Get("Content-Length"), 10, 64); err == nil && cl >= 0 {
		resp.ContentLength = cl
	}
	return resp, nil
}

// loopbackWorkers serves the loopback requests. A request's handler runs
// deep (field management walks whole objects recursively), so a fresh
// goroutine grows its stack from 2 KiB several times over, copying it each
// time: in the density benchmark 3 % of the CPU. The pool's goroutines
// keep the stacks they grew from one request to the next; one left idle
// for ten seconds ends.
var loopbackWorkers = workerPool{work: make(chan func()), idle: 10 * time.Second}

// workerPool runs functions on reused goroutines, starting one more
// whenever none is free: it never queues, so a long request (a watch)
// holds up nothing.
type workerPool struct {
	work chan func()
	idle time.Duration
}

func (p *workerPool) run(f func()) {
	select {
	case p.work <- f:
	default:
		go p.worker(f)
	}
}

func (p *workerPool) worker(f func()) {
	f()
	idle := time.NewTimer(p.idle)
	defer idle.Stop()
	for {
		select {
		case f := <-p.work:
			f()
			idle.Reset(p.idle)
		case <-idle.C:
			return
		}
	}
}

// serve runs the handler and ends the response: headers if none were
// sent, then EOF (or an error if the handler aborted).
func (t *loopbackTransport) serve(w *loopbackWriter, r *http.Request, cancel context.CancelFunc) {
	var endErr error
	defer func() {
		if p := recover(); p != nil {
			// ServeHTTP recovers its own panics and re-panics only
			// http.ErrAbortHandler, which over the network drops the
			// connection: the client sees a truncated body.
			if p != http.ErrAbortHandler {
				slog.Error("panic serving loopback request", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			}
			endErr = io.ErrUnexpectedEOF
		}
		if endErr == nil {
			// A handler that returns because the request was cancelled
			// has not finished its response: the reader gets the
			// cancellation, not a clean EOF.
			endErr = r.Context().Err()
		}
		w.sendHeaders()
		w.pw.CloseWithError(endErr) // nil: EOF
		cancel()
		closeRequestBody(r)
	}()
	t.handler.ServeHTTP(w, r)
}

func closeRequestBody(r *http.Request) {
	if r.Body != nil {
		r.Body.Close()
	}
}

// loopbackWriter is the handler's http.ResponseWriter. Writes go straight
// into the pipe: a Write returns once the client has read it, so a slow
// reader slows the handler down as a full TCP window would, and nothing
// is buffered twice. It is used by the handler's goroutine only, except
// for what it publishes through headersSent.
type loopbackWriter struct {
	header http.Header
	pw     *io.PipeWriter
	once   sync.Once
	// code and sent are set before headersSent closes and never after.
	code        int
	sent        http.Header
	headersSent chan struct{}
	wroteHeader bool
	// head: the response to HEAD has no body, whatever the handler writes.
	head bool
}

func (w *loopbackWriter) Header() http.Header { return w.header }

func (w *loopbackWriter) WriteHeader(code int) {
	if w.wroteHeader || code < 200 {
		// Informational responses have nowhere to go in process; a
		// second status is ignored as net/http ignores it.
		return
	}
	w.wroteHeader = true
	w.code = code
}

func (w *loopbackWriter) Write(b []byte) (int, error) {
	if !w.wroteHeader {
		if w.header.Get("Content-Type") == "" && len(b) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(b))
		}
		w.WriteHeader(http.StatusOK)
	}
	w.sendHeaders()
	switch {
	case w.code == http.StatusNoContent || w.code == http.StatusNotModified:
		return 0, http.ErrBodyNotAllowed
	case w.head:
		return len(b), nil
	}
	return w.pw.Write(b)
}

// Flush sends the headers if they are not out yet; the body has no
// buffer to flush. Watches flush right after their headers so the client
// knows the watch started.
func (w *loopbackWriter) Flush() {
	if !w.wroteHeader {
		w.WriteHeader(http.StatusOK)
	}
	w.sendHeaders()
}

// sendHeaders publishes the status and a copy of the headers (handlers
// may go on changing their map, as net/http allows and ignores).
func (w *loopbackWriter) sendHeaders() {
	w.once.Do(func() {
		if !w.wroteHeader {
			w.WriteHeader(http.StatusOK)
		}
		w.sent = w.header.Clone()
		if w.sent == nil {
			w.sent = http.Header{}
		}
		close(w.headersSent)
	})
}

// loopbackBody is the response body the client reads. Closing it stops
// the handler: its next write fails and its context ends.
type loopbackBody struct {
	pr        *io.PipeReader
	cancel    context.CancelFunc
	stop      func() bool
	closeOnce sync.Once
}

func (b *loopbackBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

func (b *loopbackBody) Close() error {
	b.closeOnce.Do(func() {
		b.stop()
		b.pr.Close()
		b.cancel()
	})
	return nil
}

// loopbackIdentity is authentication for a loopback request: the
// transport's user, through impersonation like any other user.
func (s *Server) loopbackIdentity(r *http.Request, u *auth.User) (*auth.User, error) {
	if !hasImpersonation(r) {
		return u, nil
	}
	if s.cfg.Impersonate == nil {
		return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "users"}, "", errors.New("impersonation is not enabled"))
	}
	return s.cfg.Impersonate(r, u)
}
