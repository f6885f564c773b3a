package network

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ErrStopped is returned by calls after Stop.
var ErrStopped = errors.New("network: stopped")

// Mode chooses how pods are networked.
type Mode string

const (
	// ModeBridge is the built-in network (bridge, veth, IPAM, routes,
	// masquerade) — unless a CNI configuration is found in CNIConfDir,
	// which then replaces it, as a CNI plugin installed on a node does.
	ModeBridge Mode = "bridge"
	// ModeCNI runs the first CNI configuration in CNIConfDir through
	// libcni; there must be one.
	ModeCNI Mode = "cni"
)

// Backend chooses how the built-in network reaches other nodes' pods.
type Backend string

const (
	// BackendAuto routes directly (host-gw) to nodes on a shared subnet
	// and through VXLAN to the others.
	BackendAuto Backend = ""
	// BackendVXLAN routes every other node through VXLAN.
	BackendVXLAN Backend = "vxlan"
	// BackendHostGW routes only nodes on a shared subnet; others are
	// unreachable.
	BackendHostGW Backend = "host-gw"
)

// Config is what New needs. Zero values take the documented defaults.
type Config struct {
	// NodeName is this node; its spec.podCIDR(s) are the pod ranges.
	// Required in bridge mode.
	NodeName string
	// NodeIP is the node's address between nodes (its InternalIP): the
	// next hop other nodes route this node's pods through, and the
	// VXLAN tunnel's endpoint.
	NodeIP net.IP
	// Client reads Nodes and writes this node's network annotations.
	// Required in bridge mode.
	Client kubernetes.Interface
	// StateDir keeps the IPAM's allocations (and libcni's cache), so an
	// agent restart keeps them. Required.
	StateDir string
	// NodeNetNS is the network namespace file of the node: every link,
	// address, route and nftables rule is made there. "" is the
	// process's own namespace.
	NodeNetNS string
	// Mode is ModeBridge (default) or ModeCNI.
	Mode Mode
	// BridgeName is the pods' bridge (default "rudder0").
	BridgeName string
	// MTU of the pods' links; default: the MTU of the link that holds
	// NodeIP less 50 (the VXLAN header), or 1450.
	MTU int
	// ClusterCIDRs are the whole pod network (default 10.42.0.0/16):
	// traffic from pods to addresses outside them is masqueraded.
	ClusterCIDRs []string
	// Backend picks how other nodes are reached (default BackendAuto).
	Backend Backend
	// VXLANID and VXLANPort configure the tunnel (default 1 and 4789).
	VXLANID, VXLANPort int
	// CNIConfDir is searched for *.conflist, *.conf and *.json CNI
	// configurations (default /etc/cni/net.d); CNIBinDirs for the
	// plugins (default /opt/cni/bin, /usr/lib/cni).
	CNIConfDir string
	CNIBinDirs []string
	// ReadyTimeout bounds how long Setup waits for the network to be
	// ready (the node's pod CIDR) before it fails (default 30 s).
	ReadyTimeout time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c *Config) setDefaults() error {
	if c.StateDir == "" {
		return errors.New("network: StateDir is required")
	}
	if c.Mode == "" {
		c.Mode = ModeBridge
	}
	if c.Mode != ModeBridge && c.Mode != ModeCNI {
		return fmt.Errorf("network: unknown mode %q (bridge or cni)", c.Mode)
	}
	switch c.Backend {
	case BackendAuto, BackendVXLAN, BackendHostGW:
	default:
		return fmt.Errorf("network: unknown backend %q (vxlan or host-gw; empty picks per node)", c.Backend)
	}
	if c.BridgeName == "" {
		c.BridgeName = "rudder0"
	}
	if len(c.BridgeName) > 15 {
		return fmt.Errorf("network: bridge name %q is longer than 15 bytes", c.BridgeName)
	}
	if len(c.ClusterCIDRs) == 0 {
		c.ClusterCIDRs = []string{"10.42.0.0/16"}
	}
	if c.VXLANID == 0 {
		c.VXLANID = 1
	}
	if c.VXLANPort == 0 {
		c.VXLANPort = 4789
	}
	if c.CNIConfDir == "" {
		c.CNIConfDir = "/etc/cni/net.d"
	}
	if len(c.CNIBinDirs) == 0 {
		c.CNIBinDirs = []string{"/opt/cni/bin", "/usr/lib/cni"}
	}
	if c.ReadyTimeout <= 0 {
		c.ReadyTimeout = 30 * time.Second
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return nil
}

// backend is one way of networking a sandbox: the built-in bridge or a
// CNI plugin chain.
type backend interface {
	setup(ctx context.Context, id, nsPath string, cfg *runtimeapi.PodSandboxConfig) ([]string, error)
	teardown(ctx context.Context, id, nsPath string) error
	// gc releases what sandboxes not in live hold (nil live: only those
	// whose namespace is gone).
	gc(ctx context.Context, live map[string]bool) error
}

// Network networks pod sandboxes. Its Setup and Teardown are
// runtime.Network; they are safe for concurrent use.
type Network struct {
	cfg      Config
	log      *slog.Logger
	clusters []netip.Prefix
	nodeNS   netns.NsHandle // held open: nftables dials through its fd
	nl       *netlink.Handle
	be       backend
	bridge   *bridgeNet // nil in CNI mode

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	// opMu is held shared by Setup, Teardown and GC and exclusively by
	// Stop, which closes the handles: a closed netlink handle would fall
	// back to the calling thread's namespace, so nothing may use one.
	opMu    sync.RWMutex
	stopped bool
	ready   chan struct{}
	mu      sync.Mutex
	err     error // why not ready
}

// New checks cfg and loads the network's state; Start begins the work.
func New(cfg Config) (*Network, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	n := &Network{cfg: cfg, log: cfg.Logger, ready: make(chan struct{}), nodeNS: netns.None()}
	for _, s := range cfg.ClusterCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("network: cluster CIDR %q: %w", s, err)
		}
		n.clusters = append(n.clusters, p.Masked())
	}
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("network: %w", err)
	}
	conf, err := findCNIConfig(cfg.CNIConfDir)
	if err != nil {
		return nil, err
	}
	if cfg.Mode == ModeCNI && conf == "" {
		return nil, fmt.Errorf("network: mode cni, but no CNI configuration in %s", cfg.CNIConfDir)
	}
	if conf != "" {
		if cfg.Mode == ModeBridge {
			n.log.Info("network: a CNI configuration replaces the built-in bridge", "config", conf)
		}
		c, err := newCNI(cfg, conf)
		if err != nil {
			return nil, err
		}
		n.be = c
		close(n.ready)
		return n, nil
	}
	if cfg.NodeName == "" || cfg.Client == nil {
		return nil, errors.New("network: the bridge network needs NodeName and Client")
	}
	if n.nodeNS, err = openNS(cfg.NodeNetNS); err != nil {
		return nil, err
	}
	if n.nl, err = netlink.NewHandleAt(n.nodeNS); err != nil {
		n.nodeNS.Close()
		return nil, fmt.Errorf("network: netlink in %s: %w", nsName(cfg.NodeNetNS), err)
	}
	ip, err := openIPAM(filepath.Join(cfg.StateDir, "ipam"))
	if err != nil {
		n.close()
		return nil, err
	}
	n.bridge = &bridgeNet{n: n, ipam: ip}
	n.be = n.bridge
	n.setErr(fmt.Errorf("waiting for node %s to get spec.podCIDR", cfg.NodeName))
	return n, nil
}

