// Command rudder is Kubernetes in one binary. Its subcommands run the
// components; this file only parses flags and dispatches.
package main

import (
	"fmt"
	"log/slog"
	"os"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/apiserver"
	// A container's monitor is this binary re-executed as `rudder
	// runtime-shim CONFIG`: the monitor package's init runs it and exits
	// before the heavy packages initialise (see its doc.go), so main never
	// sees that subcommand.
	_ "github.com/rudder-dev/rudder/internal/runtime/monitor"
)

func main() {
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
	root.AddCommand(imagesCommand(), upCommand(), agentCommand(), tokenCommand(), runtimeCommand(), dnsCommand())

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
