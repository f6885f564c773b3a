package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/bench"
)

func benchDensityCommand() *cobra.Command {
	var (
		cfg bench.DensityConfig
		out benchOutput
	)
	cmd := &cobra.Command{
		Use:   "density",
		Short: "Time to run a Deployment of M pods on N simulated nodes, and each pod's startup latency",
		Long: `Create one Deployment of M replicas (a pause container requesting 10m CPU and
16Mi, on simulated nodes only) on a cluster of N simulated nodes, and watch
its pods until all run. The deployment and replicaset controllers create
the pods, the scheduler binds them and the simulated nodes (1 s start
delay) report them Running, all through the API server. It measures:

  all Running      from the Deployment's create to the last pod seen Running
  pod startup      per pod, creation to Running seen by a watch (the SLO's
                   definition), p50/p90/p99; split into create→bind and
                   bind→Running
  API latency      p50/p99 per verb, resource and scope, from the server's
                   apiserver_request_duration_seconds (all clients), or the
                   benchmark's own calls where /metrics cannot be read
  server usage     CPU seconds and peak RSS; with the embedded server these
                   are this process's, the benchmark's watch included

Without --kubeconfig every size runs on a fresh embedded server (server,
etcd, scheduler, controllers and the simulated nodes) in a temporary
directory. With --kubeconfig it counts the cluster's Ready simulated nodes
and, if fewer than N, runs the shortfall here, deleting them afterwards.

Every --nodes × --pods combination runs, smallest first (or, with --pairs,
the i-th of each list); sizes with more than 110 pods per node are skipped.
"ok" is false when pod startup p99 exceeds 5 s, an API group's p99 exceeds
its SLO (mutating and single reads 1 s, lists 30 s), or, for 10000 pods on
1000 nodes, all Running takes more than 15 s. Pods not all Running within
--run-timeout is an error and ends the grid.

  rudder bench density
  rudder bench density --nodes 1000,2000,5000 --pods 10000,50000,150000 --pairs
  rudder bench density --nodes 100 --pods 1000 --json --compare ~/.kube/kind-config`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return out.run(cmd, cfg.Kubeconfig, func(kubeconfig string) (bench.Summarizer, error) {
				c := cfg
				c.Kubeconfig = kubeconfig
				res, err := bench.RunDensity(cmd.Context(), c)
				if res == nil {
					return nil, err
				}
				return res, err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "cluster to use (default: a fresh embedded server per size)")
	f.IntSliceVar(&cfg.Nodes, "nodes", []int{1000}, "simulated nodes (several values: one run each)")
	f.IntSliceVar(&cfg.Pods, "pods", []int{10000}, "Deployment replicas (several values: one run each)")
	f.BoolVar(&cfg.Pairs, "pairs", false, "run --nodes[i] with --pods[i] instead of every combination")
	f.Uint64Var(&cfg.Seed, "seed", 1, "recorded in the result; seeds the nodes started on an existing cluster")
	f.DurationVar(&cfg.RunTimeout, "run-timeout", 15*time.Minute, "upper bound on one size, bring-up included")
	f.IntVar(&cfg.LatencyPods, "latency-pods", 100, "pods created one at a time once the Deployment runs, as clusterloader2 measures the startup SLO on (-1: none; the target is then judged on the Deployment's pods)")
	f.Float64Var(&cfg.LatencyQPS, "latency-qps", 5, "creation rate of the latency pods, per second")
	f.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of each run's measured phase (server included when embedded) to this file, suffixed -NxM when several")
	out.register(f, true)
	return cmd
}
