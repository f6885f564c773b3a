package main

import (
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
}

var networkParts = []networkPart{
	{name: "proxy-sync", help: "service proxy: full sync of N services × E endpoints, then one endpoint changed (median of 7)", run: benchProxySync},
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
		Short: "Cluster networking: service proxy sync time (and more parts as they come)",
		Long: `Sub-benchmarks of cluster networking, each run inside network namespaces
the benchmark creates and removes (nothing touches the host's network):

  ` + strings.Join(names, "\n  ") + `

Targets (issue 16): 10,000 services × 10 endpoints fully synced in ≤ 1 s,
growing linearly; one endpoint change in ≤ 20 ms. Needs root.`,
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
	f.StringSliceVar(&parts, "part", nil, "run only these sub-benchmarks (default: all)")
	f.BoolVar(&jsonO, "json", false, "print one JSON object per result instead of the table")
	return cmd
}

func benchProxySync(cfg networkConfig, emit func(networkResult)) error {
	for i, n := range cfg.proxySizes {
		ns, err := proxy.NewNetNS(cfg.dir, fmt.Sprintf("proxy-%d", i))
		if err != nil {
			return err
		}
		res, err := proxy.MeasureSync(ns.Path, n, cfg.endpoints)
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
