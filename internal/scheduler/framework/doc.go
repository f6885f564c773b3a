// Package framework holds the types every scheduler part shares: the
// plugin interfaces for each extension point, Status, CycleState, and the
// scheduler's view of the cluster (PodInfo, NodeInfo, Snapshot).
//
// A pod's scheduling cycle calls the extension points in this order:
//
//	PreEnqueue            (before the pod enters the active queue)
//	QueueSort             (orders the active queue)
//	PreFilter             once, single-threaded; may narrow the nodes or Skip
//	Filter                per node, in parallel; first rejection wins
//	PostFilter            only when no node fits (preemption)
//	PreScore              once, on the feasible nodes
//	Score, NormalizeScore per node in parallel, then once per plugin
//	Reserve               on the chosen node; the pod is assumed in the cache
//	Permit                approve / reject / wait
//	PreBind, Bind, PostBind  in the binding goroutine, off the hot path
//
// Failures after Reserve call Unreserve in reverse order and forget the
// assumed pod. Plugins keep per-pod data in the CycleState under their own
// key during PreFilter/PreScore and only read it during Filter/Score, which
// is what makes the parallel calls safe without locks.
//
// Filter and Score run for hundreds of nodes per pod, so their cost is
// mostly memory traffic. Three things keep it down: a NodeInfo holds its
// resource sums and copies of the node fields the per-node loops read
// (name, taints, cordon, zone and hostname labels: see Label) inside one
// allocation; a Score plugin may also implement BatchScorer to score a
// range of nodes per call; and a Snapshot logs which NodeInfoList
// positions each update replaced (ChangedSince), so plugins that keep
// indexes across cycles look at the changed nodes instead of every node.
//
// The parallel sections run on a Pool (parallel.go): the caller works
// too, and a helper that finished one section waits a few microseconds
// for the next instead of exiting, since a freshly started goroutine
// arrives after a 20 µs section is over. Whether helpers pay on the
// machine at the moment is measured on the live work (trial.go).
//
// This package does no I/O; internal/scheduler runs the cycle and
// internal/scheduler/plugins implements the plugins.
package framework
