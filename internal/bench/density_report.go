package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"
)

// DensityResult is every run of one `rudder bench density`: a table, then
// one JSON line per run.
type DensityResult struct {
	Seed       uint64       `json:"seed"`
	NumCPU     int          `json:"num_cpu"`
	GOMAXPROCS int          `json:"gomaxprocs"`
	GoVersion  string       `json:"go_version"`
	LoadStart  float64      `json:"loadavg_start"`
	LoadEnd    float64      `json:"loadavg_end"`
	Skipped    []string     `json:"skipped,omitempty"`
	Runs       []DensityRun `json:"runs"`
}

// DensityRun is one size of the density scenario. Times run from the
// Deployment's create request; "seen" means seen by the benchmark's watch.
type DensityRun struct {
	Scenario   string `json:"scenario"`
	Target     string `json:"target"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Seed       uint64 `json:"seed"`
	// Nodes are the Ready simulated nodes the pods could use; NodesStarted
	// how many of them the run started on an existing cluster.
	Nodes        int `json:"nodes"`
	NodesStarted int `json:"nodes_started,omitempty"`
	Pods         int `json:"pods"`
	// BringUpSeconds is the time to a cluster with every node Ready.
	BringUpSeconds float64 `json:"bring_up_seconds"`
	// Created, Scheduled and Running count the pods seen created, bound
	// and Running; SecondsToAll* are when the last of each was seen.
	Created   int `json:"created"`
	Scheduled int `json:"scheduled"`
	Running   int `json:"running"`
	// Deleted counts pods deleted during the run (evicted, say); the
	// controllers replace them, and Created counts the replacements too.
	Deleted               int     `json:"deleted"`
	SecondsToAllCreated   float64 `json:"seconds_to_all_created"`
	SecondsToAllScheduled float64 `json:"seconds_to_all_scheduled"`
	SecondsToAllRunning   float64 `json:"seconds_to_all_running"`
	// RunningPerSecond is Running / SecondsToAllRunning.
	RunningPerSecond float64 `json:"running_pods_per_second"`
	// PodStartupMS is creation to Running seen (see density_watch.go for
	// how creation is timed); PodStartupCTMS the same from the whole-second
	// creationTimestamp, as clusterloader2 computes it (0.5 s high on
	// average). CreateToBindMS and BindToRunningMS split it: where the
	// time goes.
	PodStartupMS Quantiles `json:"pod_startup_ms"`
	// LatencyPods are the pods of the latency phase (density_latency.go),
	// created one at a time once the Deployment's pods run;
	// LatencyStartupMS their startup, on which the SLO target is judged
	// (PodStartupMS when there was no latency phase).
	LatencyPods      int       `json:"latency_pods"`
	LatencyRunning   int       `json:"latency_running"`
	LatencyStartupMS Quantiles `json:"latency_pod_startup_ms"`
	PodStartupCTMS   Quantiles `json:"pod_startup_creation_timestamp_ms"`
	CreateToBindMS   Quantiles `json:"create_to_bind_ms"`
	BindToRunningMS  Quantiles `json:"bind_to_running_ms"`
	// API is the server's request latency over the measured phase, per
	// (verb, resource, scope), all clients; APIP99MS the p99 by verb.
	// APISource says where it came from; with "client", Client holds the
	// benchmark's own calls and APIError why the server's were not read.
	API       []APILatency       `json:"api"`
	APIP99MS  map[string]float64 `json:"api_p99_ms"`
	APISource string             `json:"api_source"`
	APIError  string             `json:"api_error,omitempty"`
	Client    []ClientLatency    `json:"client,omitempty"`
	// ServerCPUSeconds is the server's CPU over the measured phase:
	// embedded, this process's (server, etcd, scheduler, controllers,
	// simulated nodes and the benchmark's watch); on a cluster, from its
	// process_cpu_seconds_total when exported. ServerPeakRSSMiB is,
	// embedded, the process's peak RSS during the phase; on a cluster, its
	// process_resident_memory_bytes at the end.
	ServerCPUSeconds *float64 `json:"server_cpu_seconds"`
	ServerCPUCores   float64  `json:"server_cpu_cores,omitempty"`
	ServerPeakRSSMiB *float64 `json:"server_peak_rss_mib"`
	// RSSBeforeMiB and HeapBeforeMiB are the embedded process's memory
	// with the nodes up and no pods yet (heap after a GC); HeapAfterMiB
	// with every pod Running. HeapKiBPerPod is their difference per pod
	// created,
	// HeapKiBPerNode the heap before per node (an upper bound: it includes
	// the empty server's own).
	RSSBeforeMiB   *float64 `json:"rss_before_mib,omitempty"`
	HeapBeforeMiB  *float64 `json:"heap_before_mib,omitempty"`
	HeapAfterMiB   *float64 `json:"heap_after_mib,omitempty"`
	HeapKiBPerPod  *float64 `json:"heap_kib_per_pod,omitempty"`
	HeapKiBPerNode *float64 `json:"heap_kib_per_node,omitempty"`

	Targets  []TargetResult `json:"targets"`
	Failures []string       `json:"failures"`
	// OK: every pod Running and every target judged met.
	OK        bool    `json:"ok"`
	LoadStart float64 `json:"loadavg_start"`
	LoadEnd   float64 `json:"loadavg_end"`
}

// fill takes the tracker's figures, times relative to t0.
func (r *DensityRun) fill(s densitySnapshot, t0 time.Time) {
	since := func(t time.Time) float64 {
		if t.IsZero() {
			return 0
		}
		return round3(t.Sub(t0).Seconds())
	}
	r.Created, r.Scheduled, r.Running, r.Deleted = s.seen, s.bound, s.running, s.deletedEarly+s.deletedRunning
	r.SecondsToAllCreated, r.SecondsToAllScheduled, r.SecondsToAllRunning = since(s.lastSeen), since(s.lastBound), since(s.lastRunning)
	if r.SecondsToAllRunning > 0 {
		r.RunningPerSecond = round1(float64(r.Running) / r.SecondsToAllRunning)
	}
	r.PodStartupMS, r.PodStartupCTMS, r.CreateToBindMS, r.BindToRunningMS = s.startup, s.startupCT, s.toBind, s.toRun
	if r.HeapBeforeMiB != nil && r.HeapAfterMiB != nil {
		// Per pod that exists: a run that timed out has fewer than asked.
		if r.Created > 0 {
			v := round1((*r.HeapAfterMiB - *r.HeapBeforeMiB) * 1024 / float64(r.Created))
			r.HeapKiBPerPod = &v
		}
		if r.Nodes > 0 {
			v := round1(*r.HeapBeforeMiB * 1024 / float64(r.Nodes))
			r.HeapKiBPerNode = &v
		}
	}
}

// judge sets the targets and the verdict.
func (r *DensityRun) judge() {
	switch {
	case r.LatencyRunning > 0:
		p99 := r.LatencyStartupMS.P99
		r.Targets = append(r.Targets, TargetResult{Name: "latency pod startup p99 ms", Want: "<= 5000", Got: p99, Met: p99 <= densityStartupTargetMS})
	case r.LatencyPods == 0 && r.Running > 0:
		p99 := r.PodStartupMS.P99
		r.Targets = append(r.Targets, TargetResult{Name: "pod startup p99 ms", Want: "<= 5000", Got: p99, Met: p99 <= densityStartupTargetMS})
	}
	if r.APISource == APISourceServer {
		broken := densitySLOFailures(r.API)
		r.Targets = append(r.Targets, TargetResult{Name: "API groups over their p99 SLO", Want: "== 0", Got: float64(len(broken)), Met: len(broken) == 0})
		for _, b := range broken {
			slogBench("SLO missed: " + b)
		}
	}
	if r.Nodes == densityRefNodes && r.Pods == densityRefPods && r.Running == r.Pods {
		r.Targets = append(r.Targets, TargetResult{Name: "10000 pods on 1000 nodes all Running s", Want: "<= 15",
			Got: r.SecondsToAllRunning, Met: r.SecondsToAllRunning <= densityAllRunningTargetS})
	}
	r.OK = len(r.Failures) == 0
	for _, t := range r.Targets {
		r.OK = r.OK && t.Met
	}
}

// Failures are the runs' correctness problems: pods that never ran.
func (r *DensityResult) Failures() []string {
	var out []string
	for _, run := range r.Runs {
		out = append(out, run.Failures...)
	}
	return out
}

// Print writes the tables, then one JSON line per run.
func (r *DensityResult) Print(out io.Writer) error {
	where := "fresh embedded servers in this process (server, etcd, scheduler, controllers, simulated nodes and the benchmark share the CPUs)"
	if len(r.Runs) > 0 && r.Runs[0].Target == "kubeconfig" {
		where = r.Runs[0].Kubeconfig
	}
	fmt.Fprintf(out, "rudder bench density: one Deployment of small pods on simulated nodes (1 s start delay); %s\n", where)
	fmt.Fprintf(out, "%d CPUs, GOMAXPROCS %d, machine load average %.1f before, %.1f after; times from the Deployment's create, as seen by a watch\n",
		r.NumCPU, r.GOMAXPROCS, r.LoadStart, r.LoadEnd)
	for _, s := range r.Skipped {
		fmt.Fprintf(out, "skipped: %s\n", s)
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(out)
	fmt.Fprintln(tw, "nodes\tpods\trunning\tall created s\tall bound s\tall Running s\tpods/s\tstartup p50 ms\tp90 ms\tp99 ms\tbind p99 ms\tlatency pods\tp50 ms\tp99 ms\tcpu s\tcores\tpeak RSS MiB\theap KiB/pod\tok\t")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.2f\t%.2f\t%.2f\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%d\t%.0f\t%.0f\t%s\t%.2f\t%s\t%s\t%t\t\n", run.Nodes, run.Pods, run.Running,
			run.SecondsToAllCreated, run.SecondsToAllScheduled, run.SecondsToAllRunning, run.RunningPerSecond,
			run.PodStartupMS.P50, run.PodStartupMS.P90, run.PodStartupMS.P99, run.CreateToBindMS.P99,
			run.LatencyRunning, run.LatencyStartupMS.P50, run.LatencyStartupMS.P99,
			optNumber(run.ServerCPUSeconds), run.ServerCPUCores, optNumber(run.ServerPeakRSSMiB), optNumber(run.HeapKiBPerPod), run.OK)
	}
	tw.Flush()
	for _, run := range r.Runs {
		fmt.Fprintf(out, "\nAPI calls during %d nodes × %d pods (%s)\n", run.Nodes, run.Pods, densitySourceNote(run.APISource, run.APIError))
		printAPITable(out, run.API, run.Client)
		printTargets(out, run.Targets)
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

func densitySourceNote(source, apiErr string) string {
	if source == APISourceServer {
		return "the server's apiserver_request_duration_seconds, all clients; p99 interpolated in its buckets"
	}
	return "the benchmark's own calls only: " + apiErr
}

// printAPITable prints server-side groups, or else the client-side ones.
func printAPITable(out io.Writer, api []APILatency, client []ClientLatency) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(api) > 0 {
		fmt.Fprintln(tw, "verb\tresource\tscope\tcount\tp50 ms\tp99 ms\tSLO ms\tmet\t")
		for _, a := range api {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%.1f\t%.1f\t%.0f\t%t\t\n", a.Verb, a.Resource, a.Scope, a.Count, a.P50MS, a.P99MS, a.SLOMS, a.Met)
		}
	} else {
		fmt.Fprintln(tw, "verb\tresource\tcount\terrors\tp50 ms\tp90 ms\tp99 ms\tmax ms\t")
		for _, c := range client {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", c.Verb, c.Resource, c.Count, c.Errors, c.P50MS, c.P90MS, c.P99MS, c.MaxMS)
		}
	}
	tw.Flush()
}

func printTargets(out io.Writer, targets []TargetResult) {
	for _, t := range targets {
		verdict := "met"
		if !t.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(out, "  target %-40s want %-8s got %-10.1f %s\n", t.Name, t.Want, t.Got, verdict)
	}
}

func optNumber(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *v)
}

// Summaries are one per run.
func (r *DensityResult) Summaries() []Summary {
	out := make([]Summary, 0, len(r.Runs))
	for _, run := range r.Runs {
		all := run.SecondsToAllRunning
		startup := run.PodStartupMS
		s := Summary{Scenario: run.Scenario, Target: run.Target, Kubeconfig: run.Kubeconfig, Seed: run.Seed, Nodes: run.Nodes, Pods: run.Pods,
			SecondsToAllRunning: &all, PodStartupMS: &startup, APIP99MS: run.APIP99MS, APISource: run.APISource,
			ServerCPUSeconds: run.ServerCPUSeconds, ServerPeakRSSMiB: run.ServerPeakRSSMiB, LoadAvg: run.LoadEnd, OK: run.OK,
			Figures: map[string]float64{
				"seconds_to_all_created":   run.SecondsToAllCreated,
				"seconds_to_all_scheduled": run.SecondsToAllScheduled,
				"running_pods_per_second":  run.RunningPerSecond,
				"create_to_bind_p99_ms":    run.CreateToBindMS.P99,
				"bind_to_running_p99_ms":   run.BindToRunningMS.P99,
				"bring_up_seconds":         run.BringUpSeconds,
			}}
		if s.APIP99MS == nil {
			s.APIP99MS = map[string]float64{}
		}
		if run.HeapKiBPerPod != nil {
			s.Figures["heap_kib_per_pod"] = *run.HeapKiBPerPod
		}
		out = append(out, s)
	}
	return out
}

func slogBench(msg string) { slog.Info("bench: " + msg) }
