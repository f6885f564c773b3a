package streaming

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"
)

// ErrInvalidRequest is returned (wrapped) by GetExec, GetAttach and
// GetPortForward for a request that can never be served; the CRI server
// maps it to codes.InvalidArgument.
var ErrInvalidRequest = errors.New("invalid streaming request")

// ErrTooManyRequests is returned (wrapped) when MaxInFlight tokens are
// outstanding; the CRI server maps it to codes.ResourceExhausted.
var ErrTooManyRequests = errors.New("too many outstanding streaming requests")

// Config is what New needs. Zero values take the documented defaults.
type Config struct {
	// Addr is the host:port Start listens on ("127.0.0.1:0" picks a free
	// port). Required unless the server is only mounted via Handler.
	Addr string
	// TLS, if set, makes Start serve HTTPS.
	TLS *tls.Config
	// BaseURL is the URL prefix GetExec & co. return. Default: taken from
	// the listener by Start ("http://127.0.0.1:40123"). Set it when
	// Handler is mounted on another server.
	BaseURL string
	// Runtime runs what the streams carry. Required.
	Runtime Runtime
	// TokenTTL is how long a returned URL stays usable. Default 1 minute,
	// as in the kubelet.
	TokenTTL time.Duration
	// MaxInFlight bounds the outstanding unused tokens. Default 1000.
	MaxInFlight int
	// StreamCreationTimeout bounds how long the client may take to open
	// all the streams of a session (SPDY) or both streams of a port
	// forward pair. Default 30 s.
	StreamCreationTimeout time.Duration
	// StreamIdleTimeout closes a connection that carried no data for that
	// long. Default 4 h, the kubelet's streaming-connection-idle-timeout.
	StreamIdleTimeout time.Duration
	// Clock expires tokens. Default: the real clock.
	Clock clock.PassiveClock
	// Logger receives errors. Default: slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.TokenTTL <= 0 {
		c.TokenTTL = time.Minute
	}
	if c.MaxInFlight <= 0 {
		c.MaxInFlight = 1000
	}
	if c.StreamCreationTimeout <= 0 {
		c.StreamCreationTimeout = 30 * time.Second
	}
	if c.StreamIdleTimeout <= 0 {
		c.StreamIdleTimeout = 4 * time.Hour
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Server is the CRI streaming server: it hands out single-use URLs for
// exec, attach and port-forward and serves them. Safe for concurrent use.
type Server struct {
	cfg    Config
	tokens *tokenCache
	log    *slog.Logger
	mux    *http.ServeMux

	// base is the parent context of every session; it ends when the
	// context given to Start ends, which tears down hijacked connections
	// that http.Server.Shutdown does not know about.
	base     context.Context
	stopBase context.CancelFunc

	mu      sync.Mutex
	url     string
	started bool
}

// New checks cfg and returns a server that does not listen yet.
func New(cfg Config) (*Server, error) {
	cfg.setDefaults()
	if cfg.Runtime == nil {
		return nil, fmt.Errorf("streaming: Config.Runtime is required")
	}
	base, stop := context.WithCancel(context.Background())
	s := &Server{
		cfg:      cfg,
		tokens:   newTokenCache(cfg.Clock, cfg.TokenTTL, cfg.MaxInFlight),
		log:      cfg.Logger,
		base:     base,
		stopBase: stop,
		url:      strings.TrimSuffix(cfg.BaseURL, "/"),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/exec/{token}", s.serveExec)
	mux.HandleFunc("/attach/{token}", s.serveAttach)
	mux.HandleFunc("/portforward/{token}", s.servePortForward)
	s.mux = mux
	return s, nil
}

// Start listens on Config.Addr and serves in the background until ctx
// ends, then closes the listener and every open session. URL is valid
// once Start returns nil.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return fmt.Errorf("streaming: server already started")
	}
	s.started = true
	s.mu.Unlock()

	if s.cfg.Addr == "" {
		return fmt.Errorf("streaming: Config.Addr is required to Start")
	}
	ln, err := net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return fmt.Errorf("streaming: listen on %s: %w", s.cfg.Addr, err)
	}
	scheme := "http"
	if s.cfg.TLS != nil {
		// Upgrades hijack the connection, which HTTP/2 cannot do.
		tc := s.cfg.TLS.Clone()
		tc.NextProtos = []string{"http/1.1"}
		ln = tls.NewListener(ln, tc)
		scheme = "https"
	}
	s.mu.Lock()
	if s.url == "" {
		s.url = scheme + "://" + ln.Addr().String()
	}
	s.mu.Unlock()

	srv := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelDebug),
		BaseContext:       func(net.Listener) context.Context { return s.base },
		TLSNextProto:      map[string]func(*http.Server, *tls.Conn, http.Handler){}, // no HTTP/2
	}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("streaming server stopped", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		s.stopBase()
		_ = srv.Close()
	}()
	return nil
}

