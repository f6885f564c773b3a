package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// DefaultTable is the nftables table (family ip) the proxy owns.
const DefaultTable = "rudder-proxy"

// Config configures a proxy. Zero values take the documented defaults.
type Config struct {
	// Client reaches the API server; required.
	Client kubernetes.Interface
	// NodeName is this node; required. Endpoints on it are local.
	NodeName string
	// NodeIPs are the addresses NodePorts answer on when
	// NodePortAddresses is empty; when both are empty, the Node's
	// InternalIPs (IPv4) are used.
	NodeIPs []netip.Addr
	// NodePortAddresses narrows NodePorts to the node addresses inside
	// these prefixes (--nodeport-addresses).
	NodePortAddresses []netip.Prefix
	// ClusterCIDR is the pods' range, for masquerade decisions
	// (invalid: unknown, no ClusterIP masquerade).
	ClusterCIDR netip.Prefix
	// NetNSPath is the network namespace every kernel operation runs
	// in ("" = this process's).
	NetNSPath string
	// Table is the nftables table's name (DefaultTable).
	Table string
}

// Proxy keeps the node's nftables table in step with the cluster's
// Services and EndpointSlices.
type Proxy struct {
	cfg   Config
	ready chan struct{}

	mu        sync.Mutex
	dirty     map[string]bool // namespace/name of services to sync
	all       bool            // a full sync is due
	nodeIPs   []netip.Addr    // from the Node, when cfg.NodeIPs is empty
	kick      chan struct{}
	svcLister func(ns, name string) (*corev1.Service, error)
	slices    cache.Indexer
}

// New checks cfg and returns a proxy; Run starts it.
func New(cfg Config) (*Proxy, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("proxy: a client and a node name are required")
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	for _, ip := range cfg.NodeIPs {
		if !ip.IsValid() {
			return nil, errors.New("proxy: an invalid node IP")
		}
	}
	return &Proxy{cfg: cfg, ready: make(chan struct{}),
		dirty: map[string]bool{}, all: true, kick: make(chan struct{}, 1)}, nil
}

// Ready is closed after the first full sync has been committed.
func (p *Proxy) Ready() <-chan struct{} { return p.ready }

const sliceByService = "service"

// Run watches the API server and syncs the table until ctx ends, then
// removes the table. It returns ctx's error, or the first error that
// keeps it from running (no netns, no nftables).
func (p *Proxy) Run(ctx context.Context) error {
	k, err := openKernel(p.cfg.NetNSPath)
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	defer k.close()
	defer func() {
		if err := k.deleteTable(p.cfg.Table); err != nil {
			slog.Warn("proxy: removing the table", "table", p.cfg.Table, "err", err)
		}
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := informers.NewSharedInformerFactory(p.cfg.Client, 0)
	svcInf := f.Core().V1().Services()
	sliceInf := f.Discovery().V1().EndpointSlices()
	nodeF := informers.NewSharedInformerFactoryWithOptions(p.cfg.Client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", p.cfg.NodeName).String()
	}))
	nodeInf := nodeF.Core().V1().Nodes()
	if err := sliceInf.Informer().AddIndexers(cache.Indexers{sliceByService: func(obj any) ([]string, error) {
		sl, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || sl.Labels[discoveryv1.LabelServiceName] == "" {
			return nil, nil
		}
		return []string{sl.Namespace + "/" + sl.Labels[discoveryv1.LabelServiceName]}, nil
	}}); err != nil {
		return err
	}
	p.slices = sliceInf.Informer().GetIndexer()
	lister := svcInf.Lister()
	p.svcLister = func(ns, name string) (*corev1.Service, error) { return lister.Services(ns).Get(name) }

	onSvc := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if s, ok := obj.(*corev1.Service); ok {
			p.mark(s.Namespace + "/" + s.Name)
		}
	}
	onSlice := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if sl, ok := obj.(*discoveryv1.EndpointSlice); ok && sl.Labels[discoveryv1.LabelServiceName] != "" {
			p.mark(sl.Namespace + "/" + sl.Labels[discoveryv1.LabelServiceName])
		}
	}
	onNode := func(obj any) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return
		}
		var ips []netip.Addr
		for _, a := range n.Status.Addresses {
			if ip, err := netip.ParseAddr(a.Address); err == nil && a.Type == corev1.NodeInternalIP && ip.Is4() {
				ips = append(ips, ip)
			}
		}
		p.mu.Lock()
		if !slices.Equal(ips, p.nodeIPs) {
			p.nodeIPs = ips
			p.kickLocked()
		}
		p.mu.Unlock()
	}
	handler := func(fn func(any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{AddFunc: fn, UpdateFunc: func(_, n any) { fn(n) }, DeleteFunc: fn}
	}
	for _, reg := range []struct {
		inf cache.SharedIndexInformer
		fn  func(any)
	}{{svcInf.Informer(), onSvc}, {sliceInf.Informer(), onSlice}, {nodeInf.Informer(), onNode}} {
		if _, err := reg.inf.AddEventHandler(handler(reg.fn)); err != nil {
			return err
		}
	}
	f.Start(ctx.Done())
	nodeF.Start(ctx.Done())
	defer f.Shutdown()
	defer nodeF.Shutdown()
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("proxy: %v cache did not sync: %w", typ, ctx.Err())
		}
	}
	nodeF.WaitForCacheSync(ctx.Done())
	slog.Info("proxy running", "node", p.cfg.NodeName, "table", p.cfg.Table, "netns", p.cfg.NetNSPath)
	return p.loop(ctx, k, lister)
}

func (p *Proxy) mark(key string) {
	p.mu.Lock()
	p.dirty[key] = true
	p.kickLocked()
	p.mu.Unlock()
}

