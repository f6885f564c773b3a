package apiserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/storage"
)

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	Store *storage.Store
	// Resources served; default registry.All().
	Resources []*registry.Resource
	// Authenticator identifies callers; nil lets every request through as
	// a member of system:masters (for tests of the REST layer alone).
	Authenticator auth.Authenticator
	// Impersonate applies Impersonate-* headers; nil refuses them.
	Impersonate func(r *http.Request, u *auth.User) (*auth.User, error)
	// Authorizer decides every request; nil allows everything.
	Authorizer auth.Authorizer
	// RuleResolver answers SelfSubjectRulesReview. Nil means RBAC over
	// the server's own roles and bindings when an Authorizer is set, and
	// every rule when none is (everything is allowed then).
	RuleResolver auth.RuleResolver
	// Admission is the admission chain (internal/admission's Chain); it
	// may be built after New, from the server's own caches, and set with
	// SetAdmission before Start. Nil admits everything.
	Admission admit.Interface
	// WatchCacheCapacity is the number of events each resource's cache
	// keeps for watches that resume (default 10,000).
	WatchCacheCapacity int
	// ServiceNetwork is where services get cluster IPs and node ports
	// (default DefaultServiceNetwork()).
	ServiceNetwork ServiceNetwork
	// Registry collects the server's metrics (default: a new registry).
	Registry *prometheus.Registry
	Clock    clock.Clock
	// Profiling serves Go's profiles under /debug/pprof/ (kube-apiserver's
	// --profiling), to callers allowed the non-resource URL.
	Profiling bool
	// LoopbackWrites is how many writes of the in-process components run at
	// once, shared fairly between them (loopback_fair.go): 0 means
	// DefaultLoopbackWrites, a negative number no limit.
	LoopbackWrites int
}

// DefaultLoopbackWrites is Config.LoopbackWrites' default.
const DefaultLoopbackWrites = 64

// Server is the API server: REST handlers over storage with one watch
// cache per resource, behind authentication, authorization and admission.
type Server struct {
	cfg       Config
	store     *storage.Store
	codec     *storage.Codec
	codecs    *codecs
	admission admit.Interface
	clock     clock.Clock
	metrics   *prometheus.Registry

	handlers map[schema.GroupVersionResource]*resourceHandler
	// virtual are the resources with no storage (reviews): no cache, only
	// create, answered by the handler's review func.
	virtual map[schema.GroupVersionResource]*resourceHandler

	// componentChecks are the in-process components' health checks for
	// componentstatuses (componentstatus.go).
	componentMu     sync.Mutex
	componentChecks map[string]ComponentCheck
	// saTokens issues and publishes service-account tokens; nil until
	// SetServiceAccountTokens.
	saTokens *serviceAccountTokens
	// nodes forwards logs, exec, attach, port-forward and proxy requests
	// to nodes; nil until SetNodeConnector (see streaming.go).
	nodes NodeConnector
	// resourceMetrics scrapes kubelets for metrics.k8s.io
	// (resourcemetrics.go); it has no dialer until SetKubeletClient.
	resourceMetrics *rmScraper
	// groups lists API groups and versions in discovery order.
	groups []groupVersions
	// discovery is swapped whole when custom resources come or go.
	discovery atomic.Pointer[discoveryCache]
	// crd serves the resources CustomResourceDefinitions define (crd.go);
	// nil when the server does not serve CRDs.
	crd      *crdController
	openapi  *openAPI
	services *serviceAllocator
	checks   []healthCheck
	ready    chan struct{}
	// loopbackFair shares the in-process components' writes out fairly;
	// nil when unlimited.
	loopbackFair *fairShare
}

type groupVersions struct {
	group    string
	versions []string
}

