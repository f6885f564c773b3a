// Command rudder is Kubernetes in one binary. Its subcommands run the
// components; this file only parses flags and dispatches.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/apiserver"
	"github.com/rudder-dev/rudder/internal/runtime"
)

func main() {
	// A container's monitor: the runtime re-executes this binary. It
	// must not parse flags or start anything else.
	if len(os.Args) > 1 && os.Args[1] == runtime.ShimSubcommand {
		os.Exit(runtime.ShimMain(os.Args[2:]))
	}
	root := &cobra.Command{
		Use:           "rudder",
		Short:         "Kubernetes, from scratch, in one binary",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	var logLevel string
	root.PersistentFlags().StringVar(&logLevel, "log-level", "info", "log level: debug, info, warn, error")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		var lvl slog.Level
		if err := lvl.UnmarshalText([]byte(logLevel)); err != nil {
			return fmt.Errorf("--log-level: %w", err)
		}
		slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl})))
		routeKlog()
		tuneGC()
		return nil
	}
	root.AddCommand(serverCommand(), schedulerCommand(), controllerManagerCommand(), simnodesCommand(), benchCommand(), versionCommand())
	root.AddCommand(imagesCommand(), upCommand(), tokenCommand(), agentCommand())

	ctx, stop := signalContext()
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the Kubernetes version rudder serves",
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintln(cmd.OutOrStdout(), apiserver.Version.GitVersion)
			return nil
		},
	}
}
