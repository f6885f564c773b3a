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
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a one-node cluster: the control plane and a node agent running real containers",
		Long: `Run the control plane and, in the same process, a node agent whose pods
run as real containers (runc, overlayfs, cgroups). Needs root.

  rudder up --data-dir /var/lib/rudder
  export KUBECONFIG=/var/lib/rudder/admin.kubeconfig
  rudder images import busybox.tar
  kubectl run hello --image=busybox --restart=Never -- sh -c 'echo hi; sleep 3600'

Without root, run "rudder server --simulated-nodes 3" instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg := sf.config()
			acfg, err := af.config(cfg.DataDir)
			if err != nil {
				return err
			}
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
	return cmd
}

// agentFlags are the node agent's flags, shared by `rudder up` and
// `rudder agent`.
type agentFlags struct {
	nodeName, nodeIP, runtimeEndpoint, ociRuntime, podLogsDir string
	kubeletPort                                               int
	proxy                                                     bool
	proxyNetNS, clusterCIDR                                   string
	nodePortAddresses                                         []string
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
	f.BoolVar(&af.proxy, "proxy", false, "run the service proxy (nftables rules for Services) in the node's network namespace; off while the node shares the host's")
	f.StringVar(&af.proxyNetNS, "proxy-netns", "", "the network namespace file the proxy's rules go in (default: the agent's own)")
	f.StringVar(&af.clusterCIDR, "cluster-cidr", "10.42.0.0/16", "the pods' address range (the proxy masquerades traffic from outside it)")
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
	px := agent.Proxy{Enabled: af.proxy, NetNSPath: af.proxyNetNS}
	if af.clusterCIDR != "" {
		pf, err := netip.ParsePrefix(af.clusterCIDR)
		if err != nil || !pf.Addr().Is4() {
			return agent.Config{}, fmt.Errorf("--cluster-cidr %q is not an IPv4 prefix", af.clusterCIDR)
		}
		px.ClusterCIDR = pf.Masked()
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
		NodeName:        name,
		NodeIP:          ip,
		Dir:             filepath.Join(dataDir, "agent"),
		RuntimeSocket:   filepath.Join(dataDir, "cri.sock"),
		RuntimeEndpoint: af.runtimeEndpoint,
		OCIRuntime:      af.ociRuntime,
		PodLogsDir:      af.podLogsDir,
		KubeletPort:     af.kubeletPort,
	}, nil
}
