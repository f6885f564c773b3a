package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/admission"
	"github.com/rudder-dev/rudder/internal/apiserver"
	"github.com/rudder-dev/rudder/internal/apiserver/openapi"
	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/cel"
	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controllers/nodelifecycle"
	"github.com/rudder-dev/rudder/internal/controllers/podgc"
	"github.com/rudder-dev/rudder/internal/netpolicy"
	"github.com/rudder-dev/rudder/internal/pki"
	"github.com/rudder-dev/rudder/internal/proxy"
	"github.com/rudder-dev/rudder/internal/scheduler"
	"github.com/rudder-dev/rudder/internal/simnode"
	"github.com/rudder-dev/rudder/internal/storage"
)

// Config configures a control-plane server. Zero values take the defaults
// `rudder server` documents.
type Config struct {
	// DataDir holds etcd's data, the certificates and admin.kubeconfig.
	DataDir string
	// EtcdServers, when set, are an external etcd cluster to use instead of
	// the embedded member.
	EtcdServers []string
	// BindAddress and HTTPSPort are where the API is served (127.0.0.1:6443;
	// port 0 picks a free one).
	BindAddress string
	HTTPSPort   int
	// AdvertiseAddress is the IP the default/kubernetes Service's
	// Endpoints and EndpointSlice name (kube-apiserver's
	// --advertise-address). Empty: the bind address when other hosts can
	// reach it, the host's first address when bound to all, and no
	// endpoints at all on loopback.
	AdvertiseAddress string
	// TLSSANs are extra names or IPs for the serving certificate.
	TLSSANs []string
	// ExtraListener, when set, serves the API too, with the same handler
	// and certificate as the main listener: a socket the caller opened
	// where the main one cannot be reached, e.g. inside another network
	// namespace (`rudder up --nodes` listens on the hub namespace its
	// nodes are wired to; a socket stays in the namespace it was created
	// in). Its address's IP belongs in TLSSANs. When that IP is the
	// AdvertiseAddress, the kubernetes Service's endpoints name this
	// listener's port. The server owns it from Start on and closes it at
	// shutdown, or when Start fails.
	ExtraListener net.Listener
	// KubeletDial, when set, opens the API server's connections to
	// kubelets (logs, exec, attach, port-forward, node proxy, resource
	// metrics) instead of a plain dial from this process's network
	// namespace: `rudder up --nodes` dials from the hub namespace, where
	// the nodes' InternalIPs are.
	KubeletDial func(ctx context.Context, network, addr string) (net.Conn, error)
	// TokenAuthFile is a static token file in upstream's CSV format.
	TokenAuthFile string
	// AnonymousAuth lets requests without credentials in as system:anonymous.
	AnonymousAuth bool
	// ServiceAccountIssuers are the "iss" of service-account tokens: the
	// first is written into new tokens, all are accepted
	// (auth.DefaultServiceAccountIssuer when empty).
	ServiceAccountIssuers []string
	// APIAudiences are the audiences the API accepts tokens for, and
	// those of a token request that names none (the first issuer when
	// empty).
	APIAudiences []string
	// CompactionInterval is how often etcd history is compacted (5 min).
	CompactionInterval time.Duration
	// WatchCacheCapacity is the events kept per resource for resuming watches.
	WatchCacheCapacity int
	// Profiling serves /debug/pprof/ on the API port (kube-apiserver's
	// --profiling, on by default there too).
	Profiling bool
	// ServiceCIDR and NodePortRange are where services get cluster IPs and
	// node ports ("10.96.0.0/12", "30000-32767" when empty).
	ServiceCIDR   string
	NodePortRange string
	// ClusterCIDR is the pod network ("10.42.0.0/16" when empty; a
	// comma-separated IPv4,IPv6 pair for dual-stack): the node IPAM
	// controller gives each node a /24 (IPv6: /64) of it as
	// spec.podCIDR(s).
	ClusterCIDR string
	// SimulatedNodes, when positive, starts that many simulated nodes
	// (internal/simnode) once the API serves. They are API clients like
	// any other, over the HTTPS listener with the admin credentials.
	SimulatedNodes int
	// SimulatedNodesNoKubeletAPI keeps the simulated nodes from serving
	// the kubelet API (kubectl top and logs) on loopback addresses; they
	// then advertise kubelet port 0.
	SimulatedNodesNoKubeletAPI bool
	// DisableScheduler leaves pods unscheduled (for running another
	// scheduler, or none, against this API server).
	DisableScheduler bool
	// Controllers selects the in-process controllers as upstream's
	// --controllers does: "*" for the defaults, "name" to add one,
	// "-name" to drop one, "-*" for none. Empty means "*".
	Controllers []string
	// NodeMonitorGracePeriod is how long a node may go silent before the
	// node lifecycle controller marks it NotReady (upstream's 50 s when 0).
	NodeMonitorGracePeriod time.Duration
	// EnableAdmissionPlugins and DisableAdmissionPlugins choose the
	// admission plugins as kube-apiserver's flags of those names do:
	// upstream's default set runs unless disabled, others run when
	// enabled, and all run in upstream's order whatever the order here
	// (admission.EnabledPlugins). NodeRestriction is on unless disabled,
	// as in every cluster that authorizes nodes (Node,RBAC).
	//
	// Three default plugins prepare objects for a controller and are
	// left out while Controllers switches that controller off, unless
	// enabled by name: ServiceAccount (serviceaccount creates the
	// accounts it requires), TaintNodesByCondition (nodelifecycle
	// removes the taint it adds) and DefaultTolerationSeconds
	// (taint-eviction-controller acts on the tolerations it adds).
	// Without this a control plane run with no controllers, as tests
	// run it, could start no pod (no account would appear), schedule
	// onto no new node (the taint would stay), and a test's own taint
	// eviction would wait 300 s. With an out-of-process controller
	// manager, enable them by name.
	EnableAdmissionPlugins  []string
	DisableAdmissionPlugins []string
	// DefaultNotReadyTolerationSeconds and
	// DefaultUnreachableTolerationSeconds are how long pods tolerate a
	// not-ready or unreachable node before eviction, as set by
	// DefaultTolerationSeconds (300 when nil).
	DefaultNotReadyTolerationSeconds    *int64
	DefaultUnreachableTolerationSeconds *int64
}

