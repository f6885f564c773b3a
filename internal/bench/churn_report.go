package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// ChurnResult is one run of the churn scenario: a table, then one JSON line.
type ChurnResult struct {
	Scenario     string `json:"scenario"`
	Target       string `json:"target"`
	Kubeconfig   string `json:"kubeconfig,omitempty"`
	Seed         uint64 `json:"seed"`
	Nodes        int    `json:"nodes"`
	NodesStarted int    `json:"nodes_started,omitempty"`
	NumCPU       int    `json:"num_cpu"`
	GoVersion    string `json:"go_version"`

	TargetRate      float64 `json:"target_creates_per_second"`
	DurationSeconds float64 `json:"duration_seconds"`
	LifetimeSeconds float64 `json:"lifetime_seconds"`
	ServiceFraction float64 `json:"service_fraction"`
	// Seconds is the time to send every scheduled write.
	Seconds          float64 `json:"seconds"`
	CreatesPerSecond float64 `json:"creates_per_second"`
	PodsCreated      int     `json:"pods_created"`
	ServicesCreated  int     `json:"services_created"`
	PodsDeleted      int     `json:"pods_deleted"`
	ServicesDeleted  int     `json:"services_deleted"`
	Errors           int     `json:"errors"`
	FirstError       string  `json:"first_error,omitempty"`
	// ScheduleLagMS is how late writes were sent against their schedule:
	// high when the benchmark itself could not keep up.
	ScheduleLagMS Quantiles `json:"schedule_lag_ms"`

	// Client is the benchmark's own calls by verb and resource, timed to
	// the end of the response; ClientP99MS their p99 by verb.
	Client      []ClientLatency    `json:"client"`
	ClientP99MS map[string]float64 `json:"client_p99_ms"`
	// API is the server's latency over the run for every client (see
	// DensityRun.API); APIP99MS by verb, from APISource.
	API       []APILatency       `json:"api"`
	APIP99MS  map[string]float64 `json:"api_p99_ms"`
	APISource string             `json:"api_source"`
	APIError  string             `json:"api_error,omitempty"`

	// WatchMS is watch delivery latency, write sent to event seen, by
	// "kind/verb" and over "all"; WatchMissed the writes whose event never
	// came within the drain.
	WatchMS     map[string]Quantiles `json:"watch_ms"`
	WatchMissed int                  `json:"watch_missed"`

	// PodsRunning pods were seen Running; PodsDeletedBeforeRunning were
	// deleted first; PodsNotRunning were alive and not Running after the
	// drain. PodStartupMS is as in density.
	PodsRunning              int       `json:"pods_running"`
	PodsDeletedBeforeRunning int       `json:"pods_deleted_before_running"`
	PodsNotRunning           int       `json:"pods_not_running"`
	PodStartupMS             Quantiles `json:"pod_startup_ms"`

	ServerCPUSeconds *float64 `json:"server_cpu_seconds"`
	ServerCPUCores   float64  `json:"server_cpu_cores,omitempty"`
	ServerPeakRSSMiB *float64 `json:"server_peak_rss_mib"`

	Targets  []TargetResult `json:"targets"`
	Problems []string       `json:"failures"`
	// OK: no errors, no missed events, every live pod Running, targets met.
	OK        bool    `json:"ok"`
	LoadStart float64 `json:"loadavg_start"`
	LoadEnd   float64 `json:"loadavg_end"`
}

// judge records failures and targets, then the verdict.
func (r *ChurnResult) judge() {
	if r.Errors > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d writes failed (first: %s)", r.Errors, r.FirstError))
	}
	if r.WatchMissed > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d writes never seen by the watch", r.WatchMissed))
	}
	if r.PodsNotRunning > 0 {
		r.Problems = append(r.Problems, fmt.Sprintf("%d live pods not Running after the drain", r.PodsNotRunning))
	}
	if r.PodsRunning > 0 {
		p99 := r.PodStartupMS.P99
		r.Targets = append(r.Targets, TargetResult{Name: "pod startup p99 ms", Want: "<= 5000", Got: p99, Met: p99 <= densityStartupTargetMS})
	}
	if r.APISource == APISourceServer {
		broken := densitySLOFailures(r.API)
		r.Targets = append(r.Targets, TargetResult{Name: "API groups over their p99 SLO", Want: "== 0", Got: float64(len(broken)), Met: len(broken) == 0})
	}
	r.OK = len(r.Problems) == 0
	for _, t := range r.Targets {
		r.OK = r.OK && t.Met
	}
}

