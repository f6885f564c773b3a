// Package network gives pod sandboxes their addresses and connects them
// to each other across nodes: the part of a cluster a CNI plugin such as
// flannel provides, built in (no plugin binaries on the hot path), plus
// a libcni path so any standard CNI configuration can replace it.
//
// # The built-in network, on one node
//
//	             node network namespace
//	┌────────────────────────────────────────────────────────────┐
//	│  rudder0 (bridge, 10.42.1.1/24 = the gateway)               │
//	│     ├── rv1a2b3c4d5e6f7 ──veth── eth0 10.42.1.2  (pod A)    │
//	│     └── rv7f6e5d4c3b2a1 ──veth── eth0 10.42.1.3  (pod B)    │
//	│  nft table inet rudder-network:                             │
//	│     ip saddr 10.42.1.0/24 ip daddr != 10.42.0.0/16 masquerade│
//	│  10.42.2.0/24 via 192.168.1.2            (host-gw peer)     │
//	│  10.42.3.0/24 via 10.42.3.0 dev rudder.vxlan onlink (VXLAN) │
//	└────────────────────────────────────────────────────────────┘
//
// The node's pod CIDR is its Node's spec.podCIDR(s), assigned by the
// node-ipam controller (internal/controllers/nodeipam) from the cluster
// CIDR. Until it is there the network is not ready: Ready returns why
// (the runtime reports it as NetworkReady=false, so the node shows
// NotReady with that message) and Setup waits up to ReadyTimeout.
//
// Setup(id, netns) allocates one address per pod CIDR (IPv4, and IPv6
// when the node has a v6 CIDR) from the IPAM, creates a veth pair whose
// node side ("rv" + a hash of the sandbox ID, so it is found again
// without state) sits on the bridge with hairpin on (a pod reaching
// itself through a Service comes back to itself), and whose pod side is
// created directly in the pod's namespace as eth0, addressed, with a
// default route via the gateway. A Setup that fails removes the veth and
// releases the address before it returns. Teardown deletes the veth and
// releases the address; it is idempotent.
//
// The IPAM is host-local's design: one file per address under
// StateDir/ipam, created with O_EXCL, holding the sandbox ID and netns
// path. An agent restart reads them back; Start releases addresses
// whose namespace no longer exists (the sandbox went while the agent was
// down), and GC(live) releases those of sandboxes the runtime does not
// know (the agent died between Setup and the runtime recording the
// sandbox). Addresses are handed out round-robin, so a freed address is
// not reused at once.
//
// # Between nodes
//
// A Node informer drives a level-based sync: for every other node with a
// pod CIDR, a route to it (rtnetlink protocol 0x52, so only our routes
// are listed and removed):
//
//   - host-gw when the node's InternalIP is on one of this node's
//     subnets: the packet goes straight to that node;
//   - VXLAN otherwise (IPv4): the device rudder.vxlan (VNI 1, port 4789,
//     no learning) carries it. Each node publishes its device's MAC in
//     the annotation network.rudder.dev/vtep-mac; the others add a
//     permanent neighbour entry (the peer CIDR's network address → that
//     MAC) and a forwarding entry (that MAC → the peer's InternalIP), as
//     flannel's vxlan backend does.
//
// Nodes with loopback addresses (simulated nodes) are skipped. A deleted
// Node's route and entries go at the next sync. Stop removes the routes
// and the nftables table; the bridge and the pods' links stay, so
// running pods keep their addresses across an agent restart.
//
// # Namespaces
//
// Every kernel operation goes through a netlink handle or nftables
// connection bound to Config.NodeNetNS ("" = the process's own), and the
// pod side through a handle bound to the pod's namespace. No goroutine's
// thread is switched except inside inNetNS, which runs a function on a
// fresh locked thread and switches it back (or lets it die). That is
// what lets the tests run whole nodes in namespaces they create, and
// `rudder up --nodes N` run one network per node namespace.
//
// # CNI
//
// When CNIConfDir (default /etc/cni/net.d) holds a configuration
// (*.conflist, *.conf, *.json; the first by name), it replaces the
// built-in network: Setup runs the plugin chain's ADD through libcni
// with plugins from CNIBinDirs (/opt/cni/bin, /usr/lib/cni), Teardown
// its DEL. Plugins are started from a thread in the node namespace, so
// their host side lands there. A record per attachment under
// StateDir/cni lets Teardown and the GC call DEL after a restart.
//
// # Cost
//
// BenchmarkSetupTeardown (2-core VM, test namespaces): Setup about
// 3.5 ms, Teardown about 20 ms — nearly all of it the kernel
// unregistering the veth pair (an RCU grace period), which any veth
// based network pays.
//
// # Usage
//
//	n, err := network.New(network.Config{
//		NodeName: "node-1", NodeIP: ip, Client: client,
//		StateDir: "/var/lib/rudder/agent/network",
//	})
//	n.Start(ctx)                    // watches Nodes; ready once podCIDR is known
//	rt, _ := runtime.New(runtime.Config{..., Network: n})
//	...
//	n.Stop()
package network
