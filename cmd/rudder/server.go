package main

import (
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/admission"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/server"
)

func serverCommand() *cobra.Command {
	var sf serverFlags
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run the control plane: embedded etcd and the API server",
		Long: `Run the control plane. On first start it creates a CA, serving and admin
certificates and <data-dir>/admin.kubeconfig; later starts reuse them.

  rudder server --data-dir /tmp/r
  export KUBECONFIG=/tmp/r/admin.kubeconfig
  kubectl get ns`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			srv, err := server.Start(cmd.Context(), sf.config())
			if err != nil {
				return err
			}
			<-cmd.Context().Done()
			slog.Info("shutting down")
			srv.Stop()
			return srv.Wait()
		},
	}
	sf.register(cmd)
	return cmd
}

// serverFlags are the control plane's flags, shared by `rudder server`
// and `rudder up`.
type serverFlags struct {
	cfg                                 server.Config
	notReadySeconds, unreachableSeconds int64
	simKubelet                          bool
}

func (sf *serverFlags) config() server.Config {
	cfg := sf.cfg
	cfg.DefaultNotReadyTolerationSeconds = &sf.notReadySeconds
	cfg.DefaultUnreachableTolerationSeconds = &sf.unreachableSeconds
	cfg.SimulatedNodesNoKubeletAPI = !sf.simKubelet
	return cfg
}

func (sf *serverFlags) register(cmd *cobra.Command) {
	cfg := &sf.cfg
	f := cmd.Flags()
	f.StringVar(&cfg.DataDir, "data-dir", "/var/lib/rudder", "directory for etcd data, certificates and admin.kubeconfig")
	f.StringSliceVar(&cfg.EtcdServers, "etcd-servers", nil, "external etcd endpoints (default: embedded etcd in <data-dir>/etcd)")
	f.StringVar(&cfg.BindAddress, "bind-address", "127.0.0.1", "address to serve the API on")
	f.StringVar(&cfg.AdvertiseAddress, "advertise-address", "", "IP the kubernetes Service's endpoints name (default: the bind address, or the host's first address when bound to all; none on loopback)")
	f.IntVar(&cfg.HTTPSPort, "https-port", 6443, "port to serve the API on (0 picks a free port)")
	f.StringSliceVar(&cfg.TLSSANs, "tls-san", nil, "extra names or IPs for the serving certificate")
	f.StringVar(&cfg.TokenAuthFile, "token-auth-file", "", "static bearer tokens, CSV: token,user,uid,\"group1,group2\"")
	f.BoolVar(&cfg.AnonymousAuth, "anonymous-auth", false, "let requests without credentials in as system:anonymous")
	f.StringArrayVar(&cfg.ServiceAccountIssuers, "service-account-issuer", []string{auth.DefaultServiceAccountIssuer},
		"issuer (\"iss\") of service-account tokens; repeat to accept tokens of former issuers, the first is the one new tokens name")
	f.StringSliceVar(&cfg.APIAudiences, "api-audiences", nil, "audiences the API accepts tokens for (default: the first --service-account-issuer)")
	f.DurationVar(&cfg.CompactionInterval, "etcd-compaction-interval", 5*time.Minute, "how often etcd history is compacted")
	f.StringVar(&cfg.ServiceCIDR, "service-cluster-ip-range", "10.96.0.0/12", "CIDR from which services get cluster IPs")
	f.StringVar(&cfg.ClusterCIDR, "cluster-cidr", server.DefaultClusterCIDR, "the pod network: each node gets a /24 (IPv6: /64) of it as spec.podCIDR; an IPv4,IPv6 pair for dual-stack")
	f.StringVar(&cfg.NodePortRange, "service-node-port-range", "30000-32767", "port range for NodePort services")
	f.IntVar(&cfg.WatchCacheCapacity, "watch-cache-size", 10000, "events kept per resource for resuming watches")
	f.BoolVar(&cfg.Profiling, "profiling", true, "serve Go profiles under /debug/pprof/ (authorized like any non-resource URL)")
	f.IntVar(&cfg.SimulatedNodes, "simulated-nodes", 0, "run this many simulated nodes (sim-0, sim-1, ...) in-process, as API clients")
	f.BoolVar(&sf.simKubelet, "simulated-nodes-kubelet-api", true, "simulated nodes serve the kubelet API (kubectl top, kubectl logs) on loopback addresses 127.1.x.y")
	f.DurationVar(&cfg.NodeMonitorGracePeriod, "node-monitor-grace-period", 50*time.Second, "how long a node may go without renewing its lease before it is marked NotReady and tainted")
	f.BoolVar(&cfg.DisableScheduler, "disable-scheduler", false, "do not run the in-process scheduler (to run another one against this API server)")
	f.StringSliceVar(&cfg.Controllers, "controllers", []string{"*"}, "in-process controllers, as kube-controller-manager's --controllers: \"*\" runs the defaults, \"name\" adds one, \"-name\" drops one, \"-*\" runs none")
	f.StringSliceVar(&cfg.EnableAdmissionPlugins, "enable-admission-plugins", nil,
		"admission plugins to enable besides the default ones ("+strings.Join(admission.DefaultPlugins(), ", ")+
			"); all known: "+strings.Join(admission.AllPlugins(), ", ")+". They run in that order whatever the order given. "+
			"Accepted for kube-apiserver compatibility but not implemented (skipped with a warning): "+strings.Join(admission.NotImplemented(), ", ")+
			". ServiceAccount, TaintNodesByCondition and DefaultTolerationSeconds are on only "+
			"with their controllers (serviceaccount, nodelifecycle, taint-eviction-controller) unless named here")
	f.StringSliceVar(&cfg.DisableAdmissionPlugins, "disable-admission-plugins", nil, "admission plugins to disable, even if on by default")
	f.Int64Var(&sf.notReadySeconds, "default-not-ready-toleration-seconds", 300,
		"tolerationSeconds of the toleration for node.kubernetes.io/not-ready:NoExecute added to every pod without one")
	f.Int64Var(&sf.unreachableSeconds, "default-unreachable-toleration-seconds", 300,
		"tolerationSeconds of the toleration for node.kubernetes.io/unreachable:NoExecute added to every pod without one")
}
