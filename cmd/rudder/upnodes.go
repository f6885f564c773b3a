package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/agent"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/localcluster"
	"github.com/rudder-dev/rudder/internal/server"
)

// nodesFlags are `rudder up`'s flags for a multi-node cluster.
type nodesFlags struct {
	nodes   int
	subnet  string
	network string
}

func (nf *nodesFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.IntVar(&nf.nodes, "nodes", 0, "run this many real nodes (1-100), each a \"rudder agent\" process in its own network namespace, data directory and cgroup, wired to a private bridge (without --nodes: one node in this process, in the host's network namespace)")
	f.StringVar(&nf.subnet, "node-subnet", localcluster.DefaultSubnet.String(), "with --nodes: the private subnet of the nodes' bridge; the API server listens on its first address, the nodes take the next ones")
	// The node agent's pod network mode is the network package's flag;
	// up forwards it to every node. Registered here only while the agent
	// has none of its own, so the two never clash.
	if agentCommand().Flags().Lookup("network") == nil && f.Lookup("network") == nil {
		f.StringVar(&nf.network, "network", "", "with --nodes: the nodes' pod network mode, passed to each node's \"rudder agent --network\" (default: the agent's)")
	}
}

// nodeAgentPassthrough are the agent flags `up --nodes` forwards to every
// node when given; the others are the cluster's to set per node.
// (--log-level, a flag of every command, is forwarded too.)
var nodeAgentPassthrough = []string{"oci-runtime", "network", "network-policy"}

// nodeAgentPerNode are agent flags each node gets its own value of.
var nodeAgentPerNode = []string{"node-name", "node-ip", "container-runtime-endpoint", "pod-logs-dir", "cgroup-root", "kubelet-port"}

// upNodes runs `rudder up --nodes N`: the control plane in this process,
// listening also in the nodes' hub namespace, and N supervised node
// agents (internal/localcluster).
func upNodes(cmd *cobra.Command, cfg server.Config, nf nodesFlags) error {
	ctx := cmd.Context()
	began := time.Now()
	for _, name := range nodeAgentPerNode {
		if cmd.Flags().Changed(name) {
			return fmt.Errorf("--%s cannot be used with --nodes: each node gets its own", name)
		}
	}
	subnet, err := netip.ParsePrefix(nf.subnet)
	if err != nil {
		return fmt.Errorf("--node-subnet: %w", err)
	}
	var agentFlags []string
	for _, name := range nodeAgentPassthrough {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			if agentCommand().Flags().Lookup(name) == nil {
				return fmt.Errorf("--%s: this build's `rudder agent` has no such flag", name)
			}
			agentFlags = append(agentFlags, "--"+name+"="+f.Value.String())
		}
	}
	if cmd.Root().PersistentFlags().Changed("log-level") {
		agentFlags = append(agentFlags, "--log-level="+cmd.Root().PersistentFlags().Lookup("log-level").Value.String())
	}
	ociRuntime, _ := cmd.Flags().GetString("oci-runtime")
	if err := agent.Preflight(agent.Config{OCIRuntime: ociRuntime}); err != nil {
		return err
	}
	apiPort := cfg.HTTPSPort
	if apiPort == 0 {
		apiPort = 6443
	}
	lc, err := localcluster.Prepare(localcluster.Config{DataDir: cfg.DataDir, Nodes: nf.nodes, Subnet: subnet, APIPort: apiPort, AgentFlags: agentFlags})
	if err != nil {
		return err
	}
	hub := lc.HubIP().String()
	cfg.ExtraListener = lc.Listener()
	cfg.KubeletDial = lc.DialKubelet
	cfg.TLSSANs = append(cfg.TLSSANs, hub)
	if cfg.AdvertiseAddress == "" {
		// Pods reach the API through the kubernetes Service at the
		// hub's address, the one every node reaches.
		cfg.AdvertiseAddress = hub
	}
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		return errors.Join(err, lc.Stop())
	}
	stop := func() error {
		slog.Info("shutting down")
		err := lc.Stop()
		srv.Stop()
		return errors.Join(err, srv.Wait())
	}
	rc, err := clientConfig(srv.Kubeconfig, "rudder-up")
	if err != nil {
		return errors.Join(err, stop())
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return errors.Join(err, stop())
	}
	token, err := createBootstrapToken(ctx, client, time.Hour, "rudder up --nodes: the local nodes join with it", []string{auth.BootstrapDefaultNodeGroup}, time.Now())
	if err != nil {
		return errors.Join(fmt.Errorf("bootstrap token: %w", err), stop())
	}
	if err := lc.StartNodes(ctx, localcluster.Join{Token: token, CAPEM: srv.PKI.CAPEM}); err != nil {
		return errors.Join(err, stop())
	}
	go logWhenReady(ctx, client, lc, began, srv.Kubeconfig)
	go followPodRoutes(ctx, client, lc)
	<-ctx.Done()
	// The token bought the nodes their certificates; it is not left
	// valid behind the cluster.
	dctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	if _, err := deleteBootstrapToken(dctx, client, token); err != nil {
		slog.Debug("deleting the nodes' bootstrap token", "err", err)
	}
	cancel()
	return stop()
}

// logWhenReady logs once every node is Ready, with how long it took.
func logWhenReady(ctx context.Context, client kubernetes.Interface, lc *localcluster.Cluster, began time.Time, kubeconfig string) {
	want := map[string]string{}
	for _, n := range lc.Nodes() {
		want[n.Name] = n.IP.String()
	}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			continue
		}
		ready := 0
		for _, n := range nodes.Items {
			if _, ours := want[n.Name]; ours && nodeReady(&n) {
				ready++
			}
		}
		if ready == len(want) {
			slog.Info("cluster up", "nodes", strconv.Itoa(ready)+" Ready", "took", time.Since(began).Round(time.Millisecond), "kubeconfig", kubeconfig)
			return
		}
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// followPodRoutes keeps the hub's routes to the nodes' pod CIDRs in step
// with the Node objects, so that the API server (which dials pods from
// the hub for pods/proxy and services/proxy) reaches every pod.
func followPodRoutes(ctx context.Context, client kubernetes.Interface, lc *localcluster.Cluster) {
	var last string
	for {
		if nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); err == nil {
			routes := map[netip.Prefix]netip.Addr{}
			for _, n := range nodes.Items {
				var via netip.Addr
				for _, a := range n.Status.Addresses {
					if a.Type == corev1.NodeInternalIP {
						via, _ = netip.ParseAddr(a.Address)
					}
				}
				for _, c := range n.Spec.PodCIDRs {
					if p, err := netip.ParsePrefix(c); err == nil && via.IsValid() && p.Addr().Is4() == via.Is4() {
						routes[p.Masked()] = via
					}
				}
			}
			if key := fmt.Sprint(routes); key != last {
				if err := lc.SetPodRoutes(routes); err != nil {
					slog.Warn("routes from the API server to the pods", "err", err)
				} else {
					last = key
				}
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(2 * time.Second):
		}
	}
}
