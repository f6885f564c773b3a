package main

import (
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/bench"
)

func benchDNSCommand() *cobra.Command {
	var (
		cfg       bench.DNSConfig
		asJSON    bool
		inProcess bool
	)
	cmd := &cobra.Command{
		Use:   "dns",
		Short: "Cluster DNS: QPS and latency of A queries for service names, rudder's and CoreDNS's",
		Long: `Start a control plane in-process (fresh temporary directory), create
--services ClusterIP services, run rudder's cluster DNS (` + "`rudder dns`" + `, a child
process) on loopback and load it with --concurrency UDP clients in this process, each
asking the next service name as soon as the last is answered, for
--duration after a second of warm-up: QPS, p50/p99/max latency, errors.
Clients and server share the machine's cores, as the issue's bar asks.

With --coredns BINARY, CoreDNS (kubernetes plugin, pods insecure, no
cache) reads the same API server and gets the same load right after, and
both are printed side by side. scripts/dns-golden.sh builds such a
binary from CoreDNS's Go module into /tmp/dns-coredns/coredns.

  rudder bench dns --coredns /tmp/dns-coredns/coredns`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.Log = cmd.ErrOrStderr()
			if !inProcess {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				cfg.Rudder = exe
			}
			res, err := bench.RunDNS(cmd.Context(), cfg)
			if perr := bench.PrintDNS(cmd.OutOrStdout(), res, asJSON); perr != nil && err == nil {
				err = perr
			}
			return err
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Services, "services", 100, "ClusterIP services whose names are asked")
	f.IntVar(&cfg.Concurrency, "concurrency", 16, "UDP clients, each with one query outstanding")
	f.DurationVar(&cfg.Duration, "duration", 10*time.Second, "measured time per server")
	f.StringVar(&cfg.CoreDNS, "coredns", "", "a coredns binary to measure side by side")
	f.BoolVar(&inProcess, "in-process", false, "run rudder's DNS in this process, beside the clients (default: a `rudder dns` child process, as CoreDNS is one)")
	f.BoolVar(&asJSON, "json", false, "print one JSON object per server")
	return cmd
}
