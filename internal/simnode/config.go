package simnode

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Labels and annotations the fleet reads or writes.
const (
	// LabelSimulated marks every Node a fleet registers; the fleet's node
	// watch selects on it. Select or tolerate on it to aim workloads at (or
	// away from) simulated nodes.
	LabelSimulated = "simnode.rudder.dev/simulated"
	// AnnotationStopped set to "true" on a Node stops that node: no more
	// lease renewals or status posts, as if its machine died. Removing it
	// (or setting anything else) starts the node again.
	AnnotationStopped = "simnode.rudder.dev/stopped"
	// AnnotationRunDuration on a pod with restartPolicy Never or OnFailure
	// is how long its containers run (a Go duration such as "30s"), in
	// place of Config.JobDuration. Such a pod runs to completion only when
	// a Job controls it or it carries this annotation or
	// AnnotationExitCode: any other pod's containers run until deleted,
	// as a server's would.
	AnnotationRunDuration = "simnode.rudder.dev/run-duration"
	// AnnotationExitCode on such a pod is the exit code its containers end
	// with (default 0). Non-zero fails the pod (Never) or crash-loops the
	// containers (OnFailure), as a kubelet would.
	AnnotationExitCode = "simnode.rudder.dev/exit-code"
	// AnnotationImagePullError on a pod makes its images fail to pull:
	// the containers wait in ErrImagePull, then ImagePullBackOff, and the
	// pod stays Pending. Images whose reference contains "invalid",
	// "nonexistent", "non-existent" or "doesnotexist" fail the same way
	// without it (the names upstream's e2e tests use for images that
	// cannot exist); the annotation's value, if any, is the message.
	AnnotationImagePullError = "simnode.rudder.dev/image-pull-error"
	// AnnotationReady set to "false" on a pod is a readiness probe that
	// fails: its containers run but are not ready, and so neither is the
	// pod, until the annotation is removed or set to anything else. This,
	// not a write of the pod's status, is how to make a pod unready: the
	// node writes back the status it runs, as a kubelet does.
	AnnotationReady = "simnode.rudder.dev/ready"
)

// KubeletVersion is what simulated nodes report in nodeInfo: the API
// version they mimic, marked so nobody mistakes them for a real kubelet.
const KubeletVersion = "v1.36.3-simnode"