// Failures are the run's correctness problems.
func (r *ChurnResult) Failures() []string { return r.Problems }

// Print writes the tables, then the JSON line.
func (r *ChurnResult) Print(out io.Writer) error {
	where := "a fresh embedded server in this process (server, etcd, scheduler, controllers, simulated nodes and the benchmark share the CPUs)"
	if r.Target == "kubeconfig" {
		where = r.Kubeconfig
	}
	fmt.Fprintf(out, "rudder bench churn: %.0f creates/s for %.0fs, each deleted %.0fs later, %.0f%% services; %d simulated nodes; %s\n",
		r.TargetRate, r.DurationSeconds, r.LifetimeSeconds, r.ServiceFraction*100, r.Nodes, where)
	fmt.Fprintf(out, "%d CPUs, machine load average %.1f before, %.1f after\n\n", r.NumCPU, r.LoadStart, r.LoadEnd)
	fmt.Fprintf(out, "writes: %d pods and %d services created, %d and %d deleted, %d errors, %.1f creates/s, schedule lag p99 %.1f ms\n",
		r.PodsCreated, r.ServicesCreated, r.PodsDeleted, r.ServicesDeleted, r.Errors, r.CreatesPerSecond, r.ScheduleLagMS.P99)
	fmt.Fprintf(out, "pods: %d Running (startup p50 %.0f ms, p99 %.0f ms), %d deleted before Running, %d not Running at the end\n",
		r.PodsRunning, r.PodStartupMS.P50, r.PodStartupMS.P99, r.PodsDeletedBeforeRunning, r.PodsNotRunning)
	fmt.Fprintf(out, "server: cpu %s s (%.2f cores), peak RSS %s MiB\n", optNumber(r.ServerCPUSeconds), r.ServerCPUCores, optNumber(r.ServerPeakRSSMiB))

	fmt.Fprintln(out, "\nWATCH latency (write sent → event seen)")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "events\tcount\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
	for _, k := range sortedKeys(r.WatchMS) {
		q := r.WatchMS[k]
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", k, q.Count, q.P50, q.P90, q.P99, q.Max)
	}
	tw.Flush()
	fmt.Fprintln(out, "\nAPI calls of the benchmark (client side, to the end of the response)")
	printAPITable(out, nil, r.Client)
	fmt.Fprintf(out, "\nAPI calls of every client (%s)\n", densitySourceNote(r.APISource, r.APIError))
	if r.APISource == APISourceServer {
		printAPITable(out, r.API, nil)
	}
	printTargets(out, r.Targets)
	if len(r.Problems) > 0 {
		fmt.Fprintf(out, "\nFAILURES\n  %s\n", strings.Join(r.Problems, "\n  "))
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s\n", line)
	return nil
}

// Summaries is the run's uniform summary.
func (r *ChurnResult) Summaries() []Summary {
	startup := r.PodStartupMS
	s := Summary{Scenario: r.Scenario, Target: r.Target, Kubeconfig: r.Kubeconfig, Seed: r.Seed, Nodes: r.Nodes, Pods: r.PodsCreated,
		PodStartupMS: &startup, APIP99MS: r.APIP99MS, APISource: r.APISource,
		ServerCPUSeconds: r.ServerCPUSeconds, ServerPeakRSSMiB: r.ServerPeakRSSMiB, LoadAvg: r.LoadEnd, OK: r.OK,
		Figures: map[string]float64{
			"creates_per_second":  r.CreatesPerSecond,
			"schedule_lag_p99_ms": r.ScheduleLagMS.P99,
			"watch_p50_ms":        r.WatchMS["all"].P50,
			"watch_p99_ms":        r.WatchMS["all"].P99,
			"watch_missed":        float64(r.WatchMissed),
			"services_created":    float64(r.ServicesCreated),
			"pods_running":        float64(r.PodsRunning),
			"pods_deleted":        float64(r.PodsDeleted),
		}}
	if s.APIP99MS == nil {
		s.APIP99MS = map[string]float64{}
	}
	for verb, v := range r.ClientP99MS {
		s.Figures["client_p99_ms."+verb] = v
	}
	return []Summary{s}
}