func (n *Network) close() {
	if n.nl != nil {
		n.nl.Close()
		n.nl = nil
	}
	if n.nodeNS.IsOpen() {
		n.nodeNS.Close()
		n.nodeNS = netns.None()
	}
}

// Start releases the addresses of sandboxes whose namespace is gone and,
// for the bridge network, starts watching Nodes: once this node has a
// pod CIDR the bridge, masquerade and routes are made and Setup works.
// It returns at once; the work goes on until ctx ends or Stop.
func (n *Network) Start(ctx context.Context) error {
	n.opMu.RLock()
	stopped := n.stopped
	n.opMu.RUnlock()
	if stopped {
		return ErrStopped
	}
	if err := n.be.gc(ctx, nil); err != nil {
		n.log.Warn("network: releasing addresses of gone sandboxes", "err", err)
	}
	if n.bridge == nil {
		n.cancel = func() {}
		return nil
	}
	ctx, n.cancel = context.WithCancel(ctx)
	n.wg.Go(func() { n.bridge.run(ctx) })
	return nil
}

// Stop ends the node watch and removes the masquerade table and the
// routes to other nodes. The bridge and the pods' links stay: running
// pods keep their addresses for the next Start.
// A second Stop does nothing.
func (n *Network) Stop() {
	n.stopOnce.Do(func() {
		if n.cancel != nil {
			n.cancel()
		}
		n.wg.Wait()
		n.opMu.Lock()
		defer n.opMu.Unlock()
		if n.bridge != nil {
			n.bridge.stop()
		}
		n.close()
		n.stopped = true
	})
}

