package localcluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rudder-dev/rudder/internal/agent"
)

// MaxNodes bounds Config.Nodes: each node is a full agent process.
const MaxNodes = 100

// Config is a local cluster's nodes. Zero values take the defaults.
type Config struct {
	// DataDir is the server's data directory; node N keeps its state in
	// <DataDir>/nodes/node-N.
	DataDir string
	// Nodes is how many nodes (1..MaxNodes).
	Nodes int
	// Subnet is where the hub (its first address) and the nodes (the
	// next ones) are addressed: DefaultSubnet when zero.
	Subnet netip.Prefix
	// APIPort is the port the API is served on in the hub namespace
	// (6443 when 0: the hub is private, so the port is always free).
	APIPort int
	// Executable is the rudder binary the nodes run (`rudder agent`):
	// this process's own, /proc/self/exe, when empty.
	Executable string
	// AgentFlags are passed to every node's `rudder agent` after the
	// ones the cluster sets (--oci-runtime, --network, --log-level...).
	AgentFlags []string
	// RestartBackoff is the first delay before restarting a node agent
	// that exited (1 s); it doubles up to MaxRestartBackoff (30 s) while
	// the agent keeps exiting within a minute of its start.
	RestartBackoff, MaxRestartBackoff time.Duration
	// StopGrace is how long a node agent has to stop after SIGTERM
	// before it is killed (5 s: the whole stop must fit in the
	// 20 s a rudder command has after SIGTERM).
	StopGrace time.Duration
}

func (c *Config) defaults() {
	if !c.Subnet.IsValid() {
		c.Subnet = DefaultSubnet
	}
	if c.APIPort == 0 {
		c.APIPort = 6443
	}
	if c.Executable == "" {
		c.Executable = "/proc/self/exe"
	}
	if c.RestartBackoff <= 0 {
		c.RestartBackoff = time.Second
	}
	if c.MaxRestartBackoff <= 0 {
		c.MaxRestartBackoff = 30 * time.Second
	}
	if c.StopGrace <= 0 {
		c.StopGrace = 5 * time.Second
	}
}

// Cluster is a local cluster's nodes and their wiring.
type Cluster struct {
	routes   podRoutes // the hub's routes to pod CIDRs
	cfg      Config
	nodesDir string
	lock     *os.File
	cg       cgroupHost
	st       state
	topo     *Topology
	hub      net.Listener
	hubTaken bool // Listener handed it to the server, which closes it
	children []*child
	cancel   context.CancelFunc
	stopOnce sync.Once
	stopErr  error
}

// NodeName is the name of the i-th node (1-based).
func NodeName(i int) string { return "node-" + strconv.Itoa(i) }

// NodesDir is where the nodes of the cluster on dataDir keep their state.
func NodesDir(dataDir string) string { return filepath.Join(dataDir, "nodes") }

// Prepare readies the nodes' world without starting any: it locks
// <DataDir>/nodes, sweeps what a previous run on the same directory
// left (a crash included), creates the cgroups, the hub and node
// namespaces and their links, and opens the API listener in the hub.
// Stop undoes it all; on error nothing is left.
func Prepare(cfg Config) (_ *Cluster, err error) {
	cfg.defaults()
	if cfg.Nodes < 1 || cfg.Nodes > MaxNodes {
		return nil, fmt.Errorf("--nodes %d: between 1 and %d nodes", cfg.Nodes, MaxNodes)
	}
	if err := checkSubnet(cfg.Subnet, cfg.Nodes); err != nil {
		return nil, err
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("rudder up --nodes must run as root (it creates network namespaces, cgroups and mounts)")
	}
	if cfg.DataDir == "" {
		return nil, errors.New("a data directory is required")
	}
	if cfg.DataDir, err = filepath.Abs(cfg.DataDir); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, nodesDir: NodesDir(cfg.DataDir)}
	if c.cg, err = detectCgroups(); err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	own, err := c.cg.ownCgroup()
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	if err := os.MkdirAll(c.nodesDir, 0o700); err != nil {
		return nil, err
	}
	if c.lock, err = lockDir(c.nodesDir); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			c.teardown()
		}
	}()
	sum := sha256.Sum256([]byte(cfg.DataDir))
	c.st = state{Cgroup: filepath.Join(own, "rudder-"+hex.EncodeToString(sum[:6]))}
	names := make([]string, cfg.Nodes)
	for i := range names {
		names[i] = NodeName(i + 1)
	}
	if err := c.sweepStale(names); err != nil {
		return nil, fmt.Errorf("removing what a previous run on %s left: %w", cfg.DataDir, err)
	}
	for _, n := range names {
		if err := c.cg.create(filepath.Join(c.st.Cgroup, n, "agent")); err != nil {
			return nil, err
		}
	}
	start := time.Now()
	if c.topo, err = BuildTopology(cfg.Subnet, names); err != nil {
		return nil, err
	}
	hubAddr := net.JoinHostPort(c.topo.HubIP.String(), strconv.Itoa(cfg.APIPort))
	if c.hub, err = c.topo.Hub.Listen("tcp", hubAddr); err != nil {
		return nil, fmt.Errorf("listening on %s in the hub namespace: %w", hubAddr, err)
	}
	slog.Info("node network ready", "nodes", cfg.Nodes, "subnet", c.topo.Subnet, "hub", hubAddr, "cgroup", c.st.Cgroup, "took", time.Since(start).Round(time.Millisecond))
	return c, nil
}

