package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/agent"
	"github.com/rudder-dev/rudder/internal/server"
)

// upCommand runs the one-command cluster: the control plane and a real
// node agent in one process.
func upCommand() *cobra.Command {
	var sf serverFlags
	var af agentFlags
	var nf nodesFlags
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a cluster on this machine: the control plane and real nodes running containers",
		Long: `Run the control plane and, in the same process, a node agent whose pods
run as real containers (runc, overlayfs, cgroups). Needs root.

  rudder up --data-dir /var/lib/rudder
  export KUBECONFIG=/var/lib/rudder/admin.kubeconfig
  rudder images import busybox.tar
  kubectl run hello --image=busybox --restart=Never -- sh -c 'echo hi; sleep 3600'

With --nodes N, N real nodes instead (a kind-like cluster without
Docker): each node is a "rudder agent" process in its own network
namespace, data directory (<data-dir>/nodes/node-N) and cgroup, wired to
a private bridge (--node-subnet, 172.30.0.0/24: the API server at .1,
node-N at .(1+N)) that has no route to the host's network. kubectl keeps
using the host's address (admin.kubeconfig). Stopping removes the
namespaces, mounts, cgroups and the pods' containers; the next start
runs the pods again. Images go to every node:

  rudder up --nodes 3 --data-dir /var/lib/rudder
  rudder images busybox --data-dir /var/lib/rudder    # into each node
  kubectl get nodes -o wide

Without root, run "rudder server --simulated-nodes 3" instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := sf.config()
			if cmd.Flags().Changed("nodes") {
				return upNodes(cmd, cfg, nf)
			}
			acfg, err := af.config(cfg.DataDir)
			if err != nil {
				return err
			}
			acfg.ClusterCIDRs = server.ClusterCIDRs(cfg)
			// Refuse a host that cannot run containers before the
			// control plane starts.
			if err := agent.Preflight(acfg); err != nil {
				return err
			}
			srv, err := server.Start(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			acfg.Credentials, err = agent.LocalCredentials(srv.PKI, acfg.Dir, srv.URL, acfg.NodeName, acfg.NodeIP)
			if err != nil {
				srv.Stop()
				return err
			}
			a, err := agent.Start(cmd.Context(), acfg)
			if err != nil {
				srv.Stop()
				return err
			}
			slog.Info("cluster up", "node", acfg.NodeName, "kubeconfig", srv.Kubeconfig, "cri", acfg.RuntimeSocket)
			<-cmd.Context().Done()
			slog.Info("shutting down")
			a.Stop()
			srv.Stop()
			return srv.Wait()
		},
	}
	sf.register(cmd)
	af.register(cmd)
	nf.register(cmd)
	return cmd
}

// agentFlags are the node agent's flags, shared by `rudder up` and
// `rudder agent`.
type agentFlags struct {
	nodeName, nodeIP, runtimeEndpoint, ociRuntime, podLogsDir, cgroupRoot string
	network, cniConfDir                                                   string
	dnsAddr, clusterDNS, clusterDomain                                    string
	dnsUpstreams                                                          []string
	proxyNetNS                                                            string
	nodePortAddresses                                                     []string
	proxy, networkPolicy                                                  bool
	kubeletPort                                                           int
}

func (af *agentFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&af.nodeName, "node-name", "", "the node's name (default: the host name)")
	f.StringVar(&af.nodeIP, "node-ip", "127.0.0.1", "the node's InternalIP, where its kubelet API listens")
	f.StringVar(&af.runtimeEndpoint, "container-runtime-endpoint", "",
		"a CRI runtime to use instead of rudder's own, e.g. unix:///run/containerd/containerd.sock (default: rudder's runtime at <data-dir>/cri.sock)")
	f.StringVar(&af.ociRuntime, "oci-runtime", "runc", "the OCI runtime rudder's runtime starts containers with")
	f.StringVar(&af.podLogsDir, "pod-logs-dir", "/var/log/pods", "where container logs are written, one directory per pod")
	f.IntVar(&af.kubeletPort, "kubelet-port", 10250, "the kubelet API's port (0 picks a free one)")
	f.StringVar(&af.cgroupRoot, "cgroup-root", "", "the cgroup pods nest under, as <root>/kubepods/... (default: the agent's own cgroup)")
	f.StringVar(&af.network, "network", agent.NetworkBridge, `pod network: "bridge" (built-in bridge, IPAM, routes between nodes and masquerade; a CNI configuration in --cni-conf-dir replaces it), "cni" (a CNI configuration, required) or "none" (pods get loopback only)`)
	f.StringVar(&af.cniConfDir, "cni-conf-dir", "/etc/cni/net.d", "where CNI configurations are looked for (plugins from /opt/cni/bin and /usr/lib/cni)")
	f.StringVar(&af.dnsAddr, "dns-addr", agent.DNSAuto, `run the cluster DNS server on this address, UDP and TCP, listed in the kube-dns Service's endpoints; "auto": <node-ip>:53 when the node has a pod network; "" or "off": none`)
	f.StringSliceVar(&af.dnsUpstreams, "dns-upstream", nil, "resolvers the cluster DNS forwards other names to, ip[:port] (default: the host's /etc/resolv.conf)")
	f.StringVar(&af.clusterDNS, "cluster-dns", agent.DefaultClusterDNS, "the nameserver of pods with dnsPolicy ClusterFirst (the kube-dns Service)")
	f.StringVar(&af.clusterDomain, "cluster-domain", "cluster.local", "the cluster's DNS domain")
	f.BoolVar(&af.proxy, "proxy", true, `run the service proxy (nftables rules for Services, in the node's network namespace); off with --network=none`)
	f.BoolVar(&af.networkPolicy, "network-policy", true, `enforce NetworkPolicies (nftables table "rudder-policy" beside the proxy's); runs whenever the proxy does`)
	f.StringVar(&af.proxyNetNS, "proxy-netns", "", "the network namespace file the proxy's rules go in (default: the agent's own)")
	f.StringSliceVar(&af.nodePortAddresses, "nodeport-addresses", nil, "prefixes of the node addresses NodePorts answer on (default: the node IP)")
}

