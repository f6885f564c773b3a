package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/rudder-dev/rudder/internal/bench"
)

func benchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run a benchmark scenario and print a table and a JSON line",
	}
	cmd.AddCommand(benchAPICommand(), benchStartupCommand(), benchSchedulerCommand(), benchDensityCommand(), benchChurnCommand(), benchPodsCommand(), benchCRICommand(), benchDNSCommand(), benchNetworkCommand())
	return cmd
}

// benchOutput is every scenario's --json and --compare.
type benchOutput struct {
	json    bool
	compare string
}

// register adds the flags; withCompare is false for scenarios that
// cannot run against a given cluster.
func (o *benchOutput) register(f *pflag.FlagSet, withCompare bool) {
	f.BoolVar(&o.json, "json", false, "print only one JSON object per run, with the figures every scenario shares (scenario, nodes, pods, pod_startup_ms, api_p99_ms, server_cpu_seconds, server_peak_rss_mib, ok, ...)")
	if withCompare {
		f.StringVar(&o.compare, "compare", "", "also run the scenario against the cluster of this kubeconfig and print both side by side, with the ratio B/A per figure")
	}
}

// run runs a scenario (against kubeconfig, "" for embedded), and again
// against --compare when given, then prints. It fails on a run's error or
// its correctness failures; a missed performance target is only reported.
func (o *benchOutput) run(cmd *cobra.Command, kubeconfig string, scenario func(kubeconfig string) (bench.Summarizer, error)) error {
	a, errA := scenario(kubeconfig)
	if a == nil {
		return errA
	}
	var b bench.Summarizer
	var errB error
	if o.compare != "" && errA == nil {
		if b, errB = scenario(o.compare); errB != nil && b == nil {
			errB = fmt.Errorf("--compare %s: %w", o.compare, errB)
		}
	}
	if err := bench.Output(cmd.OutOrStdout(), o.json, a, b); err != nil {
		return err
	}
	for _, r := range []bench.Summarizer{a, b} {
		if f, ok := r.(interface{ Failures() []string }); ok && len(f.Failures()) > 0 {
			return fmt.Errorf("benchmark failed: %s", strings.Join(f.Failures(), "; "))
		}
	}
	if errA != nil {
		return errA
	}
	return errB
}

