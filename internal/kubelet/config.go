package kubelet

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Version is the kubeletVersion a node reports: the Kubernetes version
// the API server serves (simulated nodes report it with -simnode).
const Version = "v1.36.3"

// DefaultKubeletPort is the kubelet API's usual port.
const DefaultKubeletPort = 10250

// Config describes one kubelet. New fills the zero fields with the
// defaults given on each.
type Config struct {
	// NodeName is the Node this kubelet registers and runs pods for
	// (required).
	NodeName string
	// NodeIP is the node's InternalIP and where the kubelet API listens
	// (127.0.0.1).
	NodeIP net.IP
	// Client talks to the API server, authenticated as
	// system:node:<NodeName> (required). It must be allowed to create
	// subjectaccessreviews (the kubelet API's authorization) and
	// serviceaccounts/token (projected service account tokens).
	Client kubernetes.Interface

	// RuntimeEndpoint and ImageEndpoint are the CRI sockets
	// (unix:///run/rudder/cri.sock; ImageEndpoint defaults to
	// RuntimeEndpoint).
	RuntimeEndpoint string
	ImageEndpoint   string
	// RuntimeRequestTimeout bounds every CRI call but pulls (2 min).
	RuntimeRequestTimeout time.Duration

	// RootDir holds the kubelet's state: pods/<uid>/volumes, etc-hosts,
	// termination messages (/var/lib/rudder/agent/kubelet).
	RootDir string
	// PodLogsDir holds the pods' log directories,
	// <ns>_<name>_<uid>/<container>/<restart>.log (/var/log/pods).
	PodLogsDir string

	// KubeletPort is the kubelet API's port on NodeIP: set it to
	// DefaultKubeletPort (10250) for a real node; 0 picks a free one,
	// reported by (*Kubelet).Port and in the Node's daemonEndpoints.
	KubeletPort int
	// ServingCert is what the kubelet API serves (required); ClientCAs
	// verifies its clients, who must present a certificate (required).
	ServingCert tls.Certificate
	ClientCAs   *x509.CertPool

	// CgroupRoot is the cgroup under which pods live, as
	// <CgroupRoot>/kubepods[/burstable|/besteffort]/pod<uid>, passed to
	// the runtime as each sandbox's cgroup parent ("/").
	CgroupRoot string
	// CgroupsPerQOS has the kubelet make the QoS cgroup tree and each
	// pod's cgroup with its limits before the sandbox (qos.go), as
	// upstream's cgroupsPerQOS; off, the runtime makes pod cgroups
	// without pod-level limits.
	CgroupsPerQOS bool
	// MaxPods is the node's pods capacity (110).
	MaxPods int
	// SystemReserved and KubeReserved are taken from capacity to give
	// allocatable, with the hard eviction thresholds (memory 100Mi,
	// ephemeral-storage 10 %).
	SystemReserved corev1.ResourceList
	KubeReserved   corev1.ResourceList

	// ClusterDNS are the nameservers of ClusterFirst pods (the kube-dns
	// Service's IP, 10.96.0.10 as the agent sets it); empty: those pods
	// get the Default policy, as upstream's kubelet without --cluster-dns.
	// ClusterDomain is cluster.local; ResolvConf the host's file
	// (/etc/resolv.conf), the Default policy's and the search path's
	// source (dnsconfig.go).
	ClusterDNS    []net.IP
	ClusterDomain string
	ResolvConf    string

	// Labels are added to the Node's at registration; Taints registered
	// with it.
	Labels map[string]string
	Taints []corev1.Taint

	// NodeStatusUpdateFrequency is how often the node's status is
	// compared with the API's (10 s); it is written when it changed or
	// NodeStatusReportFrequency (5 min) passed. LeaseDuration is the
	// lease's (40 s), renewed every quarter of it.
	NodeStatusUpdateFrequency time.Duration
	NodeStatusReportFrequency time.Duration
	LeaseDuration             time.Duration
	// RelistPeriod is how often the runtime is listed for changes (1 s);
	// ResyncPeriod how often every pod is synced regardless (1 min).
	RelistPeriod time.Duration
	ResyncPeriod time.Duration

	// Clock drives every timer (the real clock).
	Clock clock.WithTicker
	// Logger gets the kubelet's logs (slog.Default()).
	Logger *slog.Logger
}

// withDefaults returns cfg with every zero field filled, or an error for
// settings that cannot work.
func (cfg Config) withDefaults() (Config, error) {
	if cfg.NodeName == "" {
		return cfg, errors.New("kubelet: a node name is required")
	}
	if cfg.NodeName != strings.ToLower(cfg.NodeName) || len(cfg.NodeName) > 253 {
		return cfg, fmt.Errorf("kubelet: node name %q is not a lower-case DNS name", cfg.NodeName)
	}
	if cfg.Client == nil {
		return cfg, errors.New("kubelet: a client is required")
	}
	if len(cfg.ServingCert.Certificate) == 0 || cfg.ClientCAs == nil {
		return cfg, errors.New("kubelet: the kubelet API needs a serving certificate and client CAs")
	}
	if cfg.NodeIP == nil {
		cfg.NodeIP = net.IPv4(127, 0, 0, 1)
	}
	setDefault(&cfg.RuntimeEndpoint, "unix:///run/rudder/cri.sock")
	setDefault(&cfg.ImageEndpoint, cfg.RuntimeEndpoint)
	setDefault(&cfg.RuntimeRequestTimeout, 2*time.Minute)
	setDefault(&cfg.RootDir, "/var/lib/rudder/agent/kubelet")
	setDefault(&cfg.PodLogsDir, "/var/log/pods")
	if cfg.KubeletPort < 0 || cfg.KubeletPort > 65535 {
		return cfg, fmt.Errorf("kubelet: port %d out of range", cfg.KubeletPort)
	}
	setDefault(&cfg.CgroupRoot, "/")
	setDefault(&cfg.MaxPods, 110)
	setDefault(&cfg.ClusterDomain, "cluster.local")
	setDefault(&cfg.ResolvConf, "/etc/resolv.conf")
	setDefault(&cfg.NodeStatusUpdateFrequency, 10*time.Second)
	setDefault(&cfg.NodeStatusReportFrequency, 5*time.Minute)
	setDefault(&cfg.LeaseDuration, 40*time.Second)
	setDefault(&cfg.RelistPeriod, time.Second)
	setDefault(&cfg.ResyncPeriod, time.Minute)
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	cfg.Logger = cfg.Logger.With("component", "kubelet", "node", cfg.NodeName)
	if cfg.LeaseDuration < time.Second {
		return cfg, fmt.Errorf("kubelet: lease duration %v is under a second", cfg.LeaseDuration)
	}
	for _, ep := range []string{cfg.RuntimeEndpoint, cfg.ImageEndpoint} {
		if !strings.HasPrefix(ep, "unix://") {
			return cfg, fmt.Errorf("kubelet: CRI endpoint %q is not unix:///path", ep)
		}
	}
	for _, d := range []string{cfg.RootDir, cfg.PodLogsDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return cfg, fmt.Errorf("kubelet: %w", err)
		}
	}
	return cfg, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}