func (c *Config) defaults() {
	if c.BindAddress == "" {
		c.BindAddress = "127.0.0.1"
	}
	if c.CompactionInterval == 0 {
		c.CompactionInterval = 5 * time.Minute
	}
}

// Server is a running control plane.
type Server struct {
	// URL is the API's address, e.g. https://127.0.0.1:6443.
	URL string
	// Kubeconfig is the path of the admin kubeconfig (system:masters).
	Kubeconfig string
	// PKI holds the cluster CA and credentials.
	PKI *pki.Bundle
	// API is the API server, for in-process users such as benchmarks.
	API *apiserver.Server
	// SimNodes is the fleet of simulated nodes (nil without
	// Config.SimulatedNodes); its Ready channel tells when all registered.
	SimNodes *simnode.Fleet

	etcd      *storage.Etcd
	lock      *dataDirLock // held from start to the end of shutdown
	http      *http.Server
	cancel    context.CancelFunc
	serveDone chan struct{} // the listener stopped
	done      chan struct{} // everything stopped, etcd closed
	serveErr  error
	// components are the in-process clients (scheduler, controllers);
	// shutdown waits for them before closing the listener.
	components sync.WaitGroup
}

// spawn runs an in-process component until the server's context ends.
func (s *Server) spawn(fn func()) {
	s.components.Add(1)
	go func() {
		defer s.components.Done()
		fn()
	}()
}

// systemNamespaces exist from the first start; the first three can never
// be deleted.
var systemNamespaces = []string{metav1.NamespaceDefault, metav1.NamespaceSystem, metav1.NamespacePublic, corev1.NamespaceNodeLease}

