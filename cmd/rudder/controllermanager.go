package main

import (
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controllers"
)

func controllerManagerCommand() *cobra.Command {
	var (
		kubeconfig  string
		selection   []string
		leaderElect bool
		rootCAFile  string
		signingCert string
		signingKey  string
		allocCIDRs  bool
		clusterCIDR string
		maskV4      int
		maskV6      int
	)
	cmd := &cobra.Command{
		Use:   "controller-manager",
		Short: "Run the controllers against any Kubernetes API server",
		Long: `Run rudder's controllers as a drop-in replacement for kube-controller-manager:
deployments, replica sets, garbage collection, namespace deletion, service
accounts and the rest, each reconciling through the API server.

  rudder controller-manager --kubeconfig K [--controllers '*,-podgc'] [--leader-elect]`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := clientConfig(kubeconfig, controller.ManagerUserAgent)
			if err != nil {
				return err
			}
			ca := rc.TLSClientConfig.CAData
			if rootCAFile != "" {
				if ca, err = os.ReadFile(rootCAFile); err != nil {
					return err
				}
			} else if len(ca) == 0 && rc.TLSClientConfig.CAFile != "" {
				if ca, err = os.ReadFile(rc.TLSClientConfig.CAFile); err != nil {
					return err
				}
			}
			cfg := controllers.Config{CAPEM: ca, NodeCIDRMaskSizeIPv4: maskV4, NodeCIDRMaskSizeIPv6: maskV6}
			if allocCIDRs {
				if clusterCIDR == "" {
					return errors.New("--allocate-node-cidrs needs --cluster-cidr")
				}
				cfg.ClusterCIDRs = strings.Split(clusterCIDR, ",")
			}
			if signingKey != "" {
				if signingCert == "" {
					return errors.New("--cluster-signing-key-file needs --cluster-signing-cert-file")
				}
				if cfg.CAPEM, err = os.ReadFile(signingCert); err != nil {
					return err
				}
				if cfg.CAKeyPEM, err = os.ReadFile(signingKey); err != nil {
					return err
				}
			}
			return controller.RunManager(cmd.Context(), controller.ManagerConfig{
				RestConfig:  rc,
				Controllers: selection,
				Descriptors: controllers.Descriptors(cfg),
				LeaderElect: leaderElect,
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "cluster to manage (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringSliceVar(&selection, "controllers", []string{"*"}, `controllers to run: "*" for the defaults, "name" to add one, "-name" to drop one`)
	f.BoolVar(&leaderElect, "leader-elect", false, "hold the kube-system/kube-controller-manager Lease while running, so that only one of several replicas acts")
	f.StringVar(&signingCert, "cluster-signing-cert-file", "", "CA certificate that signs approved certificate signing requests")
	f.StringVar(&signingKey, "cluster-signing-key-file", "", "key of --cluster-signing-cert-file; without it no CSR is signed")
	f.StringVar(&rootCAFile, "root-ca-file", "", "CA published to every namespace as kube-root-ca.crt (default: the kubeconfig's CA)")
	f.BoolVar(&allocCIDRs, "allocate-node-cidrs", false, "give every node a pod CIDR from --cluster-cidr (the node-ipam-controller)")
	f.StringVar(&clusterCIDR, "cluster-cidr", "", "the pod network nodes' pod CIDRs are cut from; an IPv4,IPv6 pair for dual-stack")
	f.IntVar(&maskV4, "node-cidr-mask-size-ipv4", 24, "size of each node's IPv4 pod CIDR")
	f.IntVar(&maskV6, "node-cidr-mask-size-ipv6", 64, "size of each node's IPv6 pod CIDR")
	return cmd
}
