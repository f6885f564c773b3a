package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/google/nftables"
	"github.com/mdlayher/netlink"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// DefaultTable is the nftables table (family inet) the enforcer owns.
const DefaultTable = "rudder-policy"

// Config configures an enforcer. Zero values take the defaults.
type Config struct {
	// Client reaches the API server; required. It must list and watch
	// networkpolicies, pods and namespaces in every namespace.
	Client kubernetes.Interface
	// NodeName is this node; required. Its pods are the ones fenced.
	NodeName string
	// NetNSPath is the network namespace every kernel operation runs
	// in ("" = this process's).
	NetNSPath string
	// Table is the nftables table's name (DefaultTable).
	Table string
}

// Enforcer keeps the node's policy table in step with the cluster's
// NetworkPolicies, Pods and Namespaces.
type Enforcer struct {
	cfg   Config
	ready chan struct{}
	kick  chan struct{}

	mu   sync.Mutex
	pods map[string]entry // namespace/name → reduced pod
	nss  map[string]labels.Set
	pols map[string]*networkingv1.NetworkPolicy
}

type entry struct {
	pod   Pod
	local bool
}

// New checks cfg and returns an enforcer; Run starts it.
func New(cfg Config) (*Enforcer, error) {
	if cfg.Client == nil || cfg.NodeName == "" {
		return nil, errors.New("netpolicy: a client and a node name are required")
	}
	if cfg.Table == "" {
		cfg.Table = DefaultTable
	}
	return &Enforcer{cfg: cfg, ready: make(chan struct{}), kick: make(chan struct{}, 1),
		pods: map[string]entry{}, nss: map[string]labels.Set{}, pols: map[string]*networkingv1.NetworkPolicy{}}, nil
}

// Ready is closed once the first sync is in the kernel.
func (e *Enforcer) Ready() <-chan struct{} { return e.ready }

// Run watches the API server and keeps the table until ctx ends, then
// removes the table. It returns ctx's error, or the error that keeps it
// from starting.
func (e *Enforcer) Run(ctx context.Context) error {
	nsFd := -1
	if e.cfg.NetNSPath != "" {
		fd, err := unix.Open(e.cfg.NetNSPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("netpolicy: network namespace %s: %w", e.cfg.NetNSPath, err)
		}
		nsFd = fd
		defer unix.Close(fd)
	}
	conn := func() (*nftables.Conn, error) { return newConn(nsFd) }
	defer func() {
		if err := deleteTable(conn, e.cfg.Table); err != nil {
			slog.Warn("netpolicy: removing the table", "table", e.cfg.Table, "err", err)
		}
	}()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f := informers.NewSharedInformerFactory(e.cfg.Client, 0)
	// Only what planning needs is kept of a pod (IP, labels, named
	// ports); the informer's store is trimmed the same way.
	podInf := f.Core().V1().Pods().Informer()
	if err := podInf.SetTransform(trimPod); err != nil {
		return err
	}
	nsInf := f.Core().V1().Namespaces().Informer()
	polInf := f.Networking().V1().NetworkPolicies().Informer()
	unwrap := func(obj any) any {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			return d.Obj
		}
		return obj
	}
	reg := func(inf cache.SharedIndexInformer, set func(obj any, deleted bool)) error {
		_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(o any) { set(o, false) },
			UpdateFunc: func(_, o any) { set(o, false) },
			DeleteFunc: func(o any) { set(unwrap(o), true) },
		})
		return err
	}
	err := errors.Join(
		reg(podInf, func(o any, del bool) {
			p, ok := o.(*corev1.Pod)
			if !ok {
				return
			}
			key := p.Namespace + "/" + p.Name
			red, ok := PodFromAPI(p)
			e.mu.Lock()
			defer e.mu.Unlock()
			old, had := e.pods[key]
			if del || !ok {
				if had {
					delete(e.pods, key)
					e.kickLocked()
				}
				return
			}
			n := entry{pod: red, local: p.Spec.NodeName == e.cfg.NodeName}
			if !had || !reflect.DeepEqual(old, n) {
				e.pods[key] = n
				e.kickLocked()
			}
		}),
		reg(nsInf, func(o any, del bool) {
			n, ok := o.(*corev1.Namespace)
			if !ok {
				return
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if del {
				delete(e.nss, n.Name)
			} else if old, had := e.nss[n.Name]; had && labels.Equals(old, n.Labels) {
				return
			} else {
				e.nss[n.Name] = labels.Set(n.Labels)
			}
			e.kickLocked()
		}),
		reg(polInf, func(o any, del bool) {
			p, ok := o.(*networkingv1.NetworkPolicy)
			if !ok {
				return
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if del {
				delete(e.pols, p.Namespace+"/"+p.Name)
			} else {
				e.pols[p.Namespace+"/"+p.Name] = p
			}
			e.kickLocked()
		}),
	)
	if err != nil {
		return fmt.Errorf("netpolicy: %w", err)
	}
	f.Start(ctx.Done())
	defer f.Shutdown()
	for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("netpolicy: %v cache did not sync: %w", typ, ctx.Err())
		}
	}
	slog.Info("netpolicy running", "node", e.cfg.NodeName, "table", e.cfg.Table, "netns", e.cfg.NetNSPath)
	return e.loop(ctx, conn)
}