// New builds a Server. Start must run before it serves.
func New(cfg Config) (*Server, error) {
	if cfg.Store == nil {
		return nil, errors.New("apiserver: Config.Store is required")
	}
	if cfg.Resources == nil {
		cfg.Resources = registry.All()
	}
	if cfg.WatchCacheCapacity == 0 {
		cfg.WatchCacheCapacity = 10000
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if !cfg.ServiceNetwork.CIDR.IsValid() {
		cfg.ServiceNetwork = DefaultServiceNetwork()
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	s := &Server{
		cfg:       cfg,
		store:     cfg.Store,
		codecs:    newCodecs(),
		admission: orNone(cfg.Admission),
		clock:     cfg.Clock,
		metrics:   cfg.Registry,
		handlers:  map[schema.GroupVersionResource]*resourceHandler{},
		virtual:   map[schema.GroupVersionResource]*resourceHandler{},
		ready:     make(chan struct{}),
	}
	s.codec = storage.NewCodec(s.codecs.scheme)
	s.resourceMetrics = newRMScraper(cfg.Clock)
	if cfg.LoopbackWrites == 0 {
		cfg.LoopbackWrites = DefaultLoopbackWrites
	}
	s.loopbackFair = newFairShare(cfg.LoopbackWrites)
	seen := map[string]int{}
	for _, res := range cfg.Resources {
		gvr := res.GroupVersionResource()
		_, dup := s.handlers[gvr]
		if _, vdup := s.virtual[gvr]; dup || vdup {
			return nil, fmt.Errorf("apiserver: resource %s registered twice", gvr)
		}
		h := &resourceHandler{s: s, res: res, gvk: res.GroupVersionKind(), gr: gvr.GroupResource(), deprecation: deprecationWarning(res)}
		if res.Virtual && res.Computed {
			s.virtual[gvr] = h
		} else if res.Virtual {
			if h.review = s.reviewFor(gvr.GroupResource()); h.review == nil {
				return nil, fmt.Errorf("apiserver: virtual resource %s has no review", gvr)
			}
			s.virtual[gvr] = h
		} else {
			h.cache = newWatchCache(res, s.store, s.codec, s.codecs, cfg.WatchCacheCapacity)
			s.handlers[gvr] = h
		}
		i, ok := seen[res.Group]
		if !ok {
			i = len(s.groups)
			seen[res.Group] = i
			s.groups = append(s.groups, groupVersions{group: res.Group})
		}
		if !slices.Contains(s.groups[i].versions, res.Version) {
			s.groups[i].versions = append(s.groups[i].versions, res.Version)
		}
	}
	services := s.handlers[corev1.SchemeGroupVersion.WithResource("services")]
	if services != nil {
		s.services = &serviceAllocator{net: cfg.ServiceNetwork, store: s.store}
		services.hooks = s.services.hooks()
	}
	s.crd = newCRDController(s)
	s.rebuildDiscovery()
	s.openapi = newOpenAPI(cfg.Resources)
	for _, c := range append([]prometheus.Collector{requestCounter, requestLatency, watchersGauge}, storage.Metrics()...) {
		if err := s.metrics.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				return nil, err
			}
		}
	}
	s.checks = []healthCheck{
		{name: "ping", check: func(context.Context) error { return nil }},
		{name: "etcd", check: s.checkEtcd},
		{name: "informer-sync", readyOnly: true, check: s.checkCaches},
		{name: "poststarthook/rudder-bootstrap", check: s.checkBootstrapped},
	}
	return s, nil
}

// SetAuthorization installs the authorizer and impersonation, which are
// built from the server's own caches (RBACSource) after New. It must be
// called before the server serves.
func (s *Server) SetAuthorization(az auth.Authorizer, impersonate func(r *http.Request, u *auth.User) (*auth.User, error)) {
	s.cfg.Authorizer = az
	s.cfg.Impersonate = impersonate
}

// SetAuthenticator replaces Config.Authenticator, for authenticators built
// from the server's own caches after New (service-account tokens are
// checked against the ServiceAccounts it serves). It must be called
// before the server serves.
func (s *Server) SetAuthenticator(a auth.Authenticator) { s.cfg.Authenticator = a }

// SetAdmission installs the admission chain; nil admits everything. It
// must be called before Start.
func (s *Server) SetAdmission(c admit.Interface) { s.admission = orNone(c) }

func orNone(c admit.Interface) admit.Interface {
	if c == nil {
		return admit.None
	}
	return c
}

