package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/rudder-dev/rudder/internal/agent"
)

// agentCommand joins a running server and runs a node agent: the node's
// credentials come from a bootstrap token (TLS bootstrap, as upstream's
// kubelet does it) and are kept for the next start.
func agentCommand() *cobra.Command {
	var af agentFlags
	var server, token, tokenFile, caFile, dataDir, clusterCIDR string
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Join a running server as a node running real containers",
		Long: `Join the cluster served at --server as a node whose pods run as real
containers (runc, overlayfs, cgroups). Needs root.

On the server:   rudder token create --data-dir /var/lib/rudder
On the node:     rudder agent --server https://10.0.0.1:6443 --token <id>.<secret>

The token buys a client certificate for system:node:<name>, approved and
signed by the cluster; the node then asks, as itself, for the kubelet
API's serving certificate. Both are kept in <data-dir>/agent: later starts
need no token while they are valid. Without --ca-file the cluster's CA is
discovered from kube-public/cluster-info and believed only if the token
signed it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if server == "" {
				return errors.New("--server is required (the API server's https:// URL)")
			}
			if tokenFile != "" {
				if token != "" {
					return errors.New("--token and --token-file: give one")
				}
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return fmt.Errorf("--token-file: %w", err)
				}
				token = strings.TrimSpace(string(b))
			}
			var caPEM []byte
			if caFile != "" {
				var err error
				if caPEM, err = os.ReadFile(caFile); err != nil {
					return fmt.Errorf("--ca-file: %w", err)
				}
			}
			if !cmd.Flags().Changed("node-ip") {
				ip, err := agent.SourceIP(server)
				if err != nil {
					return fmt.Errorf("--node-ip not given: %w", err)
				}
				af.nodeIP = ip.String()
			}
			acfg, err := af.config(dataDir)
			if err != nil {
				return err
			}
			acfg.ClusterCIDRs = strings.Split(clusterCIDR, ",")
			if err := agent.Preflight(acfg); err != nil {
				return err
			}
			acfg.Credentials, err = agent.Join(cmd.Context(), agent.JoinConfig{
				Server: server, Token: token, CAPEM: caPEM,
				NodeName: acfg.NodeName, NodeIP: acfg.NodeIP, Dir: acfg.Dir,
			})
			if err != nil {
				return err
			}
			a, err := agent.Start(cmd.Context(), acfg)
			if err != nil {
				return err
			}
			slog.Info("node joined", "node", acfg.NodeName, "ip", acfg.NodeIP, "server", server, "cri", acfg.RuntimeSocket)
			select {
			case <-cmd.Context().Done():
				slog.Info("shutting down")
				a.Stop()
				return nil
			case <-waitDone(a):
				return a.Wait()
			}
		},
	}
	f := cmd.Flags()
	f.StringVar(&server, "server", "", "the API server's URL, https://HOST:PORT")
	f.StringVar(&token, "token", "", "a bootstrap token <id>.<secret> (rudder token create); not needed while the node's certificates are valid")
	f.StringVar(&tokenFile, "token-file", "", "a file holding the bootstrap token (kept off the command line, which other users can read)")
	f.StringVar(&caFile, "ca-file", "", "the cluster CA certificate (default: discovered with the token)")
	f.StringVar(&dataDir, "data-dir", "/var/lib/rudder", "where the agent keeps its state, credentials and images")
	f.StringVar(&clusterCIDR, "cluster-cidr", "10.42.0.0/16", "the cluster's pod network (the server's --cluster-cidr): pod traffic leaving it is masqueraded")
	af.register(cmd)
	if ip := f.Lookup("node-ip"); ip != nil {
		ip.DefValue = ""
		ip.Usage = "the node's InternalIP, where its kubelet API listens (default: the address this host reaches --server from)"
	}
	return cmd
}

// waitDone is closed when a stops by itself (a component failed).
func waitDone(a *agent.Agent) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		a.Wait()
		close(done)
	}()
	return done
}
