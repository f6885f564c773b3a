// Package bench holds rudder's end-to-end benchmark scenarios: workloads
// driven through the API with client-go, exactly as the components and
// users drive it, that print a table for people and one JSON line for
// machines. `rudder bench api` is the first; cmd/rudder only parses its
// flags into a Config and calls Run.
//
// # The api scenario
//
// Three stages, each bounded by its counts and by Config.StageTimeout, run
// in one namespace the benchmark creates:
//
//   - list: the namespace grows through Config.ListSizes; at each size
//     LIST with resourceVersion=0 (served from the watch cache) is timed in
//     protobuf and in JSON: one cold request, then ListReps warm ones.
//   - crud: for each value C of Config.Clients, C clients create, update
//     (full PUT), get, list (label-selected 1%) and delete Config.Objects
//     pods, one verb at a time, each timed per request.
//   - watch: for each value W of Config.Watchers, W watches open at a known
//     resourceVersion and writers update their pods Config.Events times at
//     Config.EventRate. Each update carries its event number and send time,
//     so every watcher checks by itself that it received each event once
//     and in order, and how late (see WatchResult for the two latencies).
//
// Clients use protobuf, no client-side rate limit, and Config.Connections
// separate HTTP/2 connections (clientPool), so the server, not one shared
// connection or client-go's limiter, is what is measured.
//
// Without a kubeconfig Run starts a fresh server in-process (server.Start
// in a temporary directory). The clients then share the process and its
// CPUs with the server: every figure includes their cost, and a CPU
// profile (Config.CPUProfile) shows server and clients together. Result
// reports the CPU the process actually used, and the machine's load, so a
// run on a busy machine can be recognised as such.
//
// # The network data-path scenarios
//
// RunConnect and RunThroughput (`rudder bench network --part
// connect,throughput`) build a two-node cluster out of network
// namespaces (netpath.go): an in-process API server, two node
// namespaces on one veth "wire", the built-in pod network
// (internal/network) on each, and pods that are namespaces it networks.
// RunConnect adds the service proxy (internal/proxy) on the client's
// node and times new-connection round trips to a pod directly, through
// a ClusterIP and through a NodePort, the paths taking turns; RunThroughput
// times one bulk stream across the nodes with host-gw and VXLAN beside
// two namespaces on one veth pair. Everything is torn down on return.
//
// # Usage
//
//	res, err := bench.Run(ctx, bench.Config{Objects: 1000, Watchers: []int{100}})
//	if err != nil { ... }
//	res.Print(os.Stdout)            // table, then the JSON line
//	if f := res.Failures(); len(f) > 0 { ... } // errors, lost or reordered events
//
// docs/benchmarks.md explains every figure and records measured ones.
package bench