// trimPod drops what planning never reads, so a big cluster's pods cost
// little memory.
func trimPod(obj any) (any, error) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return obj, nil
	}
	out := &corev1.Pod{}
	out.Name, out.Namespace, out.Labels, out.UID, out.ResourceVersion = p.Name, p.Namespace, p.Labels, p.UID, p.ResourceVersion
	out.DeletionTimestamp = p.DeletionTimestamp
	out.Spec.NodeName, out.Spec.HostNetwork = p.Spec.NodeName, p.Spec.HostNetwork
	for _, c := range p.Spec.Containers {
		var named []corev1.ContainerPort
		for _, cp := range c.Ports {
			if cp.Name != "" {
				named = append(named, cp)
			}
		}
		if len(named) > 0 {
			out.Spec.Containers = append(out.Spec.Containers, corev1.Container{Name: c.Name, Ports: named})
		}
	}
	out.Status.Phase, out.Status.PodIP = p.Status.Phase, p.Status.PodIP
	return out, nil
}

func (e *Enforcer) kickLocked() {
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

// loop plans on every change and commits what differs from the
// kernel: a full sync (the table rebuilt in one transaction) at the
// start, hourly and after a refused commit; otherwise only the pods
// whose plan changed.
func (e *Enforcer) loop(ctx context.Context, conn func() (*nftables.Conn, error)) error {
	rs := newRuleset(e.cfg.Table)
	full := true
	backoff := time.Duration(0)
	e.mu.Lock()
	e.kickLocked()
	e.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.kick:
		case <-time.After(time.Hour):
			full = true // repairs changes made behind our back
		}
		if backoff > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(backoff):
			}
		}
		start := time.Now()
		plans := e.plan()
		c, err := conn()
		changed := true
		if err == nil {
			if full {
				err = rs.full(c, plans)
			} else {
				changed, err = rs.update(c, plans)
			}
		}
		if err == nil && changed {
			err = c.Flush()
		}
		if err != nil {
			slog.Error("netpolicy: sync failed; a full sync follows", "err", err)
			syncErrors.Inc()
			rs = newRuleset(e.cfg.Table)
			backoff = min(max(2*backoff, 100*time.Millisecond), 10*time.Second)
			full = true
			e.mu.Lock()
			e.kickLocked()
			e.mu.Unlock()
			continue
		}
		if changed {
			kind := map[bool]string{true: "full", false: "partial"}[full]
			syncDuration.WithLabelValues(kind).Observe(time.Since(start).Seconds())
			rulesGauge.WithLabelValues(e.cfg.NodeName).Set(float64(rs.rules))
			slog.Debug("netpolicy: synced", "kind", kind, "fenced", len(plans), "rules", rs.rules, "took", time.Since(start))
		}
		backoff, full = 0, false
		select {
		case <-e.ready:
		default:
			close(e.ready)
		}
	}
}

// The enforcer's metrics, shared by every enforcer in the process.
var (
	syncDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "rudder_netpolicy_sync_duration_seconds", Help: "Time to plan and commit one sync of the NetworkPolicy table.",
		Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
	}, []string{"kind"})
	syncErrors = prometheus.NewCounter(prometheus.CounterOpts{Name: "rudder_netpolicy_sync_errors_total", Help: "NetworkPolicy syncs the kernel refused."})
	rulesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "rudder_netpolicy_rules", Help: "Rules in the NetworkPolicy table."}, []string{"node"})
)

// Collectors are the enforcer's metrics.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{syncDuration, syncErrors, rulesGauge}
}

// plan snapshots the state and plans this node's pods.
func (e *Enforcer) plan() []PodPlan {
	e.mu.Lock()
	st := State{Namespaces: make(map[string]labels.Set, len(e.nss))}
	for k, v := range e.nss {
		st.Namespaces[k] = v
	}
	for _, p := range e.pols {
		st.Policies = append(st.Policies, p)
	}
	var targets []Pod
	for _, en := range e.pods {
		st.Pods = append(st.Pods, en.pod)
		if en.local {
			targets = append(targets, en.pod)
		}
	}
	e.mu.Unlock()
	slices.SortFunc(st.Policies, func(a, b *networkingv1.NetworkPolicy) int {
		return compareStr(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	slices.SortFunc(st.Pods, func(a, b Pod) int { return a.IP.Compare(b.IP) })
	return Plan(st, targets)
}

func compareStr(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// newConn is a netlink connection in the namespace behind nsFd (-1:
// this process's). A full sync is one datagram of a few hundred bytes
// per rule, past the default socket buffer at ~100 fenced pods, so the
// buffers are raised past the sysctl caps, which root may (as nft does).
func newConn(nsFd int) (*nftables.Conn, error) {
	opts := []nftables.ConnOption{nftables.WithSockOptions(func(c *netlink.Conn) error {
		rc, err := c.SyscallConn()
		if err != nil {
			return err
		}
		return rc.Control(func(fd uintptr) {
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUFFORCE, 64<<20)
			_ = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, 16<<20)
		})
	})}
	if nsFd >= 0 {
		opts = append(opts, nftables.WithNetNSFd(nsFd))
	}
	return nftables.New(opts...)
}

// deleteTable removes the table if it is there.
func deleteTable(conn func() (*nftables.Conn, error), name string) error {
	c, err := conn()
	if err != nil {
		return err
	}
	t := &nftables.Table{Name: name, Family: nftables.TableFamilyINet}
	c.AddTable(t)
	c.DelTable(t)
	return c.Flush()
}

// TableExists reports whether the table is in the namespace at nsPath
// ("" = this process's).
func TableExists(nsPath, table string) (bool, error) {
	var opts []nftables.ConnOption
	if nsPath != "" {
		fd, err := unix.Open(nsPath, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return false, err
		}
		defer unix.Close(fd)
		opts = append(opts, nftables.WithNetNSFd(fd))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return false, err
	}
	_, err = c.ListTableOfFamily(table, nftables.TableFamilyINet)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENOENT) {
		return false, nil
	}
	return err == nil, err
}
