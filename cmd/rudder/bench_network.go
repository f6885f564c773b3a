package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/bench"
	"github.com/rudder-dev/rudder/internal/netns"
	"github.com/rudder-dev/rudder/internal/proxy"
)

// networkResult is one row of `rudder bench network`: a sub-benchmark
// at one size, its figures by name, and whether it met its target.
type networkResult struct {
	Part    string             `json:"part"`
	Size    string             `json:"size"`
	Figures map[string]float64 `json:"figures"`
	Target  string             `json:"target,omitempty"`
	OK      bool               `json:"ok"`
}

// networkPart is one sub-benchmark of `rudder bench network`; new parts
// (DNS, connect latency, throughput) go in networkParts.
type networkPart struct {
	name string
	help string
	run  func(cfg networkConfig, emit func(networkResult)) error
}

type networkConfig struct {
	proxySizes []int
	endpoints  int
	dir        string
	trips      int           // connect: round trips per path
	duration   time.Duration // throughput: length of each stream
}

var networkParts = []networkPart{
	{name: "proxy-sync", help: "service proxy: full sync of N services × E endpoints, then one endpoint changed (median of 7)", run: benchProxySync},
	{name: "connect", help: "client pod to server pod: new TCP connection + 64 B request/response, direct vs ClusterIP vs NodePort, same node and across nodes (p50/p99)", run: benchConnect},
	{name: "throughput", help: "one bulk TCP stream pod to pod across two nodes (host-gw, VXLAN) vs veth-to-veth direct", run: benchThroughput},
}

