package dns

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Server is a cluster DNS server: New binds its sockets, Run serves.
type Server struct {
	cfg     Config
	log     *slog.Logger
	ix      *index
	kube    *kube
	fwd     *forwarder
	udp     []net.PacketConn
	tcp     []net.Listener
	servers []*dns.Server
	// panics counts queries that panicked (answered SERVFAIL); tests
	// check it stays 0.
	panics atomic.Int64
}

// New binds every address on UDP and TCP. Nothing is answered until Run.
func New(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	upstreams := cfg.Upstreams
	if len(upstreams) == 0 {
		if upstreams, err = upstreamsFrom(cfg.ResolvConf); err != nil {
			cfg.Logger.Warn("no upstream resolvers: names outside the cluster get SERVFAIL", "err", err)
		}
	}
	s := &Server{cfg: cfg, log: cfg.Logger, ix: newIndex(), fwd: newForwarder(upstreams, cfg.ForwardTimeout, cfg.MaxForwards)}
	for _, addr := range cfg.Addrs {
		pc, ln, err := listenBoth(addr)
		if err != nil {
			s.close()
			return nil, err
		}
		s.udp, s.tcp = append(s.udp, pc), append(s.tcp, &limitListener{Listener: ln, sem: make(chan struct{}, cfg.MaxTCPConns)})
	}
	local := cfg.LocalIPs
	if len(local) == 0 {
		local = boundIPs(s.Addrs())
	}
	var localAddrs []netip.Addr
	for _, ip := range local {
		if a, ok := netip.AddrFromSlice(ip); ok {
			localAddrs = append(localAddrs, a.Unmap())
		}
	}
	s.kube = &kube{ix: s.ix, zones: []string{cfg.ClusterDomain, "in-addr.arpa.", "ip6.arpa."}, domain: cfg.ClusterDomain,
		ttl: cfg.TTL, localIPs: localAddrs, resolve: s.resolve}
	return s, nil
}

// listenBoth binds addr on UDP and TCP, on the same port when addr asks
// for any (port 0).
func listenBoth(addr string) (net.PacketConn, net.Listener, error) {
	var lastErr error
	for range 10 {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return nil, nil, fmt.Errorf("dns: listen udp %s: %w", addr, err)
		}
		host, _, _ := net.SplitHostPort(addr)
		tcpAddr := net.JoinHostPort(host, fmt.Sprint(pc.LocalAddr().(*net.UDPAddr).Port))
		ln, err := net.Listen("tcp", tcpAddr)
		if err == nil {
			return pc, ln, nil
		}
		pc.Close()
		lastErr = fmt.Errorf("dns: listen tcp %s: %w", tcpAddr, err)
		if !strings.HasSuffix(addr, ":0") {
			break
		}
	}
	return nil, nil, lastErr
}

// boundIPs are the non-loopback addresses behind the listen addresses,
// every interface's for a wildcard one.
func boundIPs(addrs []string) []net.IP {
	var out []net.IP
	for _, a := range addrs {
		host, _, _ := net.SplitHostPort(a)
		ip := net.ParseIP(host)
		if ip == nil {
			continue
		}
		if !ip.IsUnspecified() {
			if !ip.IsLoopback() {
				out = append(out, ip)
			}
			continue
		}
		ifAddrs, err := net.InterfaceAddrs()
		if err != nil {
			continue
		}
		for _, ia := range ifAddrs {
			if n, ok := ia.(*net.IPNet); ok && !n.IP.IsLoopback() {
				out = append(out, n.IP)
			}
		}
	}
	return out
}

// Addrs are the bound addresses (UDP and TCP share each).
func (s *Server) Addrs() []string {
	var out []string
	for _, pc := range s.udp {
		out = append(out, pc.LocalAddr().String())
	}
	return out
}

// Synced reports whether the first lists of Services, EndpointSlices and
// Namespaces arrived; before that, names the zone does not know get
// SERVFAIL rather than NXDOMAIN.
func (s *Server) Synced() bool { return s.ix.hasSynced() }

// Run serves until ctx ends, then closes the sockets. It returns the
// first error of a listener.
func (s *Server) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	s.startReflectors(ctx, &wg)
	errc := make(chan error, len(s.udp)+len(s.tcp))
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) { s.ServeDNS(ctx, w, r) })
	for i := range s.udp {
		for _, srv := range []*dns.Server{{PacketConn: s.udp[i], Handler: h}, {Listener: s.tcp[i], Handler: h, ReadTimeout: 3 * time.Second}} {
			s.servers = append(s.servers, srv)
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := srv.ActivateAndServe(); err != nil && ctx.Err() == nil {
					errc <- err
					cancel()
				}
			}()
		}
	}
	s.log.Info("cluster DNS serving", "addrs", s.Addrs(), "domain", s.cfg.ClusterDomain, "upstreams", s.fwd.upstreams)
	<-ctx.Done()
	for _, srv := range s.servers {
		sctx, c := context.WithTimeout(context.Background(), 2*time.Second)
		if err := srv.ShutdownContext(sctx); err != nil {
			s.log.Debug("dns shutdown", "err", err)
		}
		c()
	}
	s.close()
	wg.Wait()
	select {
	case err := <-errc:
		return err
	default:
		return nil
	}
}

