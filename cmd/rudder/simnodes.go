package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/pki"
	"github.com/rudder-dev/rudder/internal/simnode"
)

func simnodesCommand() *cobra.Command {
	var (
		kubeconfig  string
		cfg         simnode.Config
		capacity    map[string]string
		labels      map[string]string
		taints      []string
		kubeletAPI  bool
		kubeletCA   string
		kubeletPort int
	)
	cmd := &cobra.Command{
		Use:   "simnodes",
		Short: "Run simulated nodes against any Kubernetes API server",
		Long: `Run simulated nodes: each registers a Node, renews its Lease, posts status
and moves the pods bound to it to Running (or, for Job pods, to Succeeded or
Failed) without running anything. They are plain API clients, so any
Kubernetes API server will do.

  rudder simnodes --kubeconfig K --count 500 --prefix sim- --zones 3

Stop a node as if its machine died, and start it again:

  kubectl annotate node sim-3 simnode.rudder.dev/stopped=true
  kubectl annotate node sim-3 simnode.rudder.dev/stopped-

Pick how a Job pod ends with annotations on the pod:
simnode.rudder.dev/run-duration=30s, simnode.rudder.dev/exit-code=1.

With --kubelet-api the nodes also serve the kubelet API (for kubectl top and
kubectl logs through the API server) on loopback addresses 127.1.0.1,
127.1.0.2, ...; --kubelet-ca-dir names the cluster's CA (ca.crt and ca.key,
such as rudder's <data-dir>/pki), which issues their certificate and which
they trust for clients. Set a pod's usage with simnode.rudder.dev/cpu-usage
and simnode.rudder.dev/memory-usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := clientConfig(kubeconfig, "rudder-simnodes")
			if err != nil {
				return err
			}
			if cfg.Client, err = kubernetes.NewForConfig(rc); err != nil {
				return err
			}
			if cfg.Capacity, err = parseResources(capacity); err != nil {
				return err
			}
			for _, s := range taints {
				t, err := parseTaint(s)
				if err != nil {
					return err
				}
				cfg.Taints = append(cfg.Taints, t)
			}
			cfg.Labels = labels
			if kubeletAPI {
				if cfg.KubeletAPI, err = simnodesKubeletAPI(kubeletCA); err != nil {
					return err
				}
				cfg.KubeletAPI.Port = kubeletPort
				if !cmd.Flags().Changed("node-ip-range") {
					cfg.NodeIPRange = "" // loopback addresses, 127.1.0.1 up
				}
			}
			return simnode.Run(cmd.Context(), cfg)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "cluster to join (default: $KUBECONFIG, then ~/.kube/config)")
	f.IntVar(&cfg.Count, "count", 1, "number of nodes")
	f.StringVar(&cfg.Prefix, "prefix", "sim-", "node name prefix; nodes are <prefix>0, <prefix>1, ...")
	f.IntVar(&cfg.Zones, "zones", 1, "spread the nodes over this many zones (zone-0, zone-1, ...)")
	f.StringVar(&cfg.Region, "region", "sim-region", "topology.kubernetes.io/region of every node")
	f.StringVar(&cfg.InstanceType, "instance-type", "sim.large", "node.kubernetes.io/instance-type of every node")
	f.StringToStringVar(&capacity, "capacity", nil, "node capacity, e.g. cpu=8,memory=32Gi,nvidia.com/gpu=4; standard entries left out are cpu=32, memory=256Gi, pods=110, ephemeral-storage=100Gi")
	f.StringToStringVar(&labels, "labels", nil, "extra node labels, e.g. pool=a,tier=web")
	f.StringArrayVar(&taints, "taint", nil, "node taint key[=value]:Effect (repeatable)")
	f.StringVar(&cfg.ClusterCIDR, "cluster-cidr", "10.128.0.0/9", "range the nodes' podCIDRs are carved from (stored only, never routed)")
	f.StringVar(&cfg.NodeIPRange, "node-ip-range", "198.18.0.0/15", "range the nodes' InternalIPs come from (stored only, never routed)")
	f.DurationVar(&cfg.PodStartDelay, "pod-start-delay", 0, "time from a pod's binding to Running (default 1s)")
	f.DurationVar(&cfg.PodStopDelay, "pod-stop-delay", 0, "time a deleted pod takes to stop, at most its grace period (default 500ms)")
	f.DurationVar(&cfg.JobDuration, "job-duration", 0, "how long restartPolicy Never/OnFailure pods run (default 5s)")
	f.DurationVar(&cfg.LeaseDuration, "lease-duration", 0, "node lease duration; renewed every quarter of it (default 40s)")
	f.IntVar(&cfg.NodeWorkers, "node-workers", 0, "concurrent lease and status writes (default one per 100 nodes, 8 to 64)")
	f.IntVar(&cfg.PodWorkers, "pod-workers", 0, "concurrent pod writes (default one per 16 nodes, 16 to 64)")
	f.Int64Var(&cfg.Seed, "seed", 1, "seed for the spread of renewals and generated IDs")
	f.BoolVar(&kubeletAPI, "kubelet-api", false, "serve the kubelet API (metrics for kubectl top, logs) on loopback addresses 127.1.x.y; needs --kubelet-ca-dir")
	f.StringVar(&kubeletCA, "kubelet-ca-dir", "", "directory with the cluster CA's ca.crt and ca.key (rudder's <data-dir>/pki), read only")
	f.IntVar(&kubeletPort, "kubelet-port", 0, "port the kubelet API listens on at every node's address (0 picks a free one)")
	return cmd
}

func parseResources(in map[string]string) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for name, v := range in {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, fmt.Errorf("--capacity %s=%s: %w", name, v, err)
		}
		out[corev1.ResourceName(name)] = q
	}
	return out, nil
}

// parseTaint reads kubectl taint's syntax: key[=value]:Effect.
func parseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("--taint %q: want key[=value]:Effect", s)
	}
	key, value, _ := strings.Cut(kv, "=")
	t := corev1.Taint{Key: key, Value: value, Effect: corev1.TaintEffect(effect)}
	switch t.Effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return t, fmt.Errorf("--taint %q: effect must be NoSchedule, PreferNoSchedule or NoExecute", s)
	}
	if key == "" {
		return t, fmt.Errorf("--taint %q: empty key", s)
	}
	return t, nil
}

// simnodesKubeletAPI issues the nodes' serving certificate from the CA in
// dir and trusts that CA for clients (the API server's kubelet client).
func simnodesKubeletAPI(dir string) (*simnode.KubeletAPI, error) {
	if dir == "" {
		return nil, fmt.Errorf("--kubelet-api needs --kubelet-ca-dir")
	}
	ca, err := pki.LoadCA(dir)
	if err != nil {
		return nil, err
	}
	cert, err := ca.IssueServingCert(pki.SimNodeServingCommonName, nil, nil, 365*24*time.Hour)
	if err != nil {
		return nil, err
	}
	return &simnode.KubeletAPI{ServingCert: cert, ClientCAs: ca.CAPool}, nil
}
