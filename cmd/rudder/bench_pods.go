package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/bench"
)

func benchPodsCommand() *cobra.Command {
	var (
		cfg     bench.PodsConfig
		out     benchOutput
		compare string
	)
	cmd := &cobra.Command{
		Use:   "pods",
		Short: "Pods on one real node: create→Running, 100 at once, teardown, memory",
		Long: `Start this rudder binary as ` + "`rudder up`" + ` in a fresh temporary data
directory (root: real containers) and measure, with the kubelet's runtime
being rudder's own or, with --compare, another CRI runtime in the same run:

  single     pods created one after another: create → Running (watch), p50/p99,
             and delete → gone
  batch      N pods created at once: each create → Running, all Running, teardown
  memory     PSS of rudder plus its containers' monitors: idle, 10, 50, N pods

The pods run the busybox image built from /bin/busybox (imported with
` + "`rudder images import`" + `); with --compare the image (--image) must already be
in that runtime (scripts/containerd-peer.sh imports it into containerd).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			exe, err := os.Executable()
			if err != nil {
				return err
			}
			cfg.Binary = exe
			out.compare = compare
			return out.run(cmd, "", func(endpoint string) (bench.Summarizer, error) {
				c := cfg
				c.RuntimeEndpoint = endpoint
				r, err := bench.RunPods(cmd.Context(), c)
				if r == nil {
					return nil, err
				}
				return r, err
			})
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Single, "single", 20, "pods created one after another for the single-pod latency")
	f.IntVar(&cfg.Batch, "pods", 100, "pods created at once")
	f.StringVar(&cfg.Image, "image", "busybox:bench", "image the pods run: built from /bin/busybox and imported into rudder's store under this name; with --compare it must already be in that runtime")
	f.DurationVar(&cfg.Timeout, "timeout", 10*time.Minute, "bound on each run")
	f.StringVar(&compare, "compare", "", "also run under another CRI runtime, e.g. unix:///run/containerd/containerd.sock, and print both side by side")
	out.register(f, false)
	return cmd
}
