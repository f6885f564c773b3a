package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Config configures a node agent. Zero values take the documented defaults.
type Config struct {
	// NodeName is the Node's name; NodeIP its InternalIP, where the
	// kubelet API listens.
	NodeName string
	NodeIP   net.IP
	// Dir holds the agent's state: the runtime's images, containers and
	// sandboxes, the kubelet's pod directories and credentials.
	Dir string
	// RuntimeSocket is where rudder's runtime serves CRI.
	RuntimeSocket string
	// RuntimeEndpoint, when set, is another CRI runtime
	// ("unix:///run/containerd/containerd.sock") the kubelet uses
	// instead of starting rudder's.
	RuntimeEndpoint string
	// OCIRuntime is the runc-compatible binary containers start with.
	OCIRuntime string
	// PodLogsDir is where container logs go (/var/log/pods).
	PodLogsDir string
	// KubeletPort is the kubelet API's port (10250; 0 picks one).
	KubeletPort int
	// CgroupRoot is the cgroup the node's pods nest under, as
	// <CgroupRoot>/kubepods/... (upstream kubelet's --cgroup-root). Empty:
	// the agent's own cgroup. Several agents on one machine each need
	// their own (`rudder up --nodes` gives node N <own>/rudder-<id>/node-N).
	CgroupRoot string
	// Credentials are the node's identity (LocalCredentials, or a
	// bootstrap through internal/nodeidentity).
	Credentials Credentials
	// Network is how pods get addresses: NetworkBridge (the built-in
	// bridge network, or a CNI configuration found in CNIConfDir),
	// NetworkCNI (a CNI configuration, required) or NetworkNone
	// (loopback only). Empty means NetworkNone, so a caller that does not
	// ask for a pod network never changes the host's; `rudder up` and
	// `rudder agent` ask for NetworkBridge.
	Network string
	// ClusterCIDRs are the whole pod network: pod traffic to outside it
	// is masqueraded (default 10.42.0.0/16).
	ClusterCIDRs []string
	// CNIConfDir is where CNI configurations are looked for
	// (/etc/cni/net.d when empty).
	CNIConfDir string
	// NetworkNetNS is the network namespace file the pod network builds
	// its bridge, routes and rules in; empty is the process's own (an
	// agent started inside its node's namespace). Tests name one they
	// created.
	NetworkNetNS string

	// DNSAddr, when set, runs the cluster DNS server (internal/dns) on it,
	// UDP and TCP ("10.0.0.5:53"; port 0 picks one), and lists it in the
	// kube-dns Service's endpoints (dns.go). Off when empty.
	DNSAddr string
	// DNSUpstreams are the resolvers it forwards other names to (the
	// host's /etc/resolv.conf when empty).
	DNSUpstreams []string
	// ClusterDNS is the nameserver of ClusterFirst pods (DefaultClusterDNS,
	// the kube-dns Service); ClusterDomain the cluster zone
	// (cluster.local).
	ClusterDNS    net.IP
	ClusterDomain string

	// Proxy runs the service proxy: nftables rules for Services in the
	// network namespace at NetNSPath ("" = the agent's own). Off by
	// default: an agent sharing the host's namespace (the in-process
	// tests, `rudder up` without its own node network) must not put
	// rules in the host.
	Proxy Proxy
	// NetworkPolicy enforces NetworkPolicies (internal/netpolicy) in the
	// proxy's namespace: on whenever the proxy runs, unless disabled.
	NetworkPolicy NetworkPolicy
}

// NetworkPolicy configures the agent's NetworkPolicy enforcer.
type NetworkPolicy struct {
	// Disabled turns enforcement off (--network-policy=false).
	Disabled bool
}

// Proxy configures the agent's service proxy.
type Proxy struct {
	Enabled bool
	// NetNSPath is the node's network namespace ("" = the agent's).
	NetNSPath string
	// ClusterCIDR is the pods' range (masquerade decisions).
	ClusterCIDR netip.Prefix
	// NodePortAddresses narrows where NodePorts answer (empty: the
	// node's InternalIP).
	NodePortAddresses []netip.Prefix
}

// Network modes (Config.Network).
const (
	NetworkBridge = "bridge"
	NetworkCNI    = "cni"
	NetworkNone   = "none"
)