// URL is the base URL the returned stream URLs start with; empty before
// Start unless Config.BaseURL is set.
func (s *Server) URL() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.url
}

// Handler serves /exec/{token}, /attach/{token} and /portforward/{token},
// for mounting on another HTTP server (set Config.BaseURL then).
func (s *Server) Handler() http.Handler { return s.mux }

// GetExec validates req, stores it under a fresh token and returns the
// URL the client streams the command's stdio through.
func (s *Server) GetExec(req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if err := validateExec(req); err != nil {
		return nil, err
	}
	u, err := s.issue("exec", req)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecResponse{Url: u}, nil
}

// GetAttach is GetExec for the container's main process.
func (s *Server) GetAttach(req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if err := validateAttach(req); err != nil {
		return nil, err
	}
	u, err := s.issue("attach", req)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.AttachResponse{Url: u}, nil
}

// GetPortForward validates req and returns the URL that forwards
// connections into the pod sandbox's network namespace.
func (s *Server) GetPortForward(req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if err := validatePortForward(req); err != nil {
		return nil, err
	}
	u, err := s.issue("portforward", req)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PortForwardResponse{Url: u}, nil
}

func (s *Server) issue(kind string, req any) (string, error) {
	base := s.URL()
	if base == "" {
		return "", fmt.Errorf("streaming: server has no URL: call Start or set Config.BaseURL")
	}
	token, err := s.tokens.insert(req)
	if err != nil {
		return "", err
	}
	return base + "/" + kind + "/" + token, nil
}

func validateExec(req *runtimeapi.ExecRequest) error {
	if req == nil {
		return fmt.Errorf("%w: nil exec request", ErrInvalidRequest)
	}
	if req.ContainerId == "" {
		return fmt.Errorf("%w: container_id is required", ErrInvalidRequest)
	}
	if len(req.Cmd) == 0 {
		return fmt.Errorf("%w: cmd is required", ErrInvalidRequest)
	}
	return validateStdio(req.Stdin, req.Stdout, req.Stderr, req.Tty)
}

func validateAttach(req *runtimeapi.AttachRequest) error {
	if req == nil {
		return fmt.Errorf("%w: nil attach request", ErrInvalidRequest)
	}
	if req.ContainerId == "" {
		return fmt.Errorf("%w: container_id is required", ErrInvalidRequest)
	}
	return validateStdio(req.Stdin, req.Stdout, req.Stderr, req.Tty)
}

func validateStdio(stdin, stdout, stderr, tty bool) error {
	if tty && stderr {
		// A terminal has one output; there is nothing to put on stderr.
		return fmt.Errorf("%w: tty and stderr cannot both be true", ErrInvalidRequest)
	}
	if !stdin && !stdout && !stderr {
		return fmt.Errorf("%w: one of stdin, stdout or stderr must be set", ErrInvalidRequest)
	}
	return nil
}

func validatePortForward(req *runtimeapi.PortForwardRequest) error {
	if req == nil {
		return fmt.Errorf("%w: nil port-forward request", ErrInvalidRequest)
	}
	if req.PodSandboxId == "" {
		return fmt.Errorf("%w: pod_sandbox_id is required", ErrInvalidRequest)
	}
	for _, p := range req.Port {
		if p <= 0 || p > 65535 {
			return fmt.Errorf("%w: port %d out of range 1-65535", ErrInvalidRequest, p)
		}
	}
	return nil
}

// writeStatusError answers a request that was not upgraded with a
// metav1.Status, as the API server would: client-go's upgrade code
// decodes it and shows its message.
func writeStatusError(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	b, _ := json.Marshal(&metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure, Message: msg, Reason: reason, Code: int32(code),
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// consume returns the request stored under the URL's token if it is of
// type T, or writes 404 and returns false.
func consume[T any](s *Server, w http.ResponseWriter, r *http.Request) (T, bool) {
	token := r.PathValue("token")
	v, ok := s.tokens.consume(token, func(v any) bool { _, ok := v.(T); return ok })
	if !ok {
		var zero T
		writeStatusError(w, http.StatusNotFound, metav1.StatusReasonNotFound,
			"streaming token not found: unknown, expired or already used; ask the runtime for a new URL")
		return zero, false
	}
	return v.(T), true
}