// Ready is nil once Setup can work, else why not (the runtime reports
// it as NetworkReady=false).
func (n *Network) Ready() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.err
}

func (n *Network) setErr(err error) {
	n.mu.Lock()
	n.err = err
	n.mu.Unlock()
}

func (n *Network) markReady() {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.err = nil
	select {
	case <-n.ready:
	default:
		close(n.ready)
	}
}

// waitReady waits for the network to be ready, at most ReadyTimeout.
func (n *Network) waitReady(ctx context.Context) error {
	select {
	case <-n.ready:
		return nil
	default:
	}
	t := time.NewTimer(n.cfg.ReadyTimeout)
	defer t.Stop()
	select {
	case <-n.ready:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return fmt.Errorf("network: not ready: %w", n.Ready())
	}
}

// Setup gives the sandbox id, whose network namespace is at nsPath, its
// link and addresses and returns the addresses, IPv4 first. A Setup
// that fails leaves nothing allocated; one that runs twice returns the
// same addresses.
func (n *Network) Setup(ctx context.Context, id, nsPath string, cfg *runtimeapi.PodSandboxConfig) ([]string, error) {
	if id == "" || nsPath == "" {
		return nil, errors.New("network: setup needs a sandbox ID and a netns path")
	}
	if err := n.waitReady(ctx); err != nil {
		return nil, err
	}
	n.opMu.RLock()
	defer n.opMu.RUnlock()
	if n.stopped {
		return nil, ErrStopped
	}
	return n.be.setup(ctx, id, nsPath, cfg)
}

// Teardown releases what Setup gave id; it succeeds when there is
// nothing to release, and when the namespace is already gone.
func (n *Network) Teardown(ctx context.Context, id, nsPath string) error {
	if id == "" {
		return errors.New("network: teardown needs a sandbox ID")
	}
	n.opMu.RLock()
	defer n.opMu.RUnlock()
	if n.stopped {
		return ErrStopped
	}
	return n.be.teardown(ctx, id, nsPath)
}

// GC releases the addresses of every sandbox not in live and of every
// sandbox whose namespace is gone. The agent calls it once the runtime
// has loaded its sandboxes, which covers an agent that died between
// Setup and recording the sandbox.
func (n *Network) GC(ctx context.Context, live []string) error {
	m := make(map[string]bool, len(live))
	for _, id := range live {
		m[id] = true
	}
	n.opMu.RLock()
	defer n.opMu.RUnlock()
	if n.stopped {
		return ErrStopped
	}
	return n.be.gc(ctx, m)
}