// Start brings the control plane up in readiness order — certificates,
// etcd, watch caches, bootstrap objects, then the listener — and returns
// once it serves. It runs until ctx ends or Stop is called.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	cfg.defaults()
	closeExtra := func() {
		if cfg.ExtraListener != nil {
			cfg.ExtraListener.Close()
		}
	}
	if cfg.DataDir == "" {
		closeExtra()
		return nil, errors.New("server: a data directory is required")
	}
	admissionPlugins, err := admissionPluginNames(cfg)
	if err != nil {
		closeExtra()
		return nil, err
	}
	if err := checkClusterCIDRs(cfg); err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		closeExtra()
		return nil, err
	}
	lock, err := lockDataDir(cfg.DataDir)
	if err != nil {
		closeExtra()
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Server{cancel: cancel, serveDone: make(chan struct{}), done: make(chan struct{}), lock: lock}
	ok := false
	defer func() {
		if !ok {
			cancel()
			closeExtra()
			if s.etcd != nil {
				s.etcd.Close()
			}
			lock.release()
		}
	}()

	bundle, err := pki.Ensure(pki.Config{Dir: filepath.Join(cfg.DataDir, "pki"), Hosts: append([]string{cfg.BindAddress}, cfg.TLSSANs...)})
	if err != nil {
		return nil, fmt.Errorf("certificates: %w", err)
	}
	s.PKI = bundle

	if len(cfg.EtcdServers) > 0 {
		s.etcd, err = storage.Connect(ctx, cfg.EtcdServers)
	} else {
		s.etcd, err = storage.StartEmbedded(ctx, storage.EmbeddedConfig{Dir: filepath.Join(cfg.DataDir, "etcd")})
	}
	if err != nil {
		return nil, err
	}
	store := storage.NewStore(s.etcd.Client)

	issuers, apiAudiences := serviceAccountIssuers(cfg)
	var tokens []auth.TokenAuthenticator
	if cfg.TokenAuthFile != "" {
		tf, err := auth.LoadTokenFile(cfg.TokenAuthFile)
		if err != nil {
			return nil, err
		}
		tokens = append(tokens, auth.AudienceAgnostic(apiAudiences, tf))
	}
	svcNet, err := apiserver.ParseServiceNetwork(cfg.ServiceCIDR, cfg.NodePortRange)
	if err != nil {
		return nil, err
	}

	// One /metrics for the whole control plane: the API server's own,
	// those of the in-process scheduler and controllers, and the process's
	// (go_* and process_*, as every upstream component serves them), and
	// the service proxy's when `rudder up` runs an agent in this process.
	metrics := prometheus.NewRegistry()
	runtimeCollectors := []prometheus.Collector{collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{})}
	for _, group := range [][]prometheus.Collector{runtimeCollectors, scheduler.Collectors(), controller.Collectors(), podgc.Collectors(), nodelifecycle.Collectors(), proxy.Collectors(), netpolicy.Collectors()} {
		for _, c := range group {
			if err := metrics.Register(c); err != nil {
				return nil, fmt.Errorf("metrics: %w", err)
			}
		}
	}
	api, err := apiserver.New(apiserver.Config{
		Registry:           metrics,
		ServiceNetwork:     svcNet,
		Store:              store,
		WatchCacheCapacity: cfg.WatchCacheCapacity,
		Profiling:          cfg.Profiling,
	})
	if err != nil {
		return nil, err
	}
	saIssuer, saAuth, err := serviceAccountTokenAuth(bundle, issuers, apiAudiences, api)
	if err != nil {
		return nil, err
	}
	// Joining nodes' bootstrap tokens, read from the Secrets the API
	// serves (kube-system/bootstrap-token-<id>, from the watch cache).
	bootstrapTokens := auth.AudienceAgnostic(apiAudiences, auth.NewBootstrapTokenAuthenticator(api.ServiceAccountObjects(), nil))
	tokens = append(tokens, bootstrapTokens, saAuth)
	// Without --anonymous-auth a request without credentials is still let
	// in for one path, the cluster-info a joining node discovers the CA
	// from; RBAC lets system:anonymous read that and nothing else.
	var anonymousPaths []string
	if !cfg.AnonymousAuth {
		anonymousPaths = []string{clusterInfoPath}
	}
	api.SetAuthenticator(auth.NewAuthenticator(auth.AuthenticatorConfig{
		Authenticators: []auth.Authenticator{auth.NewX509Authenticator(auth.X509Config{}), auth.NewBearerAuthenticator(tokens...)},
		Anonymous:      true,
		AnonymousPaths: anonymousPaths,
	}))
	rbacSource := api.RBACSource()
	// Node,RBAC: the graph of what each node's pods reference is filled
	// by reflectors once the API serves (startNodeGraph).
	nodeGraph := auth.NewNodeGraph()
	authz := auth.NewNodeRBACAuthorizer(rbacSource, nodeGraph)
	api.SetAuthorization(authz, func(r *http.Request, u *auth.User) (*auth.User, error) {
		out, err := auth.Impersonate(u, r.Header, authz)
		if err == nil {
			auth.DeleteImpersonationHeaders(r.Header)
		}
		return out, err
	})
	chain := admission.Build(admissionPlugins, cfg.EnableAdmissionPlugins, admission.Deps{
		Namespaces:                   api,
		ImmortalNamespaces:           systemNamespaces[:3],
		Objects:                      api,
		Status:                       api,
		Escalation:                   &auth.EscalationCheck{Authorizer: authz, RBAC: auth.NewRBACAuthorizer(rbacSource), Source: rbacSource},
		NotReadyTolerationSeconds:    cfg.DefaultNotReadyTolerationSeconds,
		UnreachableTolerationSeconds: cfg.DefaultUnreachableTolerationSeconds,
		Authorizer:                   authz,
		// The finalizers StorageObjectInUseProtection adds are removed
		// by the in-process pvc-/pv-protection controllers: with either
		// turned off the plugin is left out (see admissionPartners)
		// unless it is asked for by name.
		StorageProtectionControllers: slices.Contains(cfg.EnableAdmissionPlugins, "StorageObjectInUseProtection") || controller.Enabled("pvc-protection", cfg.Controllers, false) && controller.Enabled("pv-protection", cfg.Controllers, false),
		Resources:                    registry.AdmissionResources(),
		Types:                        cel.NewTypes(openapi.Schemas),
		Context:                      ctx,
		// The webhooks match a resource under its other served versions
		// and re-default the objects they patch.
		Served: registry.WebhookServedResources(),
	})
	slog.Info("admission chain", "plugins", chain.Names())
	api.SetAdmission(chain)
	// The API server reaches kubelets (simulated nodes on loopback) for
	// logs and metrics with its own client certificate.
	kubeletCert, err := bundle.KubeletClientCert(365 * 24 * time.Hour)
	if err != nil {
		return nil, err
	}
	api.SetKubeletClient(apiserver.KubeletClientConfig{Cert: kubeletCert, CAs: bundle.CAPool, Dial: cfg.KubeletDial})
	s.API = api
	if err := api.Start(ctx); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.HTTPSPort)))
	if err != nil {
		return nil, err
	}
	port := ln.Addr().(*net.TCPAddr).Port
	advertisedIP := advertiseAddress(cfg.AdvertiseAddress, cfg.BindAddress)
	advertisedPort := advertisedPort(cfg.ExtraListener, advertisedIP, port)
	if err := api.SetServiceAccountTokens(apiserver.ServiceAccountTokens{Issuer: saIssuer, APIAudiences: apiAudiences,
		ExternalAddress: externalAddress(cfg.BindAddress, port)}); err != nil {
		ln.Close()
		return nil, err
	}
	clusterInfo, err := clusterInfoObjects("https://"+externalAddress(cfg.BindAddress, port), bundle.CAPEM)
	if err != nil {
		ln.Close()
		return nil, err
	}
	if err := api.EnsureObjects(ctx, append(append(bootstrapObjects(svcNet.FirstIP(), advertisedPort), clusterInfo...), append(dnsRBACObjects(), netpolRBACObjects()...)...)); err != nil {
		ln.Close()
		return nil, err
	}
	systemClient, err := kubernetes.NewForConfig(s.componentConfig(componentUser, "rudder-apiserver"))
	if err != nil {
		ln.Close()
		return nil, err
	}
	if err := reconcileBootstrapRBAC(ctx, systemClient); err != nil {
		ln.Close()
		return nil, fmt.Errorf("bootstrap RBAC: %w", err)
	}
	s.URL = "https://" + ln.Addr().String()
	s.Kubeconfig = filepath.Join(cfg.DataDir, "admin.kubeconfig")
	if err := pki.WriteKubeconfig(s.Kubeconfig, s.URL, bundle.CAPEM, bundle.AdminCertPEM, bundle.AdminKeyPEM, pki.AdminCommonName); err != nil {
		ln.Close()
		return nil, err
	}
	s.http = &http.Server{
		Handler: api,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{bundle.ServingCert},
			ClientCAs:    bundle.CAPool,
			ClientAuth:   tls.VerifyClientCertIfGiven,
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"h2", "http/1.1"},
		},
		// Watches multiplex on few connections: allow many streams each.
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 2000},
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       90 * time.Second,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelDebug),
	}
	go store.Compact(ctx, cfg.CompactionInterval)
	listeners := []net.Listener{ln}
	if cfg.ExtraListener != nil {
		listeners = append(listeners, cfg.ExtraListener)
	}
	var serving sync.WaitGroup
	var serveMu sync.Mutex
	for _, l := range listeners {
		serving.Go(func() {
			err := s.http.ServeTLS(l, "", "")
			if !errors.Is(err, http.ErrServerClosed) {
				serveMu.Lock()
				if s.serveErr == nil {
					s.serveErr = fmt.Errorf("serving on %s: %w", l.Addr(), err)
				}
				serveMu.Unlock()
			}
		})
	}
	go func() {
		serving.Wait()
		close(s.serveDone)
	}()
	api.MarkReady()
	ok = true
	slog.Info("API server ready", "url", s.URL, "kubeconfig", s.Kubeconfig)
	if err := s.startNodeGraph(ctx, nodeGraph); err != nil {
		cancel()
		s.shutdown()
		return nil, fmt.Errorf("node authorizer: %w", err)
	}
	if !cfg.DisableScheduler {
		if err := s.startScheduler(ctx, cfg, port); err != nil {
			cancel()
			s.shutdown()
			return nil, fmt.Errorf("scheduler: %w", err)
		}
	}
	s.startControllers(ctx, cfg, port)
	sys := &systemObjects{client: systemClient, namespaces: systemNamespaces, service: kubernetesServiceObject(svcNet.FirstIP(), advertisedPort),
		dnsService: kubeDNSServiceObject(svcNet.DNSIP()),
		ip:         advertisedIP, port: int32(advertisedPort), interval: 10 * time.Second,
		serviceCIDRs: []string{svcNet.CIDR.String()}}
	s.spawn(func() { sys.run(ctx) })
	if cfg.SimulatedNodes > 0 {
		if err := s.startSimNodes(ctx, cfg, port); err != nil {
			cancel()
			s.shutdown()
			return nil, fmt.Errorf("simulated nodes: %w", err)
		}
	}
	go func() {
		<-ctx.Done()
		s.shutdown()
	}()
	return s, nil
}

