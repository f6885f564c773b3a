package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// Result is everything one run measured. It is printed as a table for
// people and as one JSON line (the last line of output) for machines.
type Result struct {
	Scenario string `json:"scenario"`
	Seed     uint64 `json:"seed"`
	// Target is "embedded" (a fresh server in this process) or "kubeconfig".
	Target     string `json:"target"`
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// InProcess is true when the server runs in the benchmark's process: the
	// clients and the server then share the CPUs below, and every figure
	// includes the clients' own cost (TLS, decoding).
	InProcess     bool    `json:"in_process"`
	NumCPU        int     `json:"num_cpu"`
	GOMAXPROCS    int     `json:"gomaxprocs"`
	GoVersion     string  `json:"go_version"`
	ServerVersion string  `json:"server_version"`
	Connections   int     `json:"connections"`
	Seconds       float64 `json:"seconds"`
	// LoadStart and LoadEnd are the machine's one-minute load average
	// before and after: above NumCPU, other work competed for the CPUs.
	LoadStart float64 `json:"loadavg_start"`
	LoadEnd   float64 `json:"loadavg_end"`
	// ServerCPUSeconds and ServerPeakRSSMiB are this process's CPU time
	// over the stages and its peak RSS, when the server is embedded (and
	// so include the clients); absent otherwise.
	ServerCPUSeconds *float64 `json:"server_cpu_seconds,omitempty"`
	ServerPeakRSSMiB *float64 `json:"server_peak_rss_mib,omitempty"`

	Ops     []OpResult     `json:"ops"`
	List    []ListResult   `json:"list"`
	Watch   []WatchResult  `json:"watch"`
	Targets []TargetResult `json:"targets"`
}

