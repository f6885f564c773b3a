package main

import (
	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/dns"
)

func dnsCommand() *cobra.Command {
	var (
		kubeconfig string
		cfg        dns.Config
	)
	cmd := &cobra.Command{
		Use:   "dns",
		Short: "Run the cluster DNS server against any Kubernetes API server",
		Long: `Run rudder's cluster DNS (what CoreDNS with its kubernetes plugin does):
the cluster zone from Services, EndpointSlices and Namespaces, PTR for
their addresses, other names forwarded to --upstream (default: the
resolvers of /etc/resolv.conf). Agents run it in-process with --dns-addr;
this runs it alone.

  rudder dns --kubeconfig K --addr 127.0.0.1:5353`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := clientConfig(kubeconfig, "rudder-dns")
			if err != nil {
				return err
			}
			if cfg.Client, err = kubernetes.NewForConfig(rc); err != nil {
				return err
			}
			s, err := dns.New(cfg)
			if err != nil {
				return err
			}
			return s.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "kubeconfig of the API server (default: in-cluster, then ~/.kube/config)")
	f.StringSliceVar(&cfg.Addrs, "addr", []string{"127.0.0.1:53"}, "addresses to serve on, UDP and TCP")
	f.StringSliceVar(&cfg.Upstreams, "upstream", nil, "resolvers other names go to, ip[:port]")
	f.StringVar(&cfg.ClusterDomain, "cluster-domain", "cluster.local", "the cluster zone")
	f.Uint32Var(&cfg.TTL, "ttl", 5, "records' TTL and the negative-caching TTL")
	return cmd
}