func benchNetworkCommand() *cobra.Command {
	var (
		cfg   networkConfig
		sizes string
		parts []string
		jsonO bool
	)
	var names []string
	for _, p := range networkParts {
		names = append(names, p.name+": "+p.help)
	}
	cmd := &cobra.Command{
		Use:   "network",
		Short: "Cluster networking: service proxy sync time, connect latency, pod-network throughput",
		Long: `Sub-benchmarks of cluster networking, each run inside network namespaces
the benchmark creates and removes (nothing touches the host's network):

  ` + strings.Join(names, "\n  ") + `

Targets (issue 16): 10,000 services × 10 endpoints fully synced in ≤ 1 s,
growing linearly; one endpoint change in ≤ 20 ms. connect and throughput
have no fixed target: each path is reported beside its reference measured
in the same run (a direct pod connect; a veth pair between two namespaces).
Needs root.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Geteuid() != 0 {
				return fmt.Errorf("rudder bench network needs root (it creates network namespaces)")
			}
			for _, s := range strings.Split(sizes, ",") {
				n, err := strconv.Atoi(strings.TrimSpace(s))
				if err != nil || n <= 0 {
					return fmt.Errorf("--services %q: want positive counts separated by commas", sizes)
				}
				cfg.proxySizes = append(cfg.proxySizes, n)
			}
			if cfg.endpoints <= 0 {
				return fmt.Errorf("--endpoints must be positive")
			}
			if cfg.trips <= 0 || cfg.duration <= 0 {
				return fmt.Errorf("--trips and --duration must be positive")
			}
			for _, p := range parts {
				if !slices.ContainsFunc(networkParts, func(np networkPart) bool { return np.name == p }) {
					return fmt.Errorf("--part %q: unknown part", p)
				}
			}
			dir, err := os.MkdirTemp("", "rudder-bench-network-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			cfg.dir = dir
			var results []networkResult
			emit := func(r networkResult) {
				results = append(results, r)
				if jsonO {
					b, _ := json.Marshal(r)
					fmt.Fprintln(cmd.OutOrStdout(), string(b))
				}
			}
			for _, p := range networkParts {
				if len(parts) > 0 && !slices.Contains(parts, p.name) {
					continue
				}
				if err := p.run(cfg, emit); err != nil {
					return fmt.Errorf("%s: %w", p.name, err)
				}
			}
			if !jsonO {
				printNetworkTable(cmd.OutOrStdout(), results)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sizes, "services", "1000,5000,10000", "proxy-sync: service counts to measure")
	f.IntVar(&cfg.endpoints, "endpoints", 10, "proxy-sync: endpoints per service")
	f.IntVar(&cfg.trips, "trips", 2000, "connect: round trips (one new connection each) per path")
	f.DurationVar(&cfg.duration, "duration", 2*time.Second, "throughput: length of each stream")
	f.StringSliceVar(&parts, "part", nil, "run only these sub-benchmarks (default: all)")
	f.BoolVar(&jsonO, "json", false, "print one JSON object per result instead of the table")
	return cmd
}

func benchProxySync(cfg networkConfig, emit func(networkResult)) error {
	for i, n := range cfg.proxySizes {
		ns, err := netns.Pinned(cfg.dir, fmt.Sprintf("proxy-%d", i))
		if err != nil {
			return err
		}
		res, err := proxy.MeasureSync(ns.Path(), n, cfg.endpoints)
		ns.Close()
		if err != nil {
			return err
		}
		full, one, cpu := ms(res.Full), ms(res.OneEndpoint), ms(res.FullCPU)
		// The targets scale with size: 1 s per 10,000 services.
		fullTarget := float64(n) / 10000 * 1000
		emit(networkResult{
			Part: "proxy-sync", Size: fmt.Sprintf("%d svc × %d ep", n, cfg.endpoints),
			Figures: map[string]float64{"full_sync_ms": full, "full_sync_cpu_ms": cpu, "one_endpoint_ms": one, "endpoint_removed_ms": ms(res.EndpointRemoved), "rules": float64(res.Rules), "us_per_service": full * 1000 / float64(n)},
			Target:  fmt.Sprintf("full ≤ %.0f ms, one ≤ 20 ms", fullTarget),
			OK:      full <= fullTarget && one <= 20,
		})
	}
	return nil
}

func benchConnect(cfg networkConfig, emit func(networkResult)) error {
	rs, err := bench.RunConnect(context.Background(), cfg.trips)
	if err != nil {
		return err
	}
	direct := map[string]bench.ConnectResult{}
	for _, r := range rs {
		if r.Path == "direct" {
			direct[r.Placement] = r
		}
	}
	for _, r := range rs {
		f := map[string]float64{"p50_us": us(r.P50), "p99_us": us(r.P99), "mean_us": us(r.Mean)}
		if d, ok := direct[r.Placement]; ok && r.Path != "direct" && d.P50 > 0 {
			f["p50_vs_direct"] = float64(r.P50) / float64(d.P50)
			f["p99_vs_direct"] = float64(r.P99) / float64(d.P99)
		}
		emit(networkResult{Part: "connect", Size: fmt.Sprintf("%s %s × %d", r.Placement, r.Path, r.Trips), Figures: f, OK: true})
	}
	return nil
}

func benchThroughput(cfg networkConfig, emit func(networkResult)) error {
	rs, err := bench.RunThroughput(context.Background(), cfg.duration)
	if err != nil {
		return err
	}
	var ref float64
	for _, r := range rs {
		if r.Path == "veth-direct" {
			ref = r.Gbps
		}
	}
	for _, r := range rs {
		f := map[string]float64{"gbit_s": r.Gbps, "mib": float64(r.Bytes) / (1 << 20), "seconds": r.Elapsed.Seconds()}
		if ref > 0 && r.Path != "veth-direct" {
			f["vs_veth"] = r.Gbps / ref
		}
		emit(networkResult{Part: "throughput", Size: fmt.Sprintf("%s, 1 stream", r.Path), Figures: f, OK: true})
	}
	return nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func printNetworkTable(w io.Writer, rs []networkResult) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PART\tSIZE\tFIGURES\tTARGET\tOK")
	for _, r := range rs {
		keys := make([]string, 0, len(r.Figures))
		for k := range r.Figures {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var fs []string
		for _, k := range keys {
			fs = append(fs, fmt.Sprintf("%s=%.4g", k, r.Figures[k]))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%v\n", r.Part, r.Size, strings.Join(fs, " "), r.Target, r.OK)
	}
	tw.Flush()
}
