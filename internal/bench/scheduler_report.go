package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// SchedulerResult is every run of one `rudder bench scheduler`: a table,
// then one JSON line per run.
type SchedulerResult struct {
	Seed       uint64         `json:"seed"`
	NumCPU     int            `json:"num_cpu"`
	GOMAXPROCS int            `json:"gomaxprocs"`
	GoVersion  string         `json:"go_version"`
	LoadStart  float64        `json:"loadavg_start"`
	LoadEnd    float64        `json:"loadavg_end"`
	Runs       []SchedulerRun `json:"runs"`
}

// SchedLatency is a latency distribution in milliseconds.
type SchedLatency struct {
	Count uint64  `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func latencyOf(h *histogram) SchedLatency {
	return SchedLatency{Count: h.n, P50: round3(h.quantileMS(0.5)), P90: round3(h.quantileMS(0.9)), P99: round3(h.quantileMS(0.99)), Max: round3(h.maxMS())}
}

// SchedulerRun is one scenario in one mode at one cluster size.
type SchedulerRun struct {
	Scenario string `json:"scenario"`
	Mode     string `json:"mode"`
	// Cluster is "fake" (algorithm mode), "embedded" or "kubeconfig".
	Cluster  string `json:"cluster"`
	Seed     uint64 `json:"seed"`
	Nodes    int    `json:"nodes"`
	InitPods int    `json:"init_pods"`
	Parked   int    `json:"parked_pods"`
	// Pods are the measured pods; Bound how many of them were bound.
	Pods  int `json:"pods"`
	Bound int `json:"bound"`
	// Seconds runs from the first measured pod popped (algorithm) or
	// created (e2e) to the last one bound (algorithm) or seen bound by the
	// watch (e2e).
	Seconds       float64 `json:"seconds"`
	PodsPerSecond float64 `json:"pods_per_second"`
	// Attempts are the measured pods' scheduling attempts; more than Pods
	// when some were unschedulable first (preemption).
	Attempts              int `json:"attempts"`
	UnschedulableAttempts int `json:"unschedulable_attempts"`
	ErrorAttempts         int `json:"error_attempts"`
	// SchedulingMS is the attempt latency from Pop to the end of binding,
	// as the scheduler's OnAttempt hook reports it.
	SchedulingMS SchedLatency `json:"scheduling_ms"`
	// E2EMS (e2e mode) runs from the create request sent to the bind seen
	// by the watch. creationTimestamp has one-second resolution, too coarse
	// for this, so the benchmark's own send time is used.
	E2EMS *SchedLatency `json:"e2e_ms,omitempty"`
	// CPUSeconds and CPUCores are this process's CPU over the measured
	// phase: the scheduler, plus in e2e mode with an embedded server the
	// API server, etcd and the benchmark's clients too.
	CPUSeconds float64 `json:"cpu_seconds"`
	CPUCores   float64 `json:"cpu_cores"`
	// CPUPerPodUS is CPUSeconds per measured pod: unlike pods/s, it does
	// not depend on how much of the machine other work left this run.
	CPUPerPodUS float64 `json:"cpu_us_per_pod"`
	PeakRSSMiB  float64 `json:"peak_rss_mib"`
	// ServerCPUSeconds and ServerPeakRSSMiB are the same figures when the
	// API server is embedded in this process (null otherwise).
	ServerCPUSeconds *float64 `json:"server_cpu_seconds"`
	ServerPeakRSSMiB *float64 `json:"server_peak_rss_mib"`
	// Victims are the preemption scenario's deleted low-priority pods.
	Victims int `json:"victims"`
	// ParkedWakeups are parked pods' attempts during the measured phase;
	// ChurnEvents the node adds and deletes made meanwhile.
	ParkedWakeups int `json:"parked_wakeups"`
	ChurnEvents   int `json:"churn_events"`
	// WatchStalls (e2e) are times the bind watch went silent with binds
	// outstanding and was replaced by a re-list; WatchListedBinds the binds
	// only such a re-list found. Both are 0 when the watch works.
	WatchStalls      int `json:"watch_stalls"`
	WatchListedBinds int `json:"watch_listed_binds"`
	// CreateErrors are failed creates in e2e mode.
	CreateErrors int `json:"create_errors"`
	// Violations are placements breaking a constraint (see schedVerify).
	Violations int      `json:"violations"`
	Failures   []string `json:"failures"`
	// TargetPodsPerSecond is the target for this scenario, mode
	// and size (0: none); TargetMet says whether it was reached.
	TargetPodsPerSecond float64 `json:"target_pods_per_second"`
	TargetMet           *bool   `json:"target_met"`
	// OK: every measured pod bound, nothing violated, target (if any) met.
	OK        bool    `json:"ok"`
	LoadStart float64 `json:"loadavg_start"`
	LoadEnd   float64 `json:"loadavg_end"`
}

// schedTargetFor is the throughput target, judged only at its
// reference size of 5,000 nodes or more.
func schedTargetFor(scenario, mode string, nodes int) float64 {
	if nodes < 5000 {
		return 0
	}
	switch {
	case mode == ModeAlgorithm && scenario == SchedBasic:
		return 20000
	case mode == ModeAlgorithm && (scenario == SchedSpread || scenario == SchedAntiAffinity):
		return 3000
	case mode == ModeE2E && scenario == SchedBasic:
		return 2000
	}
	return 0
}

// finish derives throughput, failures, the target verdict and ok.
func (r *SchedulerRun) finish() {
	if r.Seconds > 0 {
		r.PodsPerSecond = round1(float64(r.Bound) / r.Seconds)
	}
	if r.Bound > 0 {
		r.CPUPerPodUS = round1(r.CPUSeconds * 1e6 / float64(r.Bound))
	}
	r.Seconds = round3(r.Seconds)
	if r.Bound < r.Pods {
		r.Failures = append(r.Failures, fmt.Sprintf("%d of %d measured pods not bound", r.Pods-r.Bound, r.Pods))
	}
	if r.CreateErrors > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d creates failed", r.CreateErrors))
	}
	if r.ErrorAttempts > 0 {
		r.Failures = append(r.Failures, fmt.Sprintf("%d scheduling attempts ended in an error", r.ErrorAttempts))
	}
	if r.Failures == nil {
		r.Failures = []string{}
	}
	r.OK = len(r.Failures) == 0
	if t := schedTargetFor(r.Scenario, r.Mode, r.Nodes); t > 0 {
		met := r.PodsPerSecond >= t
		r.TargetPodsPerSecond, r.TargetMet = t, &met
		r.OK = r.OK && met
	}
	r.LoadEnd = loadAverage()
}

// Failures lists the runs' correctness problems; a missed target is not one.
func (r *SchedulerResult) Failures() []string {
	var out []string
	for _, run := range r.Runs {
		for _, f := range run.Failures {
			out = append(out, fmt.Sprintf("%s/%s at %d nodes: %s", run.Scenario, run.Mode, run.Nodes, f))
		}
	}
	return out
}

// Print writes the table, then one JSON line per run.
func (r *SchedulerResult) Print(out io.Writer) error {
	fmt.Fprintf(out, "rudder bench scheduler: seed %d, %d CPUs (GOMAXPROCS %d), machine load average %.1f before, %.1f after\n",
		r.Seed, r.NumCPU, r.GOMAXPROCS, r.LoadStart, r.LoadEnd)
	fmt.Fprintln(out, "seconds: first measured pod popped (algorithm) or created (e2e) to last bound; sched: attempt latency Pop..bound;")
	fmt.Fprintln(out, "e2e: create sent to bind seen by a watch; cpu s, RSS: this process (server included when embedded)")
	fmt.Fprintln(out)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\tmode\tnodes\tpods\tbound\tseconds\tpods/s\tsched p50 ms\tp90\tp99\te2e p50 ms\tp99\tcpu s\tcpu µs/pod\tRSS MiB\tload\ttarget\tok\t")
	for _, run := range r.Runs {
		e2e50, e2e99 := "-", "-"
		if run.E2EMS != nil {
			e2e50, e2e99 = fmt.Sprintf("%.1f", run.E2EMS.P50), fmt.Sprintf("%.1f", run.E2EMS.P99)
		}
		target := "-"
		if run.TargetMet != nil {
			target = fmt.Sprintf(">=%.0f", run.TargetPodsPerSecond)
			if !*run.TargetMet {
				target += " MISSED"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%.2f\t%.0f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%.1f\t%.0f\t%.0f\t%.1f\t%s\t%v\t\n",
			run.Scenario, run.Mode, run.Nodes, run.Pods, run.Bound, run.Seconds, run.PodsPerSecond,
			run.SchedulingMS.P50, run.SchedulingMS.P90, run.SchedulingMS.P99, e2e50, e2e99, run.CPUSeconds, run.CPUPerPodUS, run.PeakRSSMiB, run.LoadEnd, target, run.OK)
	}
	tw.Flush()
	for _, run := range r.Runs {
		var notes []string
		if run.Scenario == SchedPreemption {
			notes = append(notes, fmt.Sprintf("%d victims deleted", run.Victims))
		}
		if run.Scenario == SchedUnschedulable {
			notes = append(notes, fmt.Sprintf("%d parked pods, %d node churn events, %d parked-pod attempts while measuring", run.Parked, run.ChurnEvents, run.ParkedWakeups))
		}
		if run.WatchStalls > 0 {
			notes = append(notes, fmt.Sprintf("bind watch stalled %d times; %d binds found only by re-listing", run.WatchStalls, run.WatchListedBinds))
		}
		if run.UnschedulableAttempts > 0 {
			notes = append(notes, fmt.Sprintf("%d unschedulable attempts of measured pods", run.UnschedulableAttempts))
		}
		if len(notes) > 0 {
			fmt.Fprintf(out, "  %s/%s at %d nodes: %s\n", run.Scenario, run.Mode, run.Nodes, strings.Join(notes, "; "))
		}
	}
	if f := r.Failures(); len(f) > 0 {
		fmt.Fprintf(out, "\nFAILURES\n  %s\n", strings.Join(f, "\n  "))
	}
	fmt.Fprintln(out)
	for _, run := range r.Runs {
		line, err := json.Marshal(run)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s\n", line)
	}
	return nil
}

func schedLogf(format string, args ...any) { slog.Info("bench: " + fmt.Sprintf(format, args...)) }

// schedResetPeakRSS resets the kernel's peak-RSS mark (VmHWM) of this
// process, so each run reports its own peak; where that is not allowed,
// the peak is the process's since it started.
func schedResetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// schedPeakRSSMiB reads VmHWM, the peak resident set, from /proc/self/status.
func schedPeakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return round1(kb / 1024)
		}
	}
	return 0
}

// schedMeasure is the measured phase's CPU meter and its result.
type schedMeasure struct{ cpu cpuMeter }

func startSchedMeasure() schedMeasure { return schedMeasure{cpu: startCPU()} }

// stop fills run's CPU and memory figures; embedded says the API server
// runs in this process, so they are also the server's.
func (m schedMeasure) stop(run *SchedulerRun, embedded bool) {
	wall := time.Since(m.cpu.wall)
	cores, _ := m.cpu.read(0)
	run.CPUCores = cores
	run.CPUSeconds = round3(cores * wall.Seconds())
	run.PeakRSSMiB = schedPeakRSSMiB()
	if embedded {
		cpu, rss := run.CPUSeconds, run.PeakRSSMiB
		run.ServerCPUSeconds, run.ServerPeakRSSMiB = &cpu, &rss
	}
}