// admissionPartners pairs the default admission plugins that prepare
// objects for a controller with that controller (see
// Config.EnableAdmissionPlugins).
var admissionPartners = []struct{ plugin, controller string }{
	{"ServiceAccount", "serviceaccount"},
	{"TaintNodesByCondition", "nodelifecycle"},
	{"DefaultTolerationSeconds", "taint-eviction-controller"},
	// Claims and volumes need both controllers, or they never go.
	{"StorageObjectInUseProtection", "pvc-protection"},
	{"StorageObjectInUseProtection", "pv-protection"},
}

// admissionPluginNames resolves the admission flags, leaving out the
// plugins whose partner controller does not run in-process unless they
// are enabled by name.
func admissionPluginNames(cfg Config) ([]string, error) {
	enable := slices.Clone(cfg.EnableAdmissionPlugins)
	// Upstream's kube-apiserver leaves NodeRestriction off, and every
	// cluster that authorizes nodes (kubeadm, k3s, the managed ones)
	// turns it on: without it a kubelet could rewrite any Node or pod
	// status. rudder authorizes nodes always, so it is on unless disabled.
	if !slices.Contains(cfg.DisableAdmissionPlugins, nodeRestriction) && !slices.Contains(enable, nodeRestriction) {
		enable = append(enable, nodeRestriction)
	}
	disable := slices.Clone(cfg.DisableAdmissionPlugins)
	for _, p := range admissionPartners {
		if !slices.Contains(cfg.EnableAdmissionPlugins, p.plugin) && !controller.Enabled(p.controller, cfg.Controllers, false) {
			disable = append(disable, p.plugin)
		}
	}
	return admission.EnabledPlugins(enable, disable)
}