// OpResult is one CRUD phase: Count operations by Clients concurrent
// clients, each latency measured from request sent to response decoded.
type OpResult struct {
	Op         string  `json:"op"`
	Clients    int     `json:"clients"`
	Count      int     `json:"count"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
	Seconds    float64 `json:"seconds"`
	PerSec     float64 `json:"per_sec"`
	CPUCores   float64 `json:"cpu_cores"`
	// CPUPerOpUS is the process's CPU time per operation, server and client
	// together when the server is embedded.
	CPUPerOpUS float64 `json:"cpu_per_op_us"`
	summary
}

// ListResult is LIST rv=0 of a namespace of Pods pods in one encoding.
// Latency runs from request sent to the last byte received; DecodeMS is
// the client's cost of turning those bytes into a PodList, once.
type ListResult struct {
	Pods     int     `json:"pods"`
	Encoding string  `json:"encoding"`
	Reps     int     `json:"reps"`
	Bytes    int     `json:"bytes"`
	ColdMS   float64 `json:"cold_ms"`
	DecodeMS float64 `json:"decode_ms"`
	Errors   int     `json:"errors"`
	summary
}

// WatchResult is one watch fan-out run. Delivery latency is measured two
// ways: E2E from the wall-clock timestamp the writer put in the object just
// before sending the write (so it includes the write itself), and Ack from
// the moment the writer got the write's response (an event may arrive
// before that: such deliveries count as 0).
type WatchResult struct {
	Watchers int `json:"watchers"`
	Events   int `json:"events"`
	Writers  int `json:"writers"`
	// Decode is how watchers decode events: "full" (typed Pods) or
	// "metadata" (ObjectMeta only); the server sends full pods either way.
	Decode      string  `json:"decode"`
	TargetRate  float64 `json:"target_events_per_sec"`
	Rate        float64 `json:"events_per_sec"`
	WriteErrors int     `json:"write_errors"`
	// SetupSeconds is the time to open all the watches.
	SetupSeconds float64 `json:"setup_seconds"`
	// Seconds runs from the first write to the last delivery.
	Seconds          float64 `json:"seconds"`
	Expected         uint64  `json:"expected"`
	Delivered        uint64  `json:"delivered"`
	Lost             uint64  `json:"lost"`
	Duplicates       uint64  `json:"duplicates"`
	OutOfOrder       uint64  `json:"out_of_order"`
	ClosedEarly      int     `json:"closed_early"`
	FirstError       string  `json:"first_error,omitempty"`
	FirstWriteError  string  `json:"first_write_error,omitempty"`
	DeliveriesPerSec float64 `json:"deliveries_per_sec"`
	// CPUCores is the process's average CPU use during the run.
	CPUCores float64 `json:"cpu_cores"`
	// CPUPerDeliveryUS is the process's CPU time per delivered event: the
	// cost of the whole path, writes, fan-out and the watchers' decoding.
	CPUPerDeliveryUS float64 `json:"cpu_per_delivery_us"`
	E2E              summary `json:"e2e"`
	Ack              summary `json:"ack"`
	Write            summary `json:"write"`
}

// TargetResult compares a figure with the target, when the run used
// the target's parameters.
type TargetResult struct {
	Name string  `json:"name"`
	Want string  `json:"want"`
	Got  float64 `json:"got"`
	Met  bool    `json:"met"`
}

// Failures are the correctness problems of a run: errors, lost or
// out-of-order events. A missed performance target is not one.
func (r *Result) Failures() []string {
	var out []string
	for _, o := range r.Ops {
		if o.Errors > 0 {
			out = append(out, fmt.Sprintf("%s at %d clients: %d errors (first: %s)", o.Op, o.Clients, o.Errors, o.FirstError))
		}
	}
	for _, l := range r.List {
		if l.Errors > 0 {
			out = append(out, fmt.Sprintf("list of %d pods in %s: %d errors", l.Pods, l.Encoding, l.Errors))
		}
	}
	for _, w := range r.Watch {
		if w.Lost > 0 || w.OutOfOrder > 0 || w.Duplicates > 0 || w.WriteErrors > 0 || w.ClosedEarly > 0 {
			out = append(out, fmt.Sprintf("watch with %d watchers: %d lost, %d out of order, %d duplicates, %d write errors %s %s",
				w.Watchers, w.Lost, w.OutOfOrder, w.Duplicates, w.WriteErrors, w.FirstError, w.FirstWriteError))
		}
	}
	return out
}

// evaluateTargets adds the targets that this run's parameters
// allow judging.
func (r *Result) evaluateTargets() {
	r.Targets = []TargetResult{}
	for _, o := range r.Ops {
		if o.Op == "create" && o.Clients == 64 {
			r.Targets = append(r.Targets, TargetResult{Name: "pod creates/s at 64 clients", Want: ">= 2000", Got: o.PerSec, Met: o.PerSec >= 2000})
		}
	}
	for _, l := range r.List {
		if l.Pods == 10000 && l.Encoding == "protobuf" {
			r.Targets = append(r.Targets, TargetResult{Name: "LIST 10k pods rv=0 protobuf p99 ms", Want: "<= 150", Got: l.P99MS, Met: l.P99MS <= 150})
		}
	}
	for _, w := range r.Watch {
		if w.Watchers == 1000 && w.Events == 10000 {
			r.Targets = append(r.Targets,
				TargetResult{Name: "watch 1000x10000 delivery p99 ms", Want: "<= 250", Got: w.E2E.P99MS, Met: w.E2E.P99MS <= 250},
				TargetResult{Name: "watch 1000x10000 lost", Want: "== 0", Got: float64(w.Lost), Met: w.Lost == 0})
		}
	}
}

// Print writes the table, then the JSON line.
func (r *Result) Print(out io.Writer) error {
	where := "a Kubernetes API server from --kubeconfig"
	if r.InProcess {
		where = fmt.Sprintf("an embedded server in this process: clients and server share %d CPUs (GOMAXPROCS %d)", r.NumCPU, r.GOMAXPROCS)
	}
	fmt.Fprintf(out, "rudder bench api: %s, server %s, seed %d, %d connections, %.1fs\n", where, r.ServerVersion, r.Seed, r.Connections, r.Seconds)
	fmt.Fprintf(out, "machine load average %.1f before, %.1f after (%d CPUs); \"cpu\" columns are this process's cores in use\n", r.LoadStart, r.LoadEnd, r.NumCPU)

	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	if len(r.Ops) > 0 {
		fmt.Fprintln(out, "\nCRUD (pods; get and list are consistent reads; list selects 1% of the namespace)")
		fmt.Fprintln(tw, "op\tclients\tcount\terrors\tops/s\tp50 ms\tp99 ms\tmax ms\tcpu\tcpu µs/op\t")
		for _, o := range r.Ops {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.0f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f\t\n", o.Op, o.Clients, o.Count, o.Errors, o.PerSec, o.P50MS, o.P99MS, o.MaxMS, o.CPUCores, o.CPUPerOpUS)
		}
		tw.Flush()
	}
	if len(r.List) > 0 {
		fmt.Fprintln(out, "\nLIST rv=0 from the watch cache (latency to the last byte; decode is the client's, once)")
		fmt.Fprintln(tw, "pods\tencoding\tbytes\tcold ms\tp50 ms\tp99 ms\treps\tdecode ms\t")
		for _, l := range r.List {
			fmt.Fprintf(tw, "%d\t%s\t%d\t%.1f\t%.1f\t%.1f\t%d\t%.1f\t\n", l.Pods, l.Encoding, l.Bytes, l.ColdMS, l.P50MS, l.P99MS, l.Reps, l.DecodeMS)
		}
		tw.Flush()
	}
	if len(r.Watch) > 0 {
		fmt.Fprintln(out, "\nWATCH fan-out (e2e: from the timestamp in the object, set before the write; ack: from the write's response)")
		fmt.Fprintln(tw, "watchers\tevents\tdecode\tevents/s\tdelivered\tlost\tout-of-order\tdeliveries/s\te2e p50 ms\te2e p99 ms\tack p50 ms\tack p99 ms\twrite p99 ms\tcpu\tcpu µs/delivery\t")
		for _, w := range r.Watch {
			fmt.Fprintf(tw, "%d\t%d\t%s\t%.0f\t%d\t%d\t%d\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.2f\t%.1f\t\n", w.Watchers, w.Events, w.Decode, w.Rate, w.Delivered, w.Lost, w.OutOfOrder,
				w.DeliveriesPerSec, w.E2E.P50MS, w.E2E.P99MS, w.Ack.P50MS, w.Ack.P99MS, w.Write.P99MS, w.CPUCores, w.CPUPerDeliveryUS)
		}
		tw.Flush()
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(out, "\nTARGETS")
		for _, t := range r.Targets {
			verdict := "met"
			if !t.Met {
				verdict = "MISSED"
			}
			fmt.Fprintf(out, "  %-40s want %-8s got %-10.1f %s\n", t.Name, t.Want, t.Got, verdict)
		}
	}
	if f := r.Failures(); len(f) > 0 {
		fmt.Fprintf(out, "\nFAILURES\n  %s\n", strings.Join(f, "\n  "))
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s\n", line)
	return nil
}
