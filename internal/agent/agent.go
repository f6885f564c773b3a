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
	// Credentials are the node's identity (LocalCredentials, or a
	// bootstrap through internal/nodeidentity).
	Credentials Credentials
	// Proxy runs the service proxy: nftables rules for Services in the
	// network namespace at NetNSPath ("" = the agent's own). Off by
	// default: an agent sharing the host's namespace (the in-process
	// tests, `rudder up` without its own node network) must not put
	// rules in the host.
	Proxy Proxy
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
	host, err := preflight(cfg.RuntimeEndpoint == "", cfg.OCIRuntime)
	if err != nil {
		return nil, err
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
	slog.Info("node agent running", "node", cfg.NodeName, "ip", cfg.NodeIP, "cgroups", host.Cgroups, "kubepods", host.KubepodsRoot())
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

// Host is what preflight found.
func (a *Agent) Host() Host { return a.host }

// The agent's directory: where each part keeps its state.

// ImagesDir is where the runtime's image store lives (`rudder images`
// opens the same store).
func ImagesDir(cfg Config) string { return filepath.Join(cfg.Dir, "images") }

// RuntimeDir holds the runtime's sandboxes and containers.
func RuntimeDir(cfg Config) string { return filepath.Join(cfg.Dir, "runtime") }

// KubeletDir holds the kubelet's pod directories (volumes).
func KubeletDir(cfg Config) string { return filepath.Join(cfg.Dir, "kubelet") }