func (c *Config) defaults() {
	if c.PodLogsDir == "" {
		c.PodLogsDir = "/var/log/pods"
	}
	if c.OCIRuntime == "" {
		c.OCIRuntime = "runc"
	}
	if c.RuntimeSocket == "" {
		c.RuntimeSocket = filepath.Join(c.Dir, "cri.sock")
	}
	if c.NodeIP == nil {
		c.NodeIP = net.IPv4(127, 0, 0, 1)
	}
	if c.Network == "" {
		c.Network = NetworkNone
	}
	if c.ClusterDNS == nil {
		c.ClusterDNS = net.ParseIP(DefaultClusterDNS)
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
}

// Preflight checks the host can run a node as cfg asks, without changing
// anything.
func Preflight(cfg Config) error {
	cfg.defaults()
	_, err := preflight(cfg.RuntimeEndpoint == "", cfg.OCIRuntime)
	return err
}

// Agent is a running node agent.
type Agent struct {
	cfg     Config
	host    Host
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	mu      sync.Mutex
	err     error
	mounted bool
	done    chan struct{}
}

// Start checks the host, prepares the agent's directory and starts the
// runtime (unless another is named) and the kubelet. It returns once both
// run; they run until ctx ends or Stop is called.
func Start(ctx context.Context, cfg Config) (*Agent, error) {
	cfg.defaults()
	if cfg.Dir == "" || cfg.NodeName == "" {
		return nil, errors.New("agent: a directory and a node name are required")
	}
	switch cfg.Network {
	case NetworkBridge, NetworkCNI, NetworkNone:
	default:
		return nil, fmt.Errorf("agent: unknown network mode %q (bridge, cni or none)", cfg.Network)
	}
	host, err := preflight(cfg.RuntimeEndpoint == "", cfg.OCIRuntime)
	if err != nil {
		return nil, err
	}
	if cfg.CgroupRoot == "" {
		cfg.CgroupRoot = host.OwnCgroup
	}
	if !filepath.IsAbs(cfg.CgroupRoot) {
		return nil, fmt.Errorf("agent: the cgroup root %q is not an absolute cgroup path", cfg.CgroupRoot)
	}
	a := &Agent{cfg: cfg, host: host, done: make(chan struct{})}
	a.mounted, err = makeShared(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("agent: %w", err)
	}
	ctx, a.cancel = context.WithCancel(ctx)
	if err := a.startComponents(ctx); err != nil {
		a.cancel()
		a.wg.Wait()
		a.unmount()
		return nil, err
	}
	go func() {
		a.wg.Wait()
		a.unmount()
		close(a.done)
	}()
	slog.Info("node agent running", "node", cfg.NodeName, "ip", cfg.NodeIP, "cgroups", host.Cgroups, "kubepods", a.kubepodsRoot())
	return a, nil
}

// run starts fn as one of the agent's components; its error (other than
// the context's end) is kept for Wait and stops the agent.
func (a *Agent) run(name string, fn func() error) {
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		if err := fn(); err != nil && !errors.Is(err, context.Canceled) {
			slog.Error("agent component stopped", "component", name, "err", err)
			a.mu.Lock()
			if a.err == nil {
				a.err = fmt.Errorf("%s: %w", name, err)
			}
			a.mu.Unlock()
			a.cancel()
		}
	}()
}

func (a *Agent) unmount() {
	if a.mounted {
		if err := unix.Unmount(a.cfg.Dir, unix.MNT_DETACH); err != nil {
			slog.Warn("unmounting the agent directory", "dir", a.cfg.Dir, "err", err)
		}
		a.mounted = false
	}
}

// Stop ends the kubelet and the runtime and waits for them. Containers
// keep running; the next Start adopts them.
func (a *Agent) Stop() {
	a.cancel()
	<-a.done
}

// Wait blocks until the agent stops and returns the first component
// error, if any.
func (a *Agent) Wait() error {
	<-a.done
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// kubepodsRoot is the cgroup parent of every pod on this node.
func (a *Agent) kubepodsRoot() string { return filepath.Join(a.cfg.CgroupRoot, "kubepods") }

// Host is what preflight found.
func (a *Agent) Host() Host { return a.host }

// The agent's directory: where each part keeps its state.

// ImagesDir is where the runtime's image store lives (`rudder images`
// opens the same store).
func ImagesDir(cfg Config) string { return filepath.Join(cfg.Dir, "images") }

// RuntimeDir holds the runtime's sandboxes and containers.
func RuntimeDir(cfg Config) string { return filepath.Join(cfg.Dir, "runtime") }

// NetworkDir holds the pod network's address allocations.
func NetworkDir(cfg Config) string { return filepath.Join(cfg.Dir, "network") }

// KubeletDir holds the kubelet's pod directories (volumes).
func KubeletDir(cfg Config) string { return filepath.Join(cfg.Dir, "kubelet") }