// Config describes a fleet of simulated nodes. New fills the zero fields
// with the defaults given on each.
type Config struct {
	// Client talks to the API server; the fleet uses nothing else. Give it
	// no client-side rate limit: thousands of nodes share it.
	Client kubernetes.Interface
	// Count is the number of nodes (required, > 0), named Prefix0..Prefix(Count-1).
	Count int
	// Prefix starts every node name ("sim-").
	Prefix string
	// Zones spreads the nodes round-robin over zone-0..zone-(Zones-1) in
	// topology.kubernetes.io/zone (1).
	Zones int
	// Region is topology.kubernetes.io/region ("sim-region"); InstanceType
	// is node.kubernetes.io/instance-type ("sim.large").
	Region       string
	InstanceType string
	// Labels are added to every node's labels; they may override the
	// standard ones, all but LabelSimulated.
	Labels map[string]string
	// Taints are registered with every node (none).
	Taints []corev1.Taint

	// Capacity of each node: cpu, memory, pods, ephemeral-storage and any
	// extended resources. Missing standard entries get cpu=32,
	// memory=256Gi, pods=110, ephemeral-storage=100Gi (kwok's defaults,
	// big enough that pod counts, not resources, limit density).
	Capacity corev1.ResourceList
	// Allocatable defaults to Capacity; entries missing from it are copied
	// from Capacity.
	Allocatable corev1.ResourceList
	// Images are listed in every node's status (the pause image).
	Images []corev1.ContainerImage

	// ClusterCIDR is carved into one PodCIDR per node ("10.128.0.0/9",
	// room for 32,768 /24s and clear of the default service range), of
	// NodeCIDRMaskSize bits (24). A node that already has a podCIDR keeps
	// it. Addresses are only stored in the API, never routed.
	ClusterCIDR      string
	NodeCIDRMaskSize int
	// NodeIPRange gives node i its InternalIP, the (i+1)th address
	// ("198.18.0.0/15", the benchmarking range of RFC 2544).
	NodeIPRange string

	// LeaseDuration is the lease's leaseDurationSeconds (40 s) and
	// LeaseRenewInterval how often it is renewed (a quarter of it, 10 s),
	// each renewal 0-4% late as in upstream's lease controller.
	LeaseDuration      time.Duration
	LeaseRenewInterval time.Duration
	// StatusUpdateFrequency is how often a node compares its status with
	// what the API holds (10 s); it posts only on a difference or when
	// StatusReportFrequency (5 min) has passed since its last post — the
	// kubelet's nodeStatusUpdateFrequency and nodeStatusReportFrequency.
	StatusUpdateFrequency time.Duration
	StatusReportFrequency time.Duration

	// PodStartDelay is the time from a pod's arrival on a node to its
	// Running status (1 s, about a real kubelet with cached images).
	PodStartDelay time.Duration
	// PodStopDelay is how long a deleted pod takes to stop before the node
	// confirms its deletion (500 ms), never more than its grace period.
	PodStopDelay time.Duration
	// JobDuration is how long containers of Job pods (restartPolicy
	// Never/OnFailure) run before they exit (5 s), unless annotated.
	JobDuration time.Duration
	// RestartBackoff is the first crash-loop back-off (10 s), doubling per
	// restart up to 5 min as in the kubelet.
	RestartBackoff time.Duration

	// NodeWorkers and PodWorkers are how many API writes for nodes (leases,
	// status, registration) and for pods run at once (one per 100 nodes, 8
	// to 64; one per 16 nodes, 16 to 64). Nodes have their own workers so a
	// burst of pods never delays a lease renewal.
	NodeWorkers int
	PodWorkers  int

	// Clock drives every timer (the real clock).
	Clock clock.WithTicker
	// Seed makes the spread of renewals and the generated IDs repeatable (1).
	Seed int64
	// Logger gets the fleet's logs (slog.Default()).
	Logger *slog.Logger

	// KubeletAPI, when set, makes every node serve the kubelet API
	// (metrics for kubectl top, logs) on its own loopback address; see
	// kubeletapi.go. Without it nodes advertise kubelet port 0.
	KubeletAPI *KubeletAPI
	// kubeletPort is the port nodes advertise, set when they listen.
	kubeletPort int32
}

// Defaults of the standard capacity entries.
var defaultCapacity = corev1.ResourceList{
	corev1.ResourceCPU:              resource.MustParse("32"),
	corev1.ResourceMemory:           resource.MustParse("256Gi"),
	corev1.ResourcePods:             resource.MustParse("110"),
	corev1.ResourceEphemeralStorage: resource.MustParse("100Gi"),
}

var defaultImages = []corev1.ContainerImage{{
	Names:     []string{"registry.k8s.io/pause:3.10.1"},
	SizeBytes: 320000,
}}

