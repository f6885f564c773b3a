package main

import (
	"time"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/bench"
)

func benchChurnCommand() *cobra.Command {
	var (
		cfg bench.ChurnConfig
		out benchOutput
	)
	cmd := &cobra.Command{
		Use:   "churn",
		Short: "API and watch latency while pods and services are created and deleted at a steady rate",
		Long: `Create pods and services at a fixed rate on a cluster of N simulated nodes and
delete each one --lifetime later, while the scheduler, the simulated nodes
and the endpointslice controller react. The schedule is fixed by --seed.
It measures:

  API latency     the benchmark's own calls by verb and resource (client
                  side, p50/p90/p99), and every client's from the server's
                  apiserver_request_duration_seconds (p50/p99 and the SLO)
  watch latency   from just before each write is sent to its event seen by
                  a watch: ADDED for creates, the deletionTimestamp
                  (pods, deleted gracefully) or DELETED (services) for deletes
  pod startup     creation to Running seen, for the churned pods
  schedule lag    how late writes left against their schedule

Without --kubeconfig it runs on a fresh embedded server; with it, it tops
the cluster up with simulated nodes as "rudder bench density" does.

It exits non-zero if a write failed, an event never arrived or a live pod
never ran; "ok" is also false when pod startup p99 exceeds 5 s or an API
group's p99 exceeds its SLO.

  rudder bench churn
  rudder bench churn --rate 200 --duration 2m --nodes 500
  rudder bench churn --json --compare ~/.kube/kind-config`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return out.run(cmd, cfg.Kubeconfig, func(kubeconfig string) (bench.Summarizer, error) {
				c := cfg
				c.Kubeconfig = kubeconfig
				res, err := bench.RunChurn(cmd.Context(), c)
				if res == nil {
					return nil, err
				}
				return res, err
			})
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Kubeconfig, "kubeconfig", "", "cluster to use (default: a fresh embedded server)")
	f.IntVar(&cfg.Nodes, "nodes", 1000, "simulated nodes")
	f.Float64Var(&cfg.Rate, "rate", 50, "creates per second (as many deletes once objects reach --lifetime)")
	f.DurationVar(&cfg.Duration, "duration", 60*time.Second, "how long creates go on")
	f.DurationVar(&cfg.Lifetime, "lifetime", 10*time.Second, "time from an object's create to its delete")
	f.Float64Var(&cfg.ServiceFraction, "service-fraction", 0.25, "share of creates that are Services (the rest are Pods)")
	f.IntVar(&cfg.Workers, "workers", 32, "concurrent writers keeping the schedule")
	f.DurationVar(&cfg.Drain, "drain", 30*time.Second, "after the last write, how long events and pods may take to settle")
	f.Uint64Var(&cfg.Seed, "seed", 1, "seed of the schedule and the objects")
	f.DurationVar(&cfg.RunTimeout, "run-timeout", 15*time.Minute, "upper bound on the run, bring-up included")
	f.StringVar(&cfg.CPUProfile, "cpuprofile", "", "write a CPU profile of the churn (server included when embedded) to this file")
	out.register(f, true)
	return cmd
}
