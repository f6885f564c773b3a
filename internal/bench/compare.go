package bench

// Every scenario reports its own detailed result, but people comparing two
// runs, two clusters or two scenarios want the same few figures stated the
// same way. Summary is that common shape: `--json` prints one Summary per
// run and `--compare KUBECONFIG2` lines two runs' Summaries up figure by
// figure with the ratio B/A.

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// API latency sources (Summary.APISource).
const (
	// APISourceServer: the server's apiserver_request_duration_seconds
	// histogram, differenced over the run: every client's calls, as the
	// server timed them, in the server's (coarse) buckets.
	APISourceServer = "server"
	// APISourceClient: the benchmark's own calls, timed by the benchmark
	// from request sent to the last byte of the response.
	APISourceClient = "client"
)

// Summary is the figure set every scenario states the same way. A figure a
// scenario does not measure is null, never 0, so a machine can tell "not
// measured" from "zero".
type Summary struct {
	Scenario string `json:"scenario"`
	// Target is "embedded" (a fresh server in this process), "child" (a
	// server process the benchmark started) or "kubeconfig".
	Target     string `json:"target"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	Seed       uint64 `json:"seed"`
	Nodes      int    `json:"nodes"`
	Pods       int    `json:"pods"`
	// SecondsToAllRunning is density's time from the Deployment's create
	// to its last pod seen Running.
	SecondsToAllRunning *float64 `json:"seconds_to_all_running"`
	// PodsPerSecond is the scheduler scenario's throughput.
	PodsPerSecond *float64 `json:"pods_per_second"`
	// PodStartupMS is pod startup latency as Kubernetes' SLO defines it:
	// creation to Running observed by a watch.
	PodStartupMS *Quantiles `json:"pod_startup_ms"`
	// APIP99MS is the p99 API call latency by verb (create, get, list,
	// update, patch, delete, ...), from APISource.
	APIP99MS  map[string]float64 `json:"api_p99_ms"`
	APISource string             `json:"api_source,omitempty"`
	// ServerCPUSeconds and ServerPeakRSSMiB are the server's CPU time over
	// the measured phase and its peak resident memory. With an embedded
	// server they are this process's, clients included.
	ServerCPUSeconds *float64 `json:"server_cpu_seconds"`
	ServerPeakRSSMiB *float64 `json:"server_peak_rss_mib"`
	// Figures are the scenario's other headline numbers, by name.
	Figures map[string]float64 `json:"figures,omitempty"`
	// LoadAvg is the machine's one-minute load average at the end of the
	// run; above its CPU count, other work competed for the CPUs.
	LoadAvg float64 `json:"loadavg"`
	// OK is the scenario's verdict: correct, and every target it judges met.
	OK bool `json:"ok"`
	// Compare holds the same run against a second cluster (--compare).
	Compare *Comparison `json:"compare,omitempty"`
}

// Quantiles is a latency distribution in milliseconds.
type Quantiles struct {
	Count uint64  `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func quantilesOf(h *histogram) Quantiles {
	return Quantiles{Count: h.n, P50: round3(h.quantileMS(0.5)), P90: round3(h.quantileMS(0.9)), P99: round3(h.quantileMS(0.99)), Max: round3(h.maxMS())}
}

// Comparison is run B of a --compare, and B/A for every figure both runs
// have and A's is not zero.
type Comparison struct {
	Kubeconfig string             `json:"kubeconfig"`
	B          Summary            `json:"b"`
	Ratio      map[string]float64 `json:"ratio"`
}

// Summarizer is a scenario's result: its own report (Print: a table for
// people, then its JSON line) and its runs' Summaries, in run order.
type Summarizer interface {
	Print(io.Writer) error
	Summaries() []Summary
}

// Output prints a scenario's results. Without b it is a.Print, or with
// jsonOnly one Summary per line. With b (the same scenario run against a
// second cluster) it is both reports and a side-by-side table of every
// figure with B/A; with jsonOnly, A's Summaries with B and the ratios
// under "compare". Runs are paired in order; extra runs of either side
// are printed alone.
func Output(w io.Writer, jsonOnly bool, a, b Summarizer) error {
	sa := a.Summaries()
	var sb []Summary
	if b != nil {
		sb = b.Summaries()
		for i := range sa {
			if i < len(sb) {
				sa[i].Compare = compareSummaries(sa[i], sb[i])
			}
		}
	}
	if jsonOnly {
		for _, s := range sa {
			if err := printJSONLine(w, s); err != nil {
				return err
			}
		}
		for i := len(sa); i < len(sb); i++ {
			if err := printJSONLine(w, sb[i]); err != nil {
				return err
			}
		}
		return nil
	}
	if err := a.Print(w); err != nil {
		return err
	}
	if b == nil {
		return nil
	}
	fmt.Fprintln(w, "\n== B: the same scenario against", cmpLabel(sb))
	if err := b.Print(w); err != nil {
		return err
	}
	for _, s := range sa {
		if s.Compare != nil {
			printComparison(w, s)
		}
	}
	return nil
}

func printJSONLine(w io.Writer, v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", line)
	return err
}

func cmpLabel(s []Summary) string {
	if len(s) == 0 {
		return "(no runs)"
	}
	if s[0].Kubeconfig != "" {
		return s[0].Kubeconfig
	}
	return s[0].Target
}

// cmpFigure is one named number of a Summary.
type cmpFigure struct {
	name  string
	value float64
}

// figures flattens a Summary's numbers, in a fixed order, with dotted
// names (pod_startup_ms.p99, api_p99_ms.create, figures.x).
func (s Summary) figures() []cmpFigure {
	var out []cmpFigure
	add := func(name string, v *float64) {
		if v != nil {
			out = append(out, cmpFigure{name, *v})
		}
	}
	add("seconds_to_all_running", s.SecondsToAllRunning)
	add("pods_per_second", s.PodsPerSecond)
	if q := s.PodStartupMS; q != nil {
		out = append(out, cmpFigure{"pod_startup_ms.p50", q.P50}, cmpFigure{"pod_startup_ms.p90", q.P90}, cmpFigure{"pod_startup_ms.p99", q.P99})
	}
	for _, verb := range sortedKeys(s.APIP99MS) {
		out = append(out, cmpFigure{"api_p99_ms." + verb, s.APIP99MS[verb]})
	}
	add("server_cpu_seconds", s.ServerCPUSeconds)
	add("server_peak_rss_mib", s.ServerPeakRSSMiB)
	for _, k := range sortedKeys(s.Figures) {
		out = append(out, cmpFigure{"figures." + k, s.Figures[k]})
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// compareSummaries pairs b with a: B/A for each figure both have.
func compareSummaries(a, b Summary) *Comparison {
	c := &Comparison{Kubeconfig: b.Kubeconfig, B: b, Ratio: map[string]float64{}}
	bv := map[string]float64{}
	for _, f := range b.figures() {
		bv[f.name] = f.value
	}
	for _, f := range a.figures() {
		if v, ok := bv[f.name]; ok && f.value != 0 {
			c.Ratio[f.name] = round3(v / f.value)
		}
	}
	return c
}

// printComparison is the side-by-side table of one pair of runs: every
// figure of either, A, B and B/A ("-" where a side lacks it).
func printComparison(w io.Writer, a Summary) {
	b := a.Compare.B
	fmt.Fprintf(w, "\nCOMPARISON %s, %d nodes, %d pods: A = %s, B = %s (ratio B/A; for latencies, CPU and memory below 1 favours B)\n",
		a.Scenario, a.Nodes, a.Pods, cmpLabel([]Summary{a}), cmpLabel([]Summary{b}))
	af, bf := a.figures(), b.figures()
	bv := map[string]float64{}
	for _, f := range bf {
		bv[f.name] = f.value
	}
	names := make([]string, 0, len(af)+len(bf))
	av := map[string]float64{}
	for _, f := range af {
		av[f.name] = f.value
		names = append(names, f.name)
	}
	for _, f := range bf {
		if _, ok := av[f.name]; !ok {
			names = append(names, f.name)
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "figure\tA\tB\tB/A\t")
	cell := func(m map[string]float64, k string) string {
		if v, ok := m[k]; ok {
			return cmpNumber(v)
		}
		return "-"
	}
	for _, n := range names {
		ratio := "-"
		if r, ok := a.Compare.Ratio[n]; ok {
			ratio = fmt.Sprintf("%.2f", r)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", n, cell(av, n), cell(bv, n), ratio)
	}
	fmt.Fprintf(tw, "ok\t%t\t%t\t\t\n", a.OK, b.OK)
	tw.Flush()
}

func cmpNumber(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e12 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.3f", v)
}

// Summaries of the api scenario: one, for the whole run. API latencies are
// the benchmark's own calls (the CRUD stage), the worst p99 over the
// client counts run.
func (r *Result) Summaries() []Summary {
	s := Summary{Scenario: r.Scenario, Target: r.Target, Kubeconfig: r.Kubeconfig, Seed: r.Seed, LoadAvg: r.LoadEnd,
		APIP99MS: map[string]float64{}, Figures: map[string]float64{}, ServerCPUSeconds: r.ServerCPUSeconds, ServerPeakRSSMiB: r.ServerPeakRSSMiB}
	for _, o := range r.Ops {
		if o.Count == 0 {
			continue
		}
		s.APISource = APISourceClient
		s.APIP99MS[o.Op] = max(s.APIP99MS[o.Op], o.P99MS)
		s.Figures[fmt.Sprintf("%s_per_sec_c%d", o.Op, o.Clients)] = o.PerSec
		if o.Op == "create" {
			s.Pods = max(s.Pods, o.Count)
		}
	}
	for _, l := range r.List {
		if l.Encoding != "fill" {
			s.Figures[fmt.Sprintf("list_%d_%s_p99_ms", l.Pods, l.Encoding)] = l.P99MS
		}
	}
	for _, w := range r.Watch {
		s.Figures[fmt.Sprintf("watch_%d_e2e_p99_ms", w.Watchers)] = w.E2E.P99MS
		s.Figures[fmt.Sprintf("watch_%d_deliveries_per_sec", w.Watchers)] = w.DeliveriesPerSec
	}
	s.OK = len(r.Failures()) == 0 && !slices.ContainsFunc(r.Targets, func(t TargetResult) bool { return !t.Met })
	return []Summary{s}
}

// Summaries of the startup scenario: one, over its runs (medians). Its
// server is a child process; the RSS is the child's once its nodes were
// Ready, and its CPU is not measured.
func (r *StartupResult) Summaries() []Summary {
	rss := r.ServerRSSMiB
	s := Summary{Scenario: r.Scenario, Target: "child", Seed: r.Seed, Nodes: r.Nodes, LoadAvg: r.LoadEnd, OK: r.OK,
		APIP99MS: map[string]float64{}, ServerPeakRSSMiB: &rss,
		Figures: map[string]float64{
			"readyz_ms_p50":          r.Readyz.P50,
			"all_nodes_ready_ms_p50": r.NodesReady.P50,
			"warm_readyz_ms_p50":     r.WarmReadyz.P50,
		}}
	return []Summary{s}
}

// cmpJoin is for failure lists in one line.
func cmpJoin(parts []string) string { return strings.Join(parts, "; ") }