func benchStartupCommand() *cobra.Command {
	var (
		cfg bench.StartupConfig
		out benchOutput
	)
	cmd := &cobra.Command{
		Use:   "startup",
		Short: "Cold start of rudder server to /readyz and to all simulated nodes Ready",
		Long: `Start this rudder binary as a child process, ` + "`rudder server --simulated-nodes N`" + `,
in a fresh temporary data directory, and measure from just before exec:

  cold readyz    first 200 from /readyz (polled every 5 ms)
  nodes Ready    all N simulated nodes Ready=True (listed every 20 ms)
  RSS            the server's resident memory once the nodes are Ready
  warm readyz    /readyz again after a SIGTERM and a restart on the same data dir

It prints a table, then one JSON line (with --json, only the JSON object
every scenario shares); "ok" is false when the cold start to /readyz (p50)
misses the 1 s target. A server that fails to start or to get its nodes
Ready within --run-timeout is an error.

  rudder bench startup
  rudder bench startup --nodes 1000 --runs 2 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Log = cmd.ErrOrStderr()
			return out.run(cmd, cfg.Kubeconfig, func(kubeconfig string) (bench.Summarizer, error) {
				res, err := bench.RunStartup(cmd.Context(), cfg)
				if res == nil {
					return nil, err
				}
				return res, err
			})
		},
	}
	f := cmd.Flags()
	out.register(f, false)
	f.IntVar(&cfg.Nodes, "nodes", 100, "simulated nodes the server starts")
	f.IntVar(&cfg.Runs, "runs", 3, "runs, each a cold and a warm start in a fresh data dir")
	f.Uint64Var(&cfg.Seed, "seed", 1, "recorded in the result (startup has no randomness of its own)")
	f.DurationVar(&cfg.RunTimeout, "run-timeout", 60*time.Second, "upper bound on one run")
	// Accepted only to reject it clearly: the scenario must start the
	// servers it measures, so an existing cluster cannot be used.
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "not supported: startup measures servers it starts itself")
	return cmd
}

func benchAPICommand() *cobra.Command {
	var (
		cfg bench.Config
		out benchOutput
	)
	cmd := &cobra.Command{
		Use:   "api",
		Short: "API server throughput and latency: CRUD, LIST from the watch cache, watch fan-out",
		Long: `Measure the API server with client-go clients (protobuf, no client-side rate
limit, spread over several HTTP/2 connections):

  crud   create, update, get, list and delete of pods by C concurrent clients
  list   LIST resourceVersion=0 of N pods, protobuf and JSON
  watch  W watchers each receiving E pod updates written at a fixed rate:
         delivery latency, lost and out-of-order events

Without --kubeconfig it starts a fresh embedded server (etcd included) in a
temporary directory, in this process, and removes it afterwards. With
--kubeconfig it works in a namespace of its own, deleted at the end.

It prints a table, then one JSON line; with --json, only the JSON object
every scenario shares; with --compare KUBECONFIG2, the same run against
that cluster and both side by side with B/A. It exits non-zero if a request
failed or a watch event was lost or out of order; a missed performance
target is reported, not an error.

  rudder bench api
  rudder bench api --json --compare ~/.kube/kind-config
  rudder bench api --list-sizes 1000,5000,10000 --stages list
  rudder bench api --clients 16,64,256 --stages crud
  rudder bench api --kubeconfig ~/.kube/config --watchers 100`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return out.run(cmd, cfg.Kubeconfig, func(kubeconfig string) (bench.Summarizer, error) {
				c := cfg
				c.Kubeconfig = kubeconfig
				res, err := bench.Run(cmd.Context(), c)
				if res == nil {
					return nil, err
				}
				return res, err
			})
		},
	}
	f := cmd.Flags()
	out.register(f, true)
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "cluster to measure (default: a fresh embedded server in a temp dir)")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the generated pods")
	f.StringSliceVar(&cfg.Stages, "stages", []string{bench.StageList, bench.StageCRUD, bench.StageWatch}, "stages to run: list, crud, watch")
	f.IntSliceVar(&cfg.Clients, "clients", []int{64}, "concurrent clients of the CRUD stage (several values: one run each)")
	f.IntVar(&cfg.Objects, "objects", 10000, "pods each CRUD run creates, updates, gets and deletes")
	f.IntSliceVar(&cfg.ListSizes, "list-sizes", []int{10000}, "namespace sizes to LIST, ascending")
	f.IntVar(&cfg.ListReps, "list-reps", 10, "timed LISTs per size and encoding")
	f.IntSliceVar(&cfg.Watchers, "watchers", []int{1000}, "concurrent watchers (several values: one run each)")
	f.IntVar(&cfg.Events, "events", 10000, "events every watcher must receive")
	f.Float64Var(&cfg.EventRate, "event-rate", bench.DefaultEventRate, "watch stage writes per second")
	f.IntVar(&cfg.Writers, "writers", 8, "watch stage writers sharing the event rate")
	f.StringVar(&cfg.WatchDecode, "watch-decode", bench.DecodeFull, "how watchers decode events: full (typed pods, as informers) or metadata (the server still sends full pods)")
	f.DurationVar(&cfg.Drain, "drain", 30*time.Second, "after the last write, how long watchers may take to catch up")
	f.IntVar(&cfg.Connections, "connections", 16, "separate HTTP/2 connections the clients and watchers are spread over")
	f.DurationVar(&cfg.StageTimeout, "stage-timeout", 10*time.Minute, "upper bound on every stage")
	f.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the stages (server included when embedded) to this file")
	return cmd
}
