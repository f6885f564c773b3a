// Package proxy is rudder's service proxy: what kube-proxy's nftables
// mode does. It watches Services, EndpointSlices and its own Node, and
// keeps one nftables table (family ip, "rudder-proxy") in the node's
// network namespace so that traffic to a Service's virtual addresses
// reaches its endpoints.
//
// # Usage
//
//	p, err := proxy.New(proxy.Config{
//		Client:      client,
//		NodeName:    "node-a",
//		ClusterCIDR: netip.MustParsePrefix("10.42.0.0/16"),
//		NetNSPath:   "/run/netns/node-a", // "" = this process's namespace
//	})
//	go p.Run(ctx) // removes the table when ctx ends
//	<-p.Ready()   // the first full sync is in the kernel
//
// # The rule layout
//
// The shape is chosen for how the kernel scales; each choice below is a
// measured cost on this kernel (6.18):
//
//   - Per-service anonymous sets (kube-proxy's "numgen ... vmap { 0 :
//     goto ep0, ... }") cost a scan of all of the table's sets each:
//     quadratic, 10,000 services in 55 s. So ONE shared verdict map
//     sends address . protocol . port to a per-service chain.
//
//   - A rule that holds a nat statement (or a jump) makes the commit
//     re-walk every chain reachable from the base chains: 60-100 ms per
//     transaction at 10,000 services. So endpoints are not rules but
//     elements of data maps, and replacing an endpoint touches no rule.
//
//   - A map element insert is checked against every rule that uses the
//     map, so one map with one rule per service fills in services ×
//     endpoints steps (30,000 endpoints: 4 s). So the endpoints are
//     spread over 1024 maps ("endpoints-000" … "endpoints-3ff"), a
//     service's by its key.
//
//     table ip rudder-proxy {
//     map service-ips { ipv4_addr . inet_proto . inet_service : verdict }
//     # 10.96.0.10 . udp . 53 : goto svc-<id>        ClusterIPs
//     # 203.0.113.7 . tcp . 80 : goto ext-<id>       load-balancer IPs
//     map service-nodeports { inet_proto . inet_service : verdict }
//     # tcp . 30080 : goto ext-<id>
//     set nodeport-ips { ipv4_addr }                     # --nodeport-addresses
//     map no-endpoint-services, no-endpoint-nodeports    # → goto reject-chain
//     set hairpin { ipv4_addr . ipv4_addr }              # local endpoint . itself
//     map endpoints-XX { key(8 bytes) . index : ipv4_addr . inet_service }
//     # 0x5cc0…ab9 . 0 : 10.42.1.5 . 8080
//
//     chain nat-prerouting { type nat hook prerouting priority dstnat; jump services }
//     chain nat-output     { type nat hook output priority -100; jump services }
//     chain services {
//     ip daddr . meta l4proto . th dport vmap @service-ips
//     ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports
//     }
//     chain svc-<id> {                        # one per service port
//     ip saddr != 10.42.0.0/16 meta mark set mark | 0x4000   # off-cluster client
//     dnat to <key> . numgen random mod 3 map @endpoints-XX  # the whole balancing
//     }
//     chain svc-<id> {                        # with ClientIP affinity instead:
//     ip saddr @aff-<id>-<ep> update @aff-<id>-<ep> { ip saddr } dnat to ep  # known clients
//     numgen random mod 2 == 0 update @aff-<id>-<ep1> { ip saddr } dnat to ep1  # rule i of n
//     update @aff-<id>-<ep2> { ip saddr } dnat to ep2       # wins with 1/(n-i)
//     }
//     chain ext-<id> {                        # NodePort / LB traffic
//     jump mark-for-masquerade; goto svc-<id>          # externalTrafficPolicy Cluster
//     # Local: pods and the node itself keep cluster-wide balancing,
//     # others go to svl-<id> (this node's endpoints, unmasqueraded;
//     # drop when there are none)
//     }
//     chain nat-postrouting {
//     ip saddr . ip daddr @hairpin masquerade    # a pod reaching itself
//     jump masquerading                          # mark 0x4000 → masquerade
//     }
//     chain filter-{input,forward,output} { priority -110; jump endpoints-check }
//     chain endpoints-check {                  # services with no endpoints:
//     ip daddr . meta l4proto . th dport vmap @no-endpoint-services   # TCP reset,
//     ip daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports # ICMP port unreachable
//     }
//     }
//
// An endpoint replaced by another (a pod restarted) is two element
// changes; a service whose endpoint count changes gets its one balancing
// rule rewritten (and the commit's walk over the table).
//
// Endpoints are chosen as upstream's CategorizeEndpoints does: ready
// ones; if none is ready, serving-and-terminating ones (for the cluster
// and the local set alike). internalTrafficPolicy Local uses only this
// node's endpoints for ClusterIP traffic.
//
// # Syncing
//
// Planning is pure (plan.go: a Service and its slices → PortPlans, data
// with a text form for tests). ruleset.go diffs plans against what the
// kernel holds and writes only the changed services' chains and map
// elements, in one transaction. The start is a full sync: the old table
// (a previous run's) is deleted and rebuilt. google/nftables encodes the
// messages; kernel.go sends them without per-message acknowledgements
// (one syscall per batch instead of one per rule), in transactions of at
// most 8 MB, since a larger datagram is refused by this kernel. So a
// full sync of a very big table (over ~10,000 services) is more than one
// transaction, and for that moment some services have no rules; a
// restarted agent's established connections keep their conntrack NAT
// either way. A refused transaction leads to a full sync with backoff.
//
// Run removes the table when it ends. While no table exists the kernel
// has no nat hook in the namespace, so established connections through
// services stop being translated (their packets are retransmitted) until
// the next proxy's table is in; then conntrack's bindings apply again
// and the connections carry on (TestProxy checks it).
//
// UDP has no connection end, so when a UDP service loses an endpoint,
// or gains its first, the flows conntrack keeps for it are deleted
// (conntrack.go).
//
// Every kernel operation runs in Config.NetNSPath, through sockets
// opened there on a locked thread, so tests and `rudder up --nodes` run
// whole nodes inside their own namespaces.
package proxy
