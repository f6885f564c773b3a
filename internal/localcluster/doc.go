// Package localcluster runs the nodes of `rudder up --nodes N`: N real
// nodes on one machine without Docker, as kind does with containers. It
// is a wiring package: it starts processes and namespaces, and the nodes
// it starts are plain `rudder agent` processes that join the server the
// way an agent on another machine does (a bootstrap token, TLS
// bootstrap), so nothing here reaches into a component.
//
// # The machine, while a cluster runs
//
//	host netns (untouched: no link, route or rule is added)
//	  rudder up ── server (API on 127.0.0.1:6443 for kubectl)
//	     │  hub netns: bridge rudder0 172.30.0.1/24  ◄── the API's second listener,
//	     │     │ veth-node-1   │ veth-node-2              and the kubelet dialer
//	     │  node-1 netns       node-2 netns
//	     │    eth0 172.30.0.2    eth0 172.30.0.3
//	     ├── rudder agent --node-name node-1 ...   (started inside node-1's netns)
//	     └── rudder agent --node-name node-2 ...
//
// Each node has its own
//
//   - network namespace, linked to the hub's bridge by a veth pair, with
//     an address from --node-subnet (the hub takes the first, node-N the
//     (1+N)-th). No namespace has a default route or a link to the
//     host's: the hub and the nodes reach each other and nothing else;
//   - data directory, <data-dir>/nodes/node-N (`rudder agent
//     --data-dir`): credentials, images, runtime and kubelet state, pod
//     logs (pods/), the agent's log (agent.log);
//   - run directory, agent.RunDir of that directory (/run/rudder/<hash>);
//   - cgroup subtree, <own cgroup>/rudder-<id>/node-N, where <id> is a
//     hash of the data directory: the agent process in .../agent, its
//     pods under .../kubepods (`rudder agent --cgroup-root`), in every
//     hierarchy (v1 controllers, named ones, v2).
//
// # How the server and the nodes meet
//
// The server runs in the parent process, in the host's namespace. Two
// hooks of server.Config put it in the hub too: ExtraListener, a socket
// opened inside the hub namespace on <hub>:6443 (Cluster.Listener),
// which the nodes join through; and KubeletDial (Cluster.DialKubelet),
// which opens the API server's connections to kubelets from the hub, so
// kubectl logs, exec and port-forward reach node InternalIPs that the
// host's namespace cannot. The serving certificate names the hub
// address, and the kubernetes Service's endpoints advertise it, so that
// pods can reach the API once the pod network routes to the hub.
//
// # Namespaces and threads
//
// A network namespace belongs to an OS thread. Every operation here that
// needs one (netns.go) runs on a goroutine that locks its thread, enters
// the namespace with setns and exits without unlocking: the Go runtime
// then ends the thread, so no other goroutine ever inherits the
// namespace. What such a thread creates keeps its namespace: a socket
// stays in the namespace it was made in (the hub listener, each kubelet
// dial), and a process forked from the thread starts in it. Each node's
// supervisor (child.go) is such a goroutine, for the node's whole life:
// it enters the node's namespace and forks `rudder agent` from there
// (/proc/self/exe), restarting it after an exit with a backoff (1 s
// doubling to 30 s, reset after a minute of running). Forking from a
// setns'ed thread is what `ip netns exec` does without its mount
// namespace games (which would hide cgroup mounts); a hidden re-exec
// flag that setns'es at start-up would not work, since a Go program is
// multi-threaded before main runs. The agent gets Pdeathsig SIGTERM, so
// it stops when the parent dies, whatever the way.
//
// The namespaces have no names: they are held by this process's file
// descriptors and by the processes inside them, and the kernel frees
// them — with their veths and the bridge — when both are gone.
//
// # Stopping, and after a crash
//
// Stop sends each agent SIGTERM (SIGKILL after StopGrace), then sweeps:
// every process left in the cluster's cgroups (container monitors and
// containers) is killed through a pidfd, every mount below
// <data-dir>/nodes and the run directories is detached, deepest first,
// the cgroups and run directories are removed and the namespaces
// dropped. Pods do not survive a stop; the kubelets run them again at
// the next start, as after a reboot. Data directories are kept (images,
// credentials).
//
// A parent that crashed leaves the agents stopping (Pdeathsig) and the
// containers running. Prepare, at the next start on the same data
// directory, sweeps the same way what <data-dir>/nodes/state.json
// records (the cgroup subtree and the run directories, written before
// any is created), under a flock on <data-dir>/nodes/lock that keeps two
// clusters off one directory. Sweep does it alone.
//
// # Usage, as `rudder up --nodes` does
//
//	lc, err := localcluster.Prepare(localcluster.Config{DataDir: dir, Nodes: 3})
//	srv, err := server.Start(ctx, server.Config{DataDir: dir,
//		ExtraListener: lc.Listener(), KubeletDial: lc.DialKubelet,
//		TLSSANs: []string{lc.HubIP().String()}, AdvertiseAddress: lc.HubIP().String()})
//	token := ... // a bootstrap token created through the API
//	err = lc.StartNodes(ctx, localcluster.Join{Token: token, CAPEM: srv.PKI.CAPEM})
//	...
//	lc.Stop() // then srv.Stop()
//
// Images: each node has its own store; `rudder images import|busybox|rm
// --data-dir <dir>` acts on every node (or --node node-N), `ls` lists
// them with a NODE column.
//
// Pod networking: AgentFlags carries `--network <mode>` to every agent
// (`rudder up --nodes N --network bridge`) once the agent has that flag;
// until then pods have loopback only.
package localcluster