func (s *Server) close() {
	for _, pc := range s.udp {
		pc.Close()
	}
	for _, ln := range s.tcp {
		ln.Close()
	}
}

// startReflectors lists and watches the three resources straight into
// the index (see store.go).
func (s *Server) startReflectors(ctx context.Context, wg *sync.WaitGroup) {
	c := s.cfg.Client
	lws := []struct {
		name  string
		lw    *cache.ListWatch
		obj   runtime.Object
		store cache.ReflectorStore
	}{
		{"services", &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.CoreV1().Services("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return c.CoreV1().Services("").Watch(ctx, o)
			}}, &corev1.Service{}, serviceStore{s.ix}},
		{"endpointslices", &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.DiscoveryV1().EndpointSlices("").List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return c.DiscoveryV1().EndpointSlices("").Watch(ctx, o)
			}}, &discoveryv1.EndpointSlice{}, sliceStore{s.ix}},
		{"namespaces", &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				return c.CoreV1().Namespaces().List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				return c.CoreV1().Namespaces().Watch(ctx, o)
			}}, &corev1.Namespace{}, namespaceStore{s.ix}},
	}
	for _, l := range lws {
		r := cache.NewReflectorWithOptions(l.lw, l.obj, l.store, cache.ReflectorOptions{Name: "dns-" + l.name})
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.RunWithContext(ctx)
		}()
	}
}

// ServeDNS answers one query: the checks every query passes (a question
// of class IN, EDNS version 0), then the cluster zones, then the
// forwarder. Every reply is fitted to the client's buffer on the way out.
func (s *Server) ServeDNS(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) {
	if r == nil || len(r.Question) == 0 {
		writeError(w, r, dns.RcodeServerFailure)
		return
	}
	defer func() {
		if rec := recover(); rec != nil {
			s.panics.Add(1)
			s.log.Error("dns: panic answering a query", "panic", rec, "name", r.Question[0].Name)
			writeError(w, r, dns.RcodeServerFailure)
		}
	}()
	if r.Question[0].Qclass != dns.ClassINET {
		writeError(w, r, dns.RcodeRefused)
		return
	}
	if opt := r.IsEdns0(); opt != nil && opt.Version() != 0 {
		w.WriteMsg(badVersion(r))
		return
	}
	s.answer(ctx, &scrubWriter{ResponseWriter: w, req: r}, r)
}

// answer routes r to the cluster zones or the forwarder; w scrubs.
func (s *Server) answer(ctx context.Context, w dns.ResponseWriter, r *dns.Msg) {
	name := r.Question[0].Name
	if lower := strings.ToLower(name); len(lower) == len(name) {
		if zone := s.kube.matchZone(lower); zone != "" {
			rcode, written, next := s.kube.serve(ctx, w, r, zone)
			if !next {
				if !written {
					writeError(w, r, rcode)
				}
				return
			}
		}
	}
	_, tcp := w.RemoteAddr().(*net.TCPAddr)
	resp, err := s.fwd.exchange(ctx, r, tcp)
	if err != nil {
		rcode := dns.RcodeServerFailure
		if errors.Is(err, errBusy) {
			rcode = dns.RcodeRefused
		}
		s.log.Debug("dns: forward failed", "name", r.Question[0].Name, "err", err)
		writeError(w, r, rcode)
		return
	}
	w.WriteMsg(resp)
}

// resolve answers name/qtype as the whole server would, for the target of
// an ExternalName CNAME; it keeps r's flags and EDNS.
func (s *Server) resolve(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, name string, qtype uint16) *dns.Msg {
	req := r.Copy()
	req.Question[0] = dns.Question{Name: dns.Fqdn(name), Qtype: qtype, Qclass: dns.ClassINET}
	c := &captureWriter{ResponseWriter: w}
	s.answer(ctx, &scrubWriter{ResponseWriter: c, req: req}, req)
	return c.msg
}

// captureWriter keeps the reply instead of sending it.
type captureWriter struct {
	dns.ResponseWriter
	msg *dns.Msg
}

func (c *captureWriter) WriteMsg(m *dns.Msg) error { c.msg = m; return nil }

// writeError replies with rcode alone (and the client's EDNS record).
func writeError(w dns.ResponseWriter, r *dns.Msg, rcode int) {
	m := new(dns.Msg)
	if r == nil {
		return
	}
	m.SetRcode(r, rcode)
	sizeAndDo(r, m)
	w.WriteMsg(m)
}

func badVersion(r *dns.Msg) *dns.Msg {
	m := new(dns.Msg)
	m.SetReply(r)
	o := &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT}}
	o.SetVersion(0)
	m.Rcode = dns.RcodeBadVers
	o.SetExtendedRcode(dns.RcodeBadVers)
	m.Extra = []dns.RR{o}
	return m
}

// limitListener refuses connections past its limit by closing them at
// once.
type limitListener struct {
	net.Listener
	sem chan struct{}
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		select {
		case l.sem <- struct{}{}:
			return &limitConn{Conn: c, release: func() { <-l.sem }}, nil
		default:
			c.Close()
		}
	}
}

type limitConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}
