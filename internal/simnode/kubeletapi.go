package simnode

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/kubeletapi"
)

// KubeletAPI makes every node of a fleet serve a small part of the
// kubelet's HTTPS API, so that the API server can reach it as it reaches a
// kubelet: /healthz, /metrics/resource (what metrics-server scrapes for
// kubectl top) and /containerLogs/{namespace}/{pod}/{container} (what
// kubectl logs reads; follow=true streams). See kubeletapi_usage.go for
// the usage it reports and kubeletlogs.go for the logs.
//
// Every request is authenticated by its client certificate and
// authorized, as a kubelet in webhook mode does, by a SubjectAccessReview
// on nodes/<subresource> through the fleet's client (internal/kubeletapi): the
// API server's kubelet client is allowed by the bootstrap binding of
// system:kubelet-api-admin, other users by what RBAC grants them. The
// fleet's client must therefore be allowed to create
// subjectaccessreviews (system:auth-delegator grants it).
//
// Simulated nodes must never make the API server dial a real address, so
// a fleet that serves the API gives node i the loopback address
// 127.1.0.0+i+1 as its InternalIP (127.1.0.1, 127.1.0.2, ...) and listens
// on that address and Port, one socket per node. Without KubeletAPI a node
// advertises kubelet port 0, which tells the API server there is nothing
// to dial.
type KubeletAPI struct {
	// ServingCert is what every node serves (one certificate for the
	// fleet; the API server checks only that it chains to the cluster CA).
	ServingCert tls.Certificate
	// ClientCAs verifies clients, who must present a certificate; its
	// subject names the user (CommonName) and groups (Organization).
	ClientCAs *x509.CertPool
	// Port every node listens on, each on its own address. 0 picks a port
	// free on all of them.
	Port int
}

// kubeletIPRange is where nodes serving the kubelet API get their
// addresses: loopback, so dialing them never leaves the machine.
const kubeletIPRange = "127.1.0.0/16"

// kubeletDefaults sets the node addresses of a fleet that serves the
// kubelet API, and refuses any that are not loopback.
func (cfg *Config) kubeletDefaults() error {
	if cfg.KubeletAPI == nil {
		return nil
	}
	if cfg.NodeIPRange == "" {
		cfg.NodeIPRange = kubeletIPRange
	}
	p, err := netip.ParsePrefix(cfg.NodeIPRange)
	if err != nil {
		return fmt.Errorf("simnode: node IP range: %w", err)
	}
	if !p.Addr().IsLoopback() || p.Bits() < 8 {
		return fmt.Errorf("simnode: nodes serving the kubelet API need a loopback node IP range, not %s", p)
	}
	if cfg.KubeletAPI.ClientCAs == nil || len(cfg.KubeletAPI.ServingCert.Certificate) == 0 {
		return errors.New("simnode: the kubelet API needs a serving certificate and client CAs")
	}
	return nil
}

// kubeletServer serves the kubelet API of every node of a fleet: one
// http.Server on one socket per node, which tells the node by the local
// address a connection arrived at.
type kubeletServer struct {
	f       *Fleet
	srv     *http.Server
	byIP    map[netip.Addr]*simNode
	started time.Time
	// authz decides who may read what.
	authz *kubeletapi.Authorizer
	// done ends followed log streams when the fleet stops.
	done <-chan struct{}
	// cpu accumulates each node's CPU counter between scrapes, so it only
	// grows although pods come and go (node index → state).
	cpuMu sync.Mutex
	cpu   []nodeCPU
}

type nodeCPU struct {
	at         time.Time
	seconds    float64
	containers map[containerKey]containerCPU
}

type containerKey struct{ namespace, pod, container string }

// containerCPU is a container's counter as last reported; a container
// that restarted (a new start time) starts again from zero.
type containerCPU struct {
	started time.Time
	seconds float64
}