// Start runs the watch caches until ctx ends and returns once every cache
// has its initial list.
func (s *Server) Start(ctx context.Context) error {
	for _, h := range s.handlers {
		go h.cache.run(ctx)
	}
	for _, h := range s.handlers {
		select {
		case <-h.cache.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if s.services != nil {
		h := s.handlers[corev1.SchemeGroupVersion.WithResource("services")]
		if err := s.services.repair(ctx, h.cache, false); err != nil {
			return fmt.Errorf("repair service allocations: %w", err)
		}
		go s.services.runRepair(ctx, h.cache, s.clock, repairInterval)
	}
	if s.crd != nil {
		s.crd.reconcile(ctx, false)
		go s.crd.run(ctx)
	}
	return nil
}

// MarkReady ends start-up: /readyz reports ready once bootstrap data exists.
func (s *Server) MarkReady() { close(s.ready) }

func (s *Server) now() time.Time { return s.clock.Now() }

type ctxKey int

const (
	userKey ctxKey = iota
	infoKey
)

// requestUser returns the user a request runs as.
func requestUser(r *http.Request) *auth.User {
	u, _ := r.Context().Value(userKey).(*auth.User)
	return u
}

// ServeHTTP runs the request pipeline: recovery, metrics, authentication,
// impersonation, authorization, then the handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	info := parseRequestInfo(r)
	rw := &statusRecorder{ResponseWriter: w, code: http.StatusOK}
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			slog.Error("panic serving request", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			if !rw.wrote {
				s.writeError(rw, r, apierrors.NewInternalError(fmt.Errorf("internal server error")))
			}
		}
		observeRequest(info, rw.code, time.Since(start))
	}()

	user, err := s.authenticate(r)
	if err != nil {
		s.writeError(rw, r, err)
		return
	}
	ctx := context.WithValue(r.Context(), userKey, user)
	ctx = context.WithValue(ctx, infoKey, info)
	// Admission plugins may admit a write with warnings; they go out as
	// Warning headers, written before the response is.
	ctx = admit.WithWarnings(ctx, func(msg string) { addWarning(rw, msg) })
	r = r.WithContext(ctx)
	if err := s.authorize(r, user, info); err != nil {
		s.writeError(rw, r, err)
		return
	}
	s.route(rw, r, info)
}

// statusRecorder remembers the status code for metrics and keeps Flush
// reachable for watches.
type statusRecorder struct {
	http.ResponseWriter
	code  int
	wrote bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.wrote {
		s.code, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	s.wrote = true
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// privileged is the identity of requests when no authenticator is set, and
// of the server's own bootstrap writes.
var privileged = &auth.User{Name: "system:apiserver", Groups: []string{auth.SystemPrivilegedGroup, auth.AllAuthenticated}}

func (s *Server) authenticate(r *http.Request) (*auth.User, error) {
	// In-process components come already identified (loopback.go).
	if u, ok := loopbackUser(r); ok {
		return s.loopbackIdentity(r, u)
	}
	if s.cfg.Authenticator == nil {
		return privileged, nil
	}
	u, ok, err := s.cfg.Authenticator.AuthenticateRequest(r)
	if err != nil || !ok {
		if err != nil {
			slog.Debug("authentication failed", "err", err)
		}
		return nil, apierrors.NewUnauthorized("Unauthorized")
	}
	if hasImpersonation(r) {
		if s.cfg.Impersonate == nil {
			return nil, apierrors.NewForbidden(schema.GroupResource{Resource: "users"}, "", errors.New("impersonation is not enabled"))
		}
		return s.cfg.Impersonate(r, u)
	}
	return u, nil
}

func hasImpersonation(r *http.Request) bool {
	for k := range r.Header {
		if strings.HasPrefix(k, "Impersonate-") {
			return true
		}
	}
	return false
}

func (s *Server) authorize(r *http.Request, u *auth.User, info *requestInfo) error {
	if s.cfg.Authorizer == nil {
		return nil
	}
	a := auth.Attributes{User: u, Verb: info.Verb, ResourceRequest: info.IsResourceRequest, APIGroup: info.APIGroup,
		APIVersion: info.APIVersion, Resource: info.Resource, Subresource: info.Subresource, Namespace: info.Namespace,
		Name: info.Name, Path: info.Path}
	if !info.IsResourceRequest {
		a.Verb = strings.ToLower(r.Method)
	}
	d, reason, err := s.cfg.Authorizer.Authorize(a)
	if d == auth.DecisionAllow {
		return nil
	}
	if err != nil {
		slog.Warn("authorization error", "err", err)
	}
	return &auth.ForbiddenError{Attributes: a, Reason: reason}
}

// GetNamespace implements admission.NamespaceGetter: the cache first, then
// etcd, because a namespace created a moment ago may not be cached yet.
func (s *Server) GetNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	h := s.handlers[corev1.SchemeGroupVersion.WithResource("namespaces")]
	if o := h.cache.get(h.key("", name)); o != nil {
		return o.obj.(*corev1.Namespace), nil
	}
	obj, _, err := h.getStored(ctx, "", name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}