// sweepStale removes a previous run's leftovers: those its state file
// names, and those this run would use (in case the file was lost). The
// new state is recorded before anything is created.
func (c *Cluster) sweepStale(names []string) error {
	old, err := readState(c.nodesDir)
	if err != nil {
		slog.Warn("ignoring an unreadable state file", "dir", c.nodesDir, "err", err)
	}
	entries, _ := os.ReadDir(c.nodesDir)
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	seen := map[string]bool{}
	for _, n := range names {
		rd := agent.RunDir(agent.Config{Dir: c.agentDir(n)})
		if !seen[rd] {
			seen[rd] = true
			c.st.RunDirs = append(c.st.RunDirs, rd)
		}
	}
	var errs []error
	if old.Cgroup != "" && old.Cgroup != c.st.Cgroup {
		errs = append(errs, sweep(c.cg, c.nodesDir, old))
	}
	errs = append(errs, sweep(c.cg, c.nodesDir, c.st))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return writeState(c.nodesDir, c.st)
}

func (c *Cluster) nodeDir(name string) string  { return filepath.Join(c.nodesDir, name) }
func (c *Cluster) agentDir(name string) string { return filepath.Join(c.nodeDir(name), "agent") }

// HubIP is the API server's address as the nodes reach it.
func (c *Cluster) HubIP() netip.Addr { return c.topo.HubIP }

// Listener is the API listener in the hub namespace, for
// server.Config.ExtraListener (the server then owns it).
func (c *Cluster) Listener() net.Listener {
	c.hubTaken = true
	return c.hub
}

// ServerURL is the API's URL as the nodes reach it.
func (c *Cluster) ServerURL() string { return "https://" + c.hub.Addr().String() }

// DialKubelet dials from the hub namespace, where the nodes' addresses
// are: server.Config.KubeletDial.
func (c *Cluster) DialKubelet(ctx context.Context, network, addr string) (net.Conn, error) {
	return c.topo.Hub.DialContext(ctx, network, addr)
}

// Join is what the nodes need to join the server.
type Join struct {
	// Token is a bootstrap token, "<id>.<secret>".
	Token string
	// CAPEM is the cluster CA, so the nodes need no discovery.
	CAPEM []byte
}

