package controller

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
)

var (
	reconcileDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rudder_controller_reconcile_duration_seconds",
		Help:    "Time spent in one reconcile, by controller.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 4, 10),
	}, []string{"controller"})
	reconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rudder_controller_reconcile_errors_total",
		Help: "Reconciles that returned an error, by controller.",
	}, []string{"controller"})
)

// Work queue metrics carry upstream's names and "name" label, so the
// dashboards and alerts written for kube-controller-manager read ours.
var (
	wqDepth = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "depth",
		Help: "Current depth of the work queue.",
	}, []string{"name"})
	wqAdds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "adds_total",
		Help: "Total number of adds handled by the work queue.",
	}, []string{"name"})
	wqLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "queue_duration_seconds",
		Help:    "How long in seconds an item stays in the work queue before being requested.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
	wqWorkDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "workqueue", Name: "work_duration_seconds",
		Help:    "How long in seconds processing an item from the work queue takes.",
		Buckets: prometheus.ExponentialBuckets(10e-9, 10, 12),
	}, []string{"name"})
	wqUnfinished = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "unfinished_work_seconds",
		Help: "Seconds of work in progress not yet observed by work_duration; large values mean stuck workers.",
	}, []string{"name"})
	wqLongest = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "workqueue", Name: "longest_running_processor_seconds",
		Help: "How many seconds the longest running processor of the work queue has been running.",
	}, []string{"name"})
	wqRetries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "workqueue", Name: "retries_total",
		Help: "Total number of retries handled by the work queue.",
	}, []string{"name"})
)

// Collectors returns the controller metrics for a registry (the API
// server's /metrics when run in-process): reconcile time and errors per
// controller, and the work queue metrics of every named client-go queue
// created after the first call (which installs the work queue metrics
// provider).
func Collectors() []prometheus.Collector {
	installWorkqueueMetrics()
	return []prometheus.Collector{reconcileDuration, reconcileErrors,
		wqDepth, wqAdds, wqLatency, wqWorkDuration, wqUnfinished, wqLongest, wqRetries}
}

var installWorkqueueOnce sync.Once

// installWorkqueueMetrics sets client-go's process-wide work queue
// metrics provider. client-go honours only the first SetProvider and only
// for queues created afterwards, so the manager calls this before any
// controller is built.
func installWorkqueueMetrics() {
	installWorkqueueOnce.Do(func() { workqueue.SetProvider(workqueueMetrics{}) })
}

type workqueueMetrics struct{}

func (workqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return wqDepth.WithLabelValues(name)
}
func (workqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return wqAdds.WithLabelValues(name)
}
func (workqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return wqLatency.WithLabelValues(name)
}
func (workqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return wqWorkDuration.WithLabelValues(name)
}
func (workqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return wqUnfinished.WithLabelValues(name)
}
func (workqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return wqLongest.WithLabelValues(name)
}
func (workqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return wqRetries.WithLabelValues(name)
}

type metrics struct {
	duration prometheus.Observer
	errors   prometheus.Counter
}

func metricsFor(name string) *metrics {
	return &metrics{duration: reconcileDuration.WithLabelValues(name), errors: reconcileErrors.WithLabelValues(name)}
}

func (m *metrics) observe(d time.Duration, err error) {
	m.duration.Observe(d.Seconds())
	if err != nil {
		m.errors.Inc()
	}
}