// withDefaults returns cfg with every zero field filled, or an error for
// settings that cannot work.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.Client == nil {
		return cfg, errors.New("simnode: a client is required")
	}
	if cfg.Count <= 0 {
		return cfg, fmt.Errorf("simnode: count must be positive, got %d", cfg.Count)
	}
	setDefault(&cfg.Prefix, "sim-")
	setDefault(&cfg.Zones, 1)
	setDefault(&cfg.Region, "sim-region")
	setDefault(&cfg.InstanceType, "sim.large")
	cfg.Capacity = fillResources(cfg.Capacity, defaultCapacity)
	cfg.Allocatable = fillResources(cfg.Allocatable, cfg.Capacity)
	if cfg.Images == nil {
		cfg.Images = defaultImages
	}
	setDefault(&cfg.ClusterCIDR, "10.128.0.0/9")
	setDefault(&cfg.NodeCIDRMaskSize, 24)
	if err := cfg.kubeletDefaults(); err != nil {
		return cfg, err
	}
	setDefault(&cfg.NodeIPRange, "198.18.0.0/15")
	setDefault(&cfg.LeaseDuration, 40*time.Second)
	setDefault(&cfg.LeaseRenewInterval, cfg.LeaseDuration/4)
	setDefault(&cfg.StatusUpdateFrequency, 10*time.Second)
	setDefault(&cfg.StatusReportFrequency, 5*time.Minute)
	setDefault(&cfg.PodStartDelay, time.Second)
	setDefault(&cfg.PodStopDelay, 500*time.Millisecond)
	setDefault(&cfg.JobDuration, 5*time.Second)
	setDefault(&cfg.RestartBackoff, 10*time.Second)
	setDefault(&cfg.NodeWorkers, defaultNodeWorkers(cfg.Count))
	setDefault(&cfg.PodWorkers, defaultPodWorkers(cfg.Count))
	setDefault(&cfg.Seed, 1)
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = cfg.Logger.With("component", "simnode")

	if cfg.LeaseDuration < time.Second {
		// leaseDurationSeconds is whole seconds and must be positive.
		return cfg, fmt.Errorf("simnode: lease duration %v is under a second", cfg.LeaseDuration)
	}
	cluster, err := netip.ParsePrefix(cfg.ClusterCIDR)
	if err != nil {
		return cfg, fmt.Errorf("simnode: cluster CIDR: %w", err)
	}
	if cfg.NodeCIDRMaskSize < cluster.Bits() || cfg.NodeCIDRMaskSize > cluster.Addr().BitLen()-2 {
		return cfg, fmt.Errorf("simnode: node CIDR mask /%d does not fit in %s", cfg.NodeCIDRMaskSize, cluster)
	}
	if bits := cfg.NodeCIDRMaskSize - cluster.Bits(); bits < 31 && cfg.Count > 1<<bits {
		return cfg, fmt.Errorf("simnode: %s holds %d /%d node CIDRs, not %d", cluster, 1<<bits, cfg.NodeCIDRMaskSize, cfg.Count)
	}
	nodeIPs, err := netip.ParsePrefix(cfg.NodeIPRange)
	if err != nil {
		return cfg, fmt.Errorf("simnode: node IP range: %w", err)
	}
	if bits := nodeIPs.Addr().BitLen() - nodeIPs.Bits(); bits < 31 && cfg.Count >= 1<<bits {
		return cfg, fmt.Errorf("simnode: node IP range %s is too small for %d nodes", nodeIPs, cfg.Count)
	}
	return cfg, nil
}

// defaultPodWorkers grows the pod writers with the fleet. Each real
// kubelet writes its own pods' status, so a thousand nodes starting ten
// thousand pods write a thousand at a time; 16 writers at ~100 ms a
// write under that load start only ~160 pods a second, and the nodes,
// not the control plane, become what a density run measures.
func defaultPodWorkers(nodes int) int { return min(max(nodes/16, 16), 64) }

// defaultNodeWorkers grows the lease and status writers with the fleet.
// 5,000 nodes renew 500 leases a second; with 8 writers at ~30 ms a
// write under a density run's load they managed ~250, and nodes whose
// renewals fell 40 s behind went Unknown. Real kubelets renew each on
// its own.
func defaultNodeWorkers(nodes int) int { return min(max(nodes/100, 8), 64) }

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// fillResources returns a copy of list with the entries it lacks taken
// from defaults.
func fillResources(list, defaults corev1.ResourceList) corev1.ResourceList {
	out := list.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for name, q := range defaults {
		if _, ok := out[name]; !ok {
			out[name] = q.DeepCopy()
		}
	}
	return out
}