// StartNodes starts every node's agent, each in its namespace and
// cgroup, joined to the server through the hub, and supervises them
// until Stop. It returns once each has started (not yet registered), or
// with the first failure to start one.
func (c *Cluster) StartNodes(ctx context.Context, join Join) error {
	caPath := filepath.Join(c.nodesDir, "ca.crt")
	tokenPath := filepath.Join(c.nodesDir, "token")
	if err := os.WriteFile(caPath, join.CAPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(tokenPath, []byte(join.Token+"\n"), 0o600); err != nil {
		return err
	}
	ctx, c.cancel = context.WithCancel(context.WithoutCancel(ctx))
	for _, n := range c.topo.Nodes {
		dir := c.nodeDir(n.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		args := []string{"agent",
			"--server", c.ServerURL(), "--token-file", tokenPath, "--ca-file", caPath,
			"--data-dir", dir, "--node-name", n.Name, "--node-ip", n.IP.String(),
			"--pod-logs-dir", filepath.Join(dir, "pods"),
			"--cgroup-root", filepath.Join(c.st.Cgroup, n.Name),
		}
		ch := &child{
			name: n.Name, ns: n.NS, exe: c.cfg.Executable, args: append(args, c.cfg.AgentFlags...),
			logPath: filepath.Join(dir, "agent.log"), cg: c.cg, cgroup: filepath.Join(c.st.Cgroup, n.Name, "agent"),
			backoff: backoff{min: c.cfg.RestartBackoff, max: c.cfg.MaxRestartBackoff, stable: time.Minute},
			grace:   c.cfg.StopGrace,
			started: make(chan struct{}), done: make(chan struct{}),
		}
		c.children = append(c.children, ch)
		go ch.run(ctx)
	}
	for _, ch := range c.children {
		<-ch.started
		if ch.startErr != nil {
			return ch.startErr
		}
	}
	return nil
}

// Node is one node as it runs.
type Node struct {
	Name string
	IP   netip.Addr
	// PID is its agent's, 0 while it is restarted.
	PID int
	// Starts counts its agent's starts (1 + restarts).
	Starts int
	// Dir is its data directory (`rudder agent --data-dir`).
	Dir string
	// NetNS is its network namespace's inode.
	NetNS uint64
}

// Nodes lists the nodes.
func (c *Cluster) Nodes() []Node {
	var out []Node
	for i, n := range c.topo.Nodes {
		node := Node{Name: n.Name, IP: n.IP, Dir: c.nodeDir(n.Name)}
		node.NetNS, _ = n.NS.Inode()
		if i < len(c.children) {
			node.PID, node.Starts = c.children[i].PID(), c.children[i].Starts()
		}
		out = append(out, node)
	}
	return out
}

// Stop stops the node agents (SIGTERM, then SIGKILL after the grace),
// kills what is left in the cluster's cgroups (containers and their
// monitors), unmounts everything below the node and run directories,
// removes the cgroups and run directories and drops the namespaces. Pods
// do not survive it: the next start runs them again from the API.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() { c.stopErr = c.teardown() })
	return c.stopErr
}

func (c *Cluster) teardown() error {
	start := time.Now()
	if c.cancel != nil {
		c.cancel()
	}
	for _, ch := range c.children {
		<-ch.done
	}
	var errs []error
	if c.st.Cgroup != "" {
		errs = append(errs, sweep(c.cg, c.nodesDir, c.st))
	}
	if c.hub != nil && !c.hubTaken {
		// Closing the server's listener under it would end its Serve
		// with an error rather than ErrServerClosed.
		c.hub.Close()
	}
	if c.topo != nil {
		errs = append(errs, c.topo.Close())
	}
	os.Remove(filepath.Join(c.nodesDir, "token"))
	if c.lock != nil {
		c.lock.Close()
	}
	err := errors.Join(errs...)
	slog.Info("nodes stopped and cleaned up", "took", time.Since(start).Round(time.Millisecond), "err", err)
	return err
}

// lockDir takes an exclusive flock on dir/lock, holding this process's
// PID, so that two clusters never share (and sweep) one directory.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, "lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		pid, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is in use by another `rudder up --nodes` (pid %s)", dir, string(pid))
		}
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	f.Truncate(0)
	f.WriteAt([]byte(strconv.Itoa(os.Getpid())), 0)
	return f, nil
}

// Sweep removes what a cluster on dataDir left behind after a crash —
// processes in its cgroups, mounts, cgroups, run directories — as the
// next Prepare would, without starting anything. It refuses while a
// cluster runs on dataDir.
func Sweep(dataDir string) error {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return err
	}
	nodesDir := NodesDir(abs)
	if _, err := os.Stat(nodesDir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	lock, err := lockDir(nodesDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	st, err := readState(nodesDir)
	if err != nil {
		return err
	}
	cg, err := detectCgroups()
	if err != nil {
		return err
	}
	return sweep(cg, nodesDir, st)
}