func (p *Proxy) kickLocked() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// loop syncs whenever something changed; a failed sync is retried as a
// full sync after a backoff.
func (p *Proxy) loop(ctx context.Context, k *kernel, lister interface {
	List(labels.Selector) ([]*corev1.Service, error)
}) error {
	rs := newRuleset(p.cfg.Table)
	backoff := time.Duration(0)
	p.kickLocked()
	for {
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
		} else {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-p.kick:
			case <-time.After(time.Hour):
				// A periodic full sync repairs anything changed behind our back.
				p.mu.Lock()
				p.all = true
				p.mu.Unlock()
			}
		}
		next, err := p.syncOnce(rs, k, lister)
		if err != nil {
			slog.Error("proxy: sync failed; a full sync follows", "err", err)
			syncErrors.Inc()
			p.mu.Lock()
			p.all = true
			p.mu.Unlock()
			backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
			p.kickLocked()
			continue
		}
		backoff = 0
		rs = next
	}
}

// nodePortIPs are the addresses NodePorts answer on.
func (p *Proxy) nodePortIPs() []netip.Addr {
	p.mu.Lock()
	defer p.mu.Unlock()
	ips := p.cfg.NodeIPs
	if len(ips) == 0 {
		ips = p.nodeIPs
	}
	if len(p.cfg.NodePortAddresses) > 0 {
		var in []netip.Addr
		for _, ip := range ips {
			for _, pf := range p.cfg.NodePortAddresses {
				if pf.Contains(ip) {
					in = append(in, ip)
					break
				}
			}
		}
		ips = in
	}
	out := slices.Clone(ips)
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

func (p *Proxy) slicesOf(key string) []*discoveryv1.EndpointSlice {
	objs, _ := p.slices.ByIndex(sliceByService, key)
	out := make([]*discoveryv1.EndpointSlice, 0, len(objs))
	for _, o := range objs {
		if sl, ok := o.(*discoveryv1.EndpointSlice); ok {
			out = append(out, sl)
		}
	}
	return out
}

// syncOnce commits what changed since the last sync and returns the
// ruleset now in the kernel.
func (p *Proxy) syncOnce(rs *ruleset, k *kernel, lister interface {
	List(labels.Selector) ([]*corev1.Service, error)
}) (*ruleset, error) {
	start := time.Now()
	p.mu.Lock()
	full, dirty := p.all, p.dirty
	p.all, p.dirty = false, map[string]bool{}
	p.mu.Unlock()
	node := NodeInfo{Name: p.cfg.NodeName, NodePortIPs: p.nodePortIPs(), ClusterCIDR: p.cfg.ClusterCIDR}

	plansOf := func(key string) []PortPlan {
		ns, name, _ := cutKey(key)
		svc, err := p.svcLister(ns, name)
		if err != nil {
			return nil
		}
		return PlanService(svc, p.slicesOf(key), node)
	}
	var (
		next *ruleset
		b    *batch
		err  error
		old  = rs.services
	)
	changed := map[string][]PortPlan{}
	if full {
		svcs, lerr := lister.List(labels.Everything())
		if lerr != nil {
			return rs, lerr
		}
		all := make(map[string][]PortPlan, len(svcs))
		for _, s := range svcs {
			key := s.Namespace + "/" + s.Name
			if ps := plansOf(key); ps != nil {
				all[key] = ps
			}
		}
		changed = all
		next, b, err = rs.full(all, node.NodePortIPs, node.ClusterCIDR)
	} else {
		for key := range dirty {
			changed[key] = plansOf(key)
		}
		old = make(map[string][]PortPlan, len(changed))
		for key := range changed {
			old[key] = rs.services[key]
		}
		next = rs
		b, err = rs.update(changed, node.NodePortIPs)
	}
	if err == nil {
		err = k.send(b)
	}
	if err != nil {
		p.mu.Lock()
		for key := range dirty {
			p.dirty[key] = true
		}
		p.mu.Unlock()
		return newRuleset(p.cfg.Table), err
	}
	syncDuration.WithLabelValues(map[bool]string{true: "full", false: "partial"}[full]).Observe(time.Since(start).Seconds())
	rulesGauge.WithLabelValues(p.cfg.NodeName).Set(float64(next.rules))
	svcGauge.WithLabelValues(p.cfg.NodeName).Set(float64(len(next.services)))
	if !full {
		flushStaleUDP(p.cfg.NetNSPath, old, changed)
	}
	if full {
		select {
		case <-p.ready:
		default:
			close(p.ready)
			slog.Info("proxy: table synced", "services", len(next.services), "rules", next.rules, "took", time.Since(start))
		}
	}
	slog.Debug("proxy: synced", "full", full, "services", len(changed), "took", time.Since(start))
	return next, nil
}

func cutKey(key string) (ns, name string, ok bool) {
	for i := range len(key) {
		if key[i] == '/' {
			return key[:i], key[i+1:], true
		}
	}
	return "", key, false
}

// The proxy's metrics, shared by every proxy in the process (one per
// node agent); Collectors hands them to a registry, as the other
// components' packages do.
var (
	syncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "rudder_proxy_sync_duration_seconds", Help: "Time to plan and commit one sync of the service proxy's nftables table.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"kind"})
	syncErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "rudder_proxy_sync_errors_total", Help: "Syncs the kernel refused."})
	rulesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rudder_proxy_rules", Help: "Rules in the service proxy's nftables table."}, []string{"node"})
	svcGauge   = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rudder_proxy_services", Help: "Services the proxy has rules for."}, []string{"node"})
)

// Collectors are the proxy's metrics.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{syncDuration, syncErrors, rulesGauge, svcGauge}
}