const nodeRestriction = "NodeRestriction"

// shutdown stops accepting requests, gives running ones a moment, ends
// watches, then stops etcd so its files are closed cleanly.
func (s *Server) shutdown() {
	// The nodes go first: they are clients, and would only log the
	// listener's going away.
	if s.SimNodes != nil {
		s.SimNodes.Stop()
	}
	s.components.Wait()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.http.Shutdown(sctx); err != nil {
		s.http.Close()
	}
	<-s.serveDone
	s.etcd.Close()
	s.lock.release()
	close(s.done)
}

// Stop shuts the server down and waits for it.
func (s *Server) Stop() {
	s.cancel()
	<-s.done
}

// Wait blocks until the server has stopped and returns why.
func (s *Server) Wait() error {
	<-s.done
	return s.serveErr
}

// bootstrapObjects are created on every start if missing: the system
// namespaces, the kubernetes service (the API's in-cluster address, on the
// first service IP) and upstream's bootstrap RBAC policy.
func bootstrapObjects(serviceIP string, apiPort int) []runtime.Object {
	var objs []runtime.Object
	for _, name := range systemNamespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
		objs = append(objs, ns)
	}
	objs = append(objs, kubernetesServiceObject(serviceIP, apiPort))
	for _, pc := range registry.SystemPriorityClasses() {
		objs = append(objs, pc)
	}
	objs = append(objs, registry.FlowControlBootstrap()...)
	for _, as := range registry.LocalAPIServices(registry.All()) {
		objs = append(objs, as)
	}
	for _, r := range auth.BootstrapClusterRoles() {
		r.SetGroupVersionKind(rbacGVK("ClusterRole"))
		objs = append(objs, r)
	}
	for _, b := range auth.BootstrapClusterRoleBindings() {
		b.SetGroupVersionKind(rbacGVK("ClusterRoleBinding"))
		objs = append(objs, b)
	}
	return objs
}