// startKubeletAPI opens one listener per node and serves on each until
// ctx ends. It sets the port nodes advertise.
func (f *Fleet) startKubeletAPI(ctx context.Context) error {
	api := f.cfg.KubeletAPI
	if api == nil {
		return nil
	}
	k := &kubeletServer{f: f, byIP: make(map[netip.Addr]*simNode, len(f.nodes)), started: f.cfg.Clock.Now(), cpu: make([]nodeCPU, len(f.nodes)),
		authz: kubeletapi.NewAuthorizer(f.cfg.Client, f.cfg.Clock, f.cfg.Logger), done: ctx.Done()}
	for _, n := range f.nodes {
		k.byIP[n.ip] = n
	}
	lns, port, err := listenNodes(f.nodes, api.Port)
	if errors.Is(err, syscall.EADDRNOTAVAIL) {
		// Some systems (macOS) have 127.0.0.1 alone: run without the
		// kubelet API (port 0) rather than not at all.
		f.cfg.Logger.Warn("simulated nodes do not serve the kubelet API: this system has no such loopback addresses", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	f.cfg.kubeletPort = int32(port)
	k.srv = &http.Server{
		Handler:           k,
		ReadHeaderTimeout: 10 * time.Second,
		// A scraper comes back in 15 s or more; an idle connection per
		// node is memory held for nothing.
		IdleTimeout: 5 * time.Second,
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{api.ServingCert},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    api.ClientCAs,
			MinVersion:   tls.VersionTLS12,
		},
		// Handshakes refused for want of a client certificate are the
		// caller's business, not log lines per attempt.
		ErrorLog: log.New(discard{}, "", 0),
	}
	for _, ln := range lns {
		tl := tls.NewListener(ln, k.srv.TLSConfig)
		f.spawn(func() { _ = k.srv.Serve(tl) })
	}
	f.spawn(func() {
		<-ctx.Done()
		_ = k.srv.Close()
	})
	f.cfg.Logger.Info("simulated nodes serve the kubelet API", "port", port, "first", f.nodes[0].ip)
	return nil
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// listenNodes listens on every node's address at port, or, for port 0,
// at a port free on all of them (a few tries: other fleets on this
// machine use the same addresses).
func listenNodes(nodes []*simNode, port int) ([]net.Listener, int, error) {
	tries := 1
	if port == 0 {
		tries = 8
	}
	var lastErr error
	for range tries {
		lns, p, err := listenNodesOnce(nodes, port)
		if err == nil {
			return lns, p, nil
		}
		lastErr = err
		if !errors.Is(err, syscall.EADDRINUSE) {
			break
		}
	}
	return nil, 0, fmt.Errorf("simnode: kubelet API: %w", lastErr)
}

func listenNodesOnce(nodes []*simNode, port int) ([]net.Listener, int, error) {
	lns := make([]net.Listener, 0, len(nodes))
	for _, n := range nodes {
		ln, err := net.Listen("tcp", net.JoinHostPort(n.ip.String(), strconv.Itoa(port)))
		if err != nil {
			for _, l := range lns {
				l.Close()
			}
			return nil, 0, err
		}
		if port == 0 {
			port = ln.Addr().(*net.TCPAddr).Port
		}
		lns = append(lns, ln)
	}
	return lns, port, nil
}

func (k *kubeletServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := k.nodeOf(r)
	if n == nil {
		http.NotFound(w, r)
		return
	}
	if !n.alive() {
		// A stopped machine answers nothing useful.
		http.Error(w, "node "+n.name+" is stopped", http.StatusServiceUnavailable)
		return
	}
	u, ok := kubeletapi.Authenticate(w, r)
	if !ok || !k.authz.Authorize(w, r, u, n.name) {
		return
	}
	switch p := r.URL.Path; {
	case kubeletStreamPath(p):
		// Nothing runs on a simulated node to exec into or forward to.
		http.Error(w, fmt.Sprintf("simulated node %s runs no containers: %s is not supported", n.name, strings.Split(p, "/")[1]), http.StatusBadRequest)
	case r.Method != http.MethodGet && r.Method != http.MethodHead:
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	case p == "/healthz":
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	case p == "/metrics/resource":
		k.serveResourceMetrics(w, n)
	case strings.HasPrefix(p, "/containerLogs/"):
		k.serveLogs(w, r, n, strings.TrimPrefix(p, "/containerLogs/"))
	default:
		http.NotFound(w, r)
	}
}

// kubeletStreamPath is an exec, attach, port-forward or run request.
func kubeletStreamPath(p string) bool {
	for _, s := range []string{"/exec/", "/attach/", "/portForward/", "/run/"} {
		if strings.HasPrefix(p, s) {
			return true
		}
	}
	return false
}

func (k *kubeletServer) nodeOf(r *http.Request) *simNode {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return nil
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return nil
	}
	return k.byIP[ap.Addr().Unmap()]
}

// runningPods lists node n's pods in phase Running, from the fleet's
// watch cache.
func (k *kubeletServer) runningPods(n *simNode) []*corev1.Pod {
	objs, err := k.f.podInformer.GetIndexer().ByIndex(byNodeIndex, n.name)
	if err != nil {
		return nil
	}
	var out []*corev1.Pod
	for _, o := range objs {
		if p := o.(*corev1.Pod); p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	return out
}

func (k *kubeletServer) serveResourceMetrics(w http.ResponseWriter, n *simNode) {
	// Samples carry millisecond timestamps: counters advanced to the same
	// millisecond give exact rates.
	now := k.f.cfg.Clock.Now().Truncate(time.Millisecond)
	pods := k.runningPods(n)
	usage := nodeUsage(pods)
	// The node's counter grows at its current rate since the last scrape.
	k.cpuMu.Lock()
	nodeCPUSeconds := k.cpu[n.index].advance(&usage, k.started, now)
	k.cpuMu.Unlock()
	w.Header().Set("Content-Type", kubeletapi.ContentTypeMetrics)
	_, _ = w.Write(resourceMetricsText(usage, nodeCPUSeconds, now))
}

// advance moves a node's CPU counters to now at the rates of u, and
// fills in the containers' counters. Counters grow at the rate in force
// since the last scrape, so a new rate (a changed annotation) shows from
// the next scrape on and no counter ever goes back. A container seen for
// the first time has run at its rate since it started.
func (st *nodeCPU) advance(u *usage, started, now time.Time) float64 {
	if st.at.IsZero() {
		st.at = started
	}
	d := max(now.Sub(st.at), 0).Seconds()
	st.seconds += u.cpuCores * d
	next := make(map[containerKey]containerCPU, len(u.containers))
	for i := range u.containers {
		c := &u.containers[i]
		key := containerKey{c.namespace, c.pod, c.container}
		prev, ok := st.containers[key]
		if ok && prev.started.Equal(c.started) {
			c.cpuSeconds = prev.seconds + c.cpuCores*d
		} else if !c.started.IsZero() {
			c.cpuSeconds = c.cpuCores * max(now.Sub(c.started), 0).Seconds()
		}
		next[key] = containerCPU{started: c.started, seconds: c.cpuSeconds}
	}
	st.containers = next
	st.at = now
	return st.seconds
}
