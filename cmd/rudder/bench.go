package main

import (
	"errors"

	"github.com/spf13/cobra"
)

func benchCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Run a benchmark scenario and print a table and a JSON line",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "api",
		Short: "API server throughput and latency",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("rudder bench api is not built yet")
		},
	})
	return cmd
}
