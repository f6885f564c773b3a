package main

import (
	"context"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	configv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/rudder-dev/rudder/internal/leaderelect"
	"github.com/rudder-dev/rudder/internal/scheduler"
)

func schedulerCommand() *cobra.Command {
	var (
		kubeconfig  string
		configFile  string
		leaderElect bool
	)
	cmd := &cobra.Command{
		Use:   "scheduler",
		Short: "Run the scheduler against any Kubernetes API server",
		Long: `Run rudder's scheduler as a drop-in replacement for kube-scheduler: it
schedules pods whose spec.schedulerName is default-scheduler (or one of the
configured profiles' names) and leaves the rest alone.

  rudder scheduler --kubeconfig K [--config kubescheduler.yaml] [--leader-elect]

--config takes a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1):
profiles by schedulerName, plugins enabled/disabled per extension point or
multiPoint, score weights, plugin arguments, percentageOfNodesToScore.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rc, err := clientConfig(kubeconfig, "rudder-scheduler")
			if err != nil {
				return err
			}
			client, err := kubernetes.NewForConfig(rc)
			if err != nil {
				return err
			}
			var cfg *configv1.KubeSchedulerConfiguration
			if configFile != "" {
				if cfg, err = scheduler.LoadConfig(configFile); err != nil {
					return err
				}
			}
			ctx := cmd.Context()
			run := func(ctx context.Context) error {
				s, err := scheduler.New(ctx, scheduler.Config{Client: client, Configuration: cfg})
				if err != nil {
					return err
				}
				return s.Run(ctx)
			}
			if !leaderElect {
				return run(ctx)
			}
			return leaderelect.Run(ctx, leaderelect.Config{RestConfig: rc, Namespace: "kube-system", Name: "kube-scheduler"}, run)
		},
	}
	f := cmd.Flags()
	f.StringVar(&kubeconfig, "kubeconfig", "", "cluster to schedule for (default: $KUBECONFIG, then ~/.kube/config)")
	f.StringVar(&configFile, "config", "", "KubeSchedulerConfiguration file")
	f.BoolVar(&leaderElect, "leader-elect", false, "hold the kube-system/kube-scheduler Lease while scheduling, so that only one of several replicas schedules")
	return cmd
}