// kubernetesServiceObject is the default/kubernetes Service: the API's
// in-cluster address, on the first service IP.
func kubernetesServiceObject(serviceIP string, apiPort int) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesService, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: serviceIP,
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP,
				TargetPort: intstr.FromInt32(int32(apiPort))}},
			SessionAffinity: corev1.ServiceAffinityNone,
		},
	}
	svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
	return svc
}

func rbacGVK(kind string) schema.GroupVersionKind {
	return rbacv1.SchemeGroupVersion.WithKind(kind)
}

// serviceAccountIssuers fills the issuer and API-audience defaults.
func serviceAccountIssuers(cfg Config) (issuers, apiAudiences []string) {
	issuers = cfg.ServiceAccountIssuers
	if len(issuers) == 0 {
		issuers = []string{auth.DefaultServiceAccountIssuer}
	}
	apiAudiences = cfg.APIAudiences
	if len(apiAudiences) == 0 {
		apiAudiences = issuers[:1]
	}
	return issuers, apiAudiences
}

// serviceAccountTokenAuth builds the signer of service-account tokens
// (the PKI's sa.key) and their authenticator, which checks them against
// sa.pub and the ServiceAccounts the API server serves.
func serviceAccountTokenAuth(bundle *pki.Bundle, issuers, apiAudiences []string, api *apiserver.Server) (*auth.TokenIssuer, auth.TokenAuthenticator, error) {
	issuer, err := auth.NewTokenIssuer(issuers[0], bundle.ServiceAccountKey)
	if err != nil {
		return nil, nil, err
	}
	keys, err := auth.ParsePublicKeys(bundle.ServiceAccountPubPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("service-account public key: %w", err)
	}
	authn, err := auth.NewServiceAccountTokenAuthenticator(auth.ServiceAccountTokenConfig{
		Issuers: issuers, Keys: keys, APIAudiences: apiAudiences, Objects: api.ServiceAccountObjects(),
	})
	if err != nil {
		return nil, nil, err
	}
	return issuer, authn, nil
}

// advertisedPort is the port the kubernetes Service targets and its
// endpoints name: the extra listener's when it listens on the advertised
// address (where pods reach the API), else the main listener's.
func advertisedPort(extra net.Listener, advertised net.IP, mainPort int) int {
	if extra == nil || advertised == nil {
		return mainPort
	}
	if a, ok := extra.Addr().(*net.TCPAddr); ok && a.IP.Equal(advertised) {
		return a.Port
	}
	return mainPort
}

// externalAddress is where clients reach the API, for the jwks_uri of
// the issuer discovery document: the bind address, or loopback when
// bound to every address.
func externalAddress(bind string, port int) string {
	if ip := net.ParseIP(bind); bind == "" || ip != nil && ip.IsUnspecified() {
		bind = "127.0.0.1"
	}
	return net.JoinHostPort(bind, strconv.Itoa(port))
}
