package scheduler

import (
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// Metric names follow kube-scheduler's, so dashboards carry over.
var (
	scheduleAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "scheduler_schedule_attempts_total",
		Help: "Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.",
	}, []string{"result", "profile"})
	attemptDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_scheduling_attempt_duration_seconds",
		Help:    "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
		Buckets: prometheus.ExponentialBuckets(0.00001, 2, 22),
	}, []string{"result", "profile"})
	e2eDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_pod_scheduling_sli_duration_seconds",
		Help:    "E2e latency for a pod being scheduled, from the time the pod enters the scheduling queue until it is bound.",
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 20),
	}, []string{"attempts"})
	pendingPods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "scheduler_pending_pods",
		Help: "Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods; 'gated' means pods held by PreEnqueue plugins.",
	}, []string{"queue"})
	pluginDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_framework_extension_point_duration_seconds",
		Help:    "Latency for running all plugins of a specific extension point.",
		Buckets: prometheus.ExponentialBuckets(0.00001, 2, 18),
	}, []string{"extension_point", "status", "profile"})
	pluginExecDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "scheduler_plugin_execution_duration_seconds",
		Help:    "Duration for running a plugin at a specific extension point.",
		Buckets: prometheus.ExponentialBuckets(0.00001, 1.5, 20),
	}, []string{"plugin", "extension_point", "status"})
)

// pluginMetricsSamplePercent is the share of scheduling cycles whose plugin
// calls are timed one by one, upstream's 10 %: timing every Filter call
// on every node would cost more than some of the calls.
const pluginMetricsSamplePercent = 10

// perNodeTimedCalls is how many per-node plugin calls (Filter, Score) a
// sampled cycle times.
const perNodeTimedCalls = 32

// pluginStart is the time a plugin call starts when the cycle is sampled,
// and the zero time (no clock read) when it is not.
func pluginStart(state *framework.CycleState) time.Time {
	if !state.RecordPluginMetrics {
		return time.Time{}
	}
	return time.Now()
}

// nodePluginStart is pluginStart for the calls made once per node: only
// the first perNodeTimedCalls of a sampled cycle are timed. The count is
// read before it is added to: the Filter and Score goroutines read the
// cycle state for every node, and an atomic add on every call would pass
// its cache line from core to core for the rest of the cycle.
func nodePluginStart(state *framework.CycleState) time.Time {
	if !state.RecordPluginMetrics || state.PerNodeTimed.Load() >= perNodeTimedCalls || state.PerNodeTimed.Add(1) > perNodeTimedCalls {
		return time.Time{}
	}
	return time.Now()
}

// observePlugin records a timed plugin call (start not zero). A batch
// scorer is timed per range of nodes it scores.
func observePlugin(point, plugin string, st *framework.Status, start time.Time) {
	if start.IsZero() {
		return
	}
	d := time.Since(start).Seconds()
	key := pluginExecKey{point, plugin, st.Code()}
	if h, ok := pluginExecChildren.Load(key); ok {
		h.(prometheus.Observer).Observe(d)
		return
	}
	h := pluginExecDuration.WithLabelValues(plugin, point, key.code.String())
	pluginExecChildren.Store(key, h)
	h.Observe(d)
}

// pluginExecChildren caches pluginExecDuration's children by label
// values: a sampled cycle times a hundred or so calls, and resolving the
// labels (hashing three strings under the vector's lock) cost more than
// the observation.
var pluginExecChildren sync.Map // pluginExecKey → prometheus.Observer

type pluginExecKey struct {
	point, plugin string
	code          framework.Code
}

// Collectors returns the scheduler's metrics for a registry.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{scheduleAttempts, attemptDuration, e2eDuration, pendingPods, pluginDuration, pluginExecDuration}
}

// profileMetrics holds a profile's metric children, resolved once so the
// hot path does no label lookups.
type profileMetrics struct {
	scheduled, unschedulable, errored                       prometheus.Counter
	durScheduled, durUnschedulable, durError                prometheus.Observer
	preFilter, filter, preScore, score, bind, postFilterDur prometheus.Observer
}

func newProfileMetrics(profile string) *profileMetrics {
	point := func(p string) prometheus.Observer { return pluginDuration.WithLabelValues(p, "Success", profile) }
	return &profileMetrics{
		scheduled:        scheduleAttempts.WithLabelValues("scheduled", profile),
		unschedulable:    scheduleAttempts.WithLabelValues("unschedulable", profile),
		errored:          scheduleAttempts.WithLabelValues("error", profile),
		durScheduled:     attemptDuration.WithLabelValues("scheduled", profile),
		durUnschedulable: attemptDuration.WithLabelValues("unschedulable", profile),
		durError:         attemptDuration.WithLabelValues("error", profile),
		preFilter:        point("PreFilter"),
		filter:           point("Filter"),
		preScore:         point("PreScore"),
		score:            point("Score"),
		bind:             point("Bind"),
		postFilterDur:    point("PostFilter"),
	}
}

func since(o prometheus.Observer, start time.Time) { o.Observe(time.Since(start).Seconds()) }
