// Package agent wires a real node: the container runtime (internal/runtime,
// serving CRI on a unix socket) and the kubelet (internal/kubelet, a client
// of the API server and of that socket). It is a wiring package, like
// internal/server: the only place those components meet, and then only
// through their public contracts — the kubelet reaches the runtime through
// CRI gRPC on the socket, never by a Go call, so the same kubelet runs on
// containerd (Config.RuntimeEndpoint) and crictl reaches our runtime.
//
// Start runs in readiness order:
//
//  1. preflight: root, overlayfs, namespaces, the cgroup layout (v1/hybrid
//     or v2) and the OCI runtime; a host that lacks one is refused with a
//     line naming it (ErrHost);
//  2. the agent's directory becomes a shared mount, so volume mounts the
//     kubelet makes below it propagate into containers (the host's / may
//     be private);
//  3. the pod network (internal/network; Config.Network: "bridge", "cni"
//     or "none", none when empty) starts watching Nodes — it becomes
//     ready once the node-ipam controller gave this node a pod CIDR, and
//     until then the runtime reports NetworkReady=false (node NotReady);
//  4. the runtime serves CRI on <Dir>/../cri.sock (unless another runtime
//     is named), re-adopting the containers it left running, with the
//     network as its runtime.Network; addresses held for sandboxes the
//     runtime does not know are released (network.GC);
//  5. the kubelet registers the node, renews its lease and runs the pods
//     bound to it;
//  6. with Config.DNSAddr, the cluster DNS server (internal/dns) serves on
//     that address as the node, and the node lists it in the kube-dns
//     Service's endpoints: an EndpointSlice kube-system/kube-dns-<node>
//     (managed-by dns.rudder.dev) kept while the agent runs, deleted when
//     it stops, and owned by the Node so a deleted node takes it along
//     (dns.go). Pods' resolv.conf names the kube-dns
//     Service's IP (Config.ClusterDNS, 10.96.0.10), which the service
//     proxy sends to those endpoints;
//  7. with Config.Proxy.Enabled, the service proxy (internal/proxy) keeps
//     the node's nftables table for Services and, unless
//     Config.NetworkPolicy.Disabled (--network-policy=false), the
//     NetworkPolicy enforcer (internal/netpolicy) keeps the "rudder-policy"
//     table beside it, both in Proxy.NetNSPath; the enforcer reads
//     policies, pods and namespaces as the node (the server's
//     system:rudder:network-policy role).
//
// Stop ends the kubelet, the runtime and the network (its masquerade
// table and routes to other nodes go; the bridge and pods' links stay);
// containers keep running (their monitors hold them) and the next start
// adopts them, addresses and all.
//
// Several agents on one machine (`rudder up --nodes N`,
// internal/localcluster) keep apart by Config: each its own Dir (and so
// its own RunDir, a hash of it), PodLogsDir, CgroupRoot (`--cgroup-root`:
// pods go to <CgroupRoot>/kubepods instead of <own cgroup>/kubepods) and
// NodeIP, and each runs in a network namespace of its own, where its
// kubelet API and the runtime's streaming server listen.
//
// Usage, as `rudder up` does with the server's CA at hand:
//
//	creds, _ := agent.LocalCredentials(srv.PKI, dir, srv.URL, name, ip)
//	a, err := agent.Start(ctx, agent.Config{NodeName: name, NodeIP: ip, Dir: dir, Credentials: creds})
//	...
//	a.Stop()
//
// On another machine, as `rudder agent --server URL --token T` does, Join
// gets the credentials from the running server (join.go), the way
// upstream's kubelet TLS-bootstraps:
//
//  1. the client certificate: the bootstrap token authenticates a CSR for
//     system:node:<name> (signer kube-apiserver-client-kubelet), approved
//     and signed by the cluster's controllers; the cluster CA is given
//     (--ca-file) or discovered from kube-public/cluster-info, believed
//     only if signed with the token's secret (nodeidentity.Bootstrap);
//  2. the kubelet API's serving certificate, asked for as the node itself
//     (signer kubelet-serving, SANs the node IP and name). The approver
//     approves it only for addresses the node's own Node lists, so the
//     node registers a minimal Node first (NodeRestriction lets a node
//     create itself); the kubelet adopts it when it starts
//     (nodeidentity.ServingCertificate);
//  3. Credentials: the kubeconfig, the serving certificate, and the
//     cluster CA to verify the API server's kubelet client.
//
// Everything is kept in Config.Dir (0600); a later Join reuses it without
// the token while each certificate has a tenth of its life left. The
// node IP defaults (in `rudder agent`) to SourceIP: the address this
// host reaches the server from.
//
//	creds, err := agent.Join(ctx, agent.JoinConfig{Server: url, Token: token, NodeName: name, NodeIP: ip, Dir: dir})
//	a, err := agent.Start(ctx, agent.Config{NodeName: name, NodeIP: ip, Dir: dir, Credentials: creds})
package agent
