package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/bench"
)

func benchSchedulerCommand() *cobra.Command {
	var cfg bench.SchedulerConfig
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Scheduler throughput and latency on scheduler_perf-style workloads",
		Long: `Measure rudder's scheduler placing pods on a cluster of N nodes that already
runs some pods, as upstream's scheduler_perf does. Scenarios (--scenario):

  basic          5000 nodes (32 CPU, 128Gi, 110 pods, 3 zones), 1000 existing
                 pods, then 10000 measured pods of 100m CPU, 128Mi
  spread         as basic; measured pods spread over zones, maxSkew 1,
                 DoNotSchedule, per app label (--apps)
  antiaffinity   5000 nodes, 1000 existing, 1000 measured pods in --groups
                 label groups, each repelling its group per node
  preemption     500 nodes of 4 CPU filled by 4 low-priority 1-CPU pods each,
                 then one high-priority 1-CPU pod per node: each must preempt
  unschedulable  as basic, plus 1000 pods that never fit parked first, while
                 every 100 ms a big tainted node is added (waking them, in
                 vain) and the previous one removed

Modes (--mode):

  algorithm  the scheduler alone over a fake clientset preloaded with the
             cluster; binds are recorded in-process, events are off. Timed
             from the first measured pod popped to the last one bound.
  e2e        through a fresh embedded API server and etcd (no controllers,
             no scheduler of its own) or --kubeconfig: nodes and pods are
             created through the API by concurrent clients, binds seen by a
             watch. Timed from the first create to the last bind seen.

Every scenario × mode runs at every --nodes size. It prints a table, then
one JSON line per run; "ok" is false when a pod was not bound, a placement
broke a constraint, or a target was missed (algorithm basic >= 20000
pods/s, algorithm spread/antiaffinity >= 3000, e2e basic >= 2000, judged at
5000 nodes). It exits non-zero on correctness failures only.

  rudder bench scheduler
  rudder bench scheduler --scenario basic,spread --mode algorithm,e2e
  rudder bench scheduler --nodes 500,1000,2000,5000
  rudder bench scheduler --scenario preemption --mode e2e --cpuprofile cpu.out`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			res, err := bench.RunScheduler(cmd.Context(), cfg)
			if res != nil {
				if perr := res.Print(cmd.OutOrStdout()); perr != nil {
					return perr
				}
			}
			if err != nil {
				return err
			}
			if f := res.Failures(); len(f) > 0 {
				return fmt.Errorf("benchmark failed: %s", strings.Join(f, "; "))
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&cfg.Scenarios, "scenario", []string{bench.SchedBasic}, "scenarios: "+strings.Join(bench.SchedScenarios, ", "))
	f.StringSliceVar(&cfg.Modes, "mode", []string{bench.ModeAlgorithm}, "modes: algorithm, e2e")
	f.IntSliceVar(&cfg.Nodes, "nodes", nil, "cluster sizes, one run each (default: the scenario's)")
	f.IntVar(&cfg.InitPods, "init-pods", 0, "pods bound before the run (0: the scenario's default, -1: none)")
	f.IntVar(&cfg.Pods, "pods", 0, "measured pods (0: the scenario's default)")
	f.IntVar(&cfg.ParkedPods, "parked-pods", 0, "unschedulable scenario's pods that never fit (0: 1000, -1: none)")
	f.IntVar(&cfg.Groups, "groups", 20, "antiaffinity scenario's label groups")
	f.IntVar(&cfg.Apps, "apps", 10, "spread scenario's app labels")
	f.DurationVar(&cfg.ChurnInterval, "churn-interval", 100*time.Millisecond, "unschedulable scenario's node add/remove period")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the generated objects and of the scheduler's tie-breaking")
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "e2e mode: cluster to use (default: a fresh embedded server); the scheduler runs here under its own name")
	f.IntVar(&cfg.Clients, "clients", 32, "e2e mode: concurrent clients creating nodes and pods")
	f.IntVar(&cfg.Parallelism, "parallelism", 0, "scheduler filter/score goroutines (0: GOMAXPROCS)")
	f.DurationVar(&cfg.RunTimeout, "run-timeout", 10*time.Minute, "upper bound on one run")
	f.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of each run's measured phase to this file (suffixed per run when several)")
	f.StringVar(&cfg.Trace, "trace", "", "write a runtime execution trace of each run's measured phase to this file, for go tool trace (suffixed per run when several)")
	f.StringVar(&cfg.MemProfile, "memprofile", "", "write a heap (allocations) profile after each run to this file (suffixed per run when several)")
	return cmd
}