func (af *agentFlags) config(dataDir string) (agent.Config, error) {
	name := af.nodeName
	if name == "" {
		h, err := os.Hostname()
		if err != nil {
			return agent.Config{}, fmt.Errorf("--node-name: %w", err)
		}
		name = strings.ToLower(h)
	}
	ip := net.ParseIP(af.nodeIP)
	if ip == nil {
		return agent.Config{}, fmt.Errorf("--node-ip %q is not an IP address", af.nodeIP)
	}
	clusterDNS := net.ParseIP(af.clusterDNS)
	if clusterDNS == nil {
		return agent.Config{}, fmt.Errorf("--cluster-dns %q is not an IP address", af.clusterDNS)
	}
	px := agent.Proxy{Enabled: af.proxy && af.network != agent.NetworkNone, NetNSPath: af.proxyNetNS}
	dnsAddr := af.dnsAddr
	if dnsAddr == "off" {
		dnsAddr = ""
	}
	for _, s := range af.nodePortAddresses {
		pf, err := netip.ParsePrefix(s)
		if err != nil {
			return agent.Config{}, fmt.Errorf("--nodeport-addresses %q: %w", s, err)
		}
		px.NodePortAddresses = append(px.NodePortAddresses, pf.Masked())
	}
	return agent.Config{
		Proxy:           px,
		NetworkPolicy:   agent.NetworkPolicy{Disabled: !af.networkPolicy},
		NodeName:        name,
		NodeIP:          ip,
		Dir:             filepath.Join(dataDir, "agent"),
		RuntimeSocket:   filepath.Join(dataDir, "cri.sock"),
		RuntimeEndpoint: af.runtimeEndpoint,
		OCIRuntime:      af.ociRuntime,
		PodLogsDir:      af.podLogsDir,
		KubeletPort:     af.kubeletPort,
		CgroupRoot:      af.cgroupRoot,
		Network:         af.network,
		CNIConfDir:      af.cniConfDir,
		DNSAddr:         dnsAddr,
		DNSUpstreams:    af.dnsUpstreams,
		ClusterDNS:      clusterDNS,
		ClusterDomain:   af.clusterDomain,
	}, nil
}
