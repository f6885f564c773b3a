package nodelifecycle

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Config tunes the node lifecycle controller. Zero fields take upstream's
// defaults, noted on each with the kube-controller-manager flag.
type Config struct {
	// NodeMonitorPeriod is the time between health passes
	// (--node-monitor-period, 5 s).
	NodeMonitorPeriod time.Duration
	// NodeMonitorGracePeriod is how long a node may go without a lease
	// renewal or status heartbeat before it is marked Unknown
	// (--node-monitor-grace-period, 50 s since Kubernetes 1.32).
	NodeMonitorGracePeriod time.Duration
	// NodeStartupGracePeriod replaces it for a node that never posted a
	// Ready condition (--node-startup-grace-period, 60 s).
	NodeStartupGracePeriod time.Duration

	// EvictionLimiterQPS is how many nodes per second and zone get a
	// NoExecute taint in a healthy zone (--node-eviction-rate, 0.1);
	// negative means none.
	EvictionLimiterQPS float64
	// SecondaryEvictionLimiterQPS is that rate in a partially disrupted
	// zone larger than LargeClusterSizeThreshold
	// (--secondary-node-eviction-rate, 0.01); negative means none.
	SecondaryEvictionLimiterQPS float64
	// LargeClusterSizeThreshold is the zone size above which a partially
	// disrupted zone still taints, at the secondary rate
	// (--large-cluster-size-threshold, 50).
	LargeClusterSizeThreshold int
	// UnhealthyZoneThreshold is the fraction of NotReady nodes (at least
	// 3) that makes a zone partially disrupted
	// (--unhealthy-zone-threshold, 0.55).
	UnhealthyZoneThreshold float64

	// Workers bounds concurrent writes in a pass and the NoSchedule
	// workers (8, as upstream).
	Workers int
}

// Upstream's defaults.
const (
	DefaultNodeMonitorPeriod           = 5 * time.Second
	DefaultNodeMonitorGracePeriod      = 50 * time.Second
	DefaultNodeStartupGracePeriod      = 60 * time.Second
	DefaultEvictionLimiterQPS          = 0.1
	DefaultSecondaryEvictionLimiterQPS = 0.01
	DefaultLargeClusterSizeThreshold   = 50
	DefaultUnhealthyZoneThreshold      = 0.55
)

func (c *Config) defaults() {
	if c.NodeMonitorPeriod <= 0 {
		c.NodeMonitorPeriod = DefaultNodeMonitorPeriod
	}
	if c.NodeMonitorGracePeriod <= 0 {
		c.NodeMonitorGracePeriod = DefaultNodeMonitorGracePeriod
	}
	if c.NodeStartupGracePeriod <= 0 {
		c.NodeStartupGracePeriod = DefaultNodeStartupGracePeriod
	}
	c.EvictionLimiterQPS = qpsDefault(c.EvictionLimiterQPS, DefaultEvictionLimiterQPS)
	c.SecondaryEvictionLimiterQPS = qpsDefault(c.SecondaryEvictionLimiterQPS, DefaultSecondaryEvictionLimiterQPS)
	if c.LargeClusterSizeThreshold <= 0 {
		c.LargeClusterSizeThreshold = DefaultLargeClusterSizeThreshold
	}
	if c.UnhealthyZoneThreshold <= 0 {
		c.UnhealthyZoneThreshold = DefaultUnhealthyZoneThreshold
	}
	if c.Workers <= 0 {
		c.Workers = 8
	}
}

func qpsDefault(v, def float64) float64 {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// Names, as upstream's --controllers and event sources know them.
const (
	// Name is upstream's --controllers name for the node lifecycle
	// controller (an alias of its canonical "node-lifecycle-controller").
	Name = "nodelifecycle"
	// TaintEvictionName is the taint eviction controller's name.
	TaintEvictionName = "taint-eviction-controller"
	// eventSource is the component of the lifecycle controller's events.
	eventSource = "node-controller"
)

// Descriptor is the node lifecycle controller with upstream's defaults.
var Descriptor = NewDescriptor(Config{})

// NewDescriptor returns the node lifecycle controller configured by cfg:
// the health monitor (one loop) and the NoSchedule tainter (a work queue
// of node names).
func NewDescriptor(cfg Config) controller.Descriptor {
	cfg.defaults()
	return controller.Descriptor{
		Name: Name,
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			m, err := newMonitor(cx, cfg)
			if err != nil {
				return nil, err
			}
			ns, err := newNoScheduleTainter(cx, cfg.Workers)
			if err != nil {
				return nil, err
			}
			return []controller.Runnable{m, ns}, nil
		},
	}
}

// TaintEvictionConfig tunes the taint eviction controller.
type TaintEvictionConfig struct {
	// Workers is how many pods are judged and evicted at once (8).
	Workers int
}

// TaintEvictionDescriptor is the taint eviction controller with its
// defaults.
var TaintEvictionDescriptor = NewTaintEvictionDescriptor(TaintEvictionConfig{})

// NewTaintEvictionDescriptor returns the taint eviction controller.
func NewTaintEvictionDescriptor(cfg TaintEvictionConfig) controller.Descriptor {
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	return controller.Descriptor{
		Name: TaintEvictionName,
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			e, err := newTaintEvictor(cx, cfg.Workers)
			if err != nil {
				return nil, err
			}
			return []controller.Runnable{e}, nil
		},
	}
}

// Metrics with upstream's names.
var (
	zoneHealthGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "node_collector", Name: "zone_health",
		Help: "Gauge measuring percentage of healthy nodes per zone.",
	}, []string{"zone"})
	zoneSizeGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "node_collector", Name: "zone_size",
		Help: "Gauge measuring number of registered Nodes per zones.",
	}, []string{"zone"})
	unhealthyNodesGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "node_collector", Name: "unhealthy_nodes_in_zone",
		Help: "Gauge measuring number of not Ready Nodes per zones.",
	}, []string{"zone"})
	evictionsTotal = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "node_collector", Name: "evictions_total",
		Help: "Number of Node evictions that happened since current instance of NodeController started.",
	}, []string{"zone"})
	podDeletionsTotal = prometheus.NewCounter(prometheus.CounterOpts{
		Subsystem: "taint_eviction_controller", Name: "pod_deletions_total",
		Help: "Total number of Pods deleted by TaintEvictionController since its start.",
	})
)

// Collectors returns both controllers' metrics for a registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{zoneHealthGauge, zoneSizeGauge, unhealthyNodesGauge, evictionsTotal, podDeletionsTotal}
}
