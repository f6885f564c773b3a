// Package nodelifecycle notices nodes that stopped reporting and moves
// work off them, as kube-controller-manager's node lifecycle and taint
// eviction controllers do. It holds two controllers, each with the name
// upstream's --controllers flag knows it by.
//
// # nodelifecycle: health, taints, zones
//
// A kubelet proves it is alive two ways: it renews its Lease in the
// kube-node-lease namespace (every 10 s) and it posts node status, whose
// conditions carry lastHeartbeatTime. Every NodeMonitorPeriod (5 s) the
// monitor looks at both. The moment it sees either change is the node's
// probe time, measured on the controller's own clock so that clock skew
// between machines does not matter. A node whose probe time is older
// than NodeMonitorGracePeriod (50 s; NodeStartupGracePeriod, 60 s, while
// it has never posted a Ready condition) gets its Ready, MemoryPressure,
// DiskPressure and PIDPressure conditions set to Unknown, reason
// NodeStatusUnknown, message "Kubelet stopped posting node status."
// (NetworkUnavailable is left alone: the network plugin owns it.)
//
// Taints then follow the conditions:
//
//   - NoSchedule, for the scheduler, at once and level-based on every
//     Node change: not-ready (Ready=False), unreachable (Ready=Unknown),
//     memory-pressure, disk-pressure, pid-pressure, network-unavailable
//     (the condition True) and unschedulable (spec.unschedulable);
//   - NoExecute, which evicts pods: node.kubernetes.io/not-ready for
//     Ready=False and node.kubernetes.io/unreachable for Ready=Unknown.
//     A node carries at most one of the two; one is swapped for the
//     other in a single write. Both go once the node is Ready again.
//
// Adding a NoExecute taint is rate limited per zone (one token bucket of
// burst 1 each), because a zone losing many nodes at once is more often
// a network or control-plane problem than many dead machines. Each pass
// computes every zone's state from the Ready conditions of its nodes
// (nodes labelled node.kubernetes.io/exclude-disruption do not count):
//
//	Normal             fewer than 3 NotReady, or under UnhealthyZoneThreshold (55%)  → EvictionLimiterQPS (0.1/s)
//	PartialDisruption  3+ NotReady and at least UnhealthyZoneThreshold               → SecondaryEvictionLimiterQPS (0.01/s)
//	                   in zones of more than LargeClusterSizeThreshold (50) nodes, else 0
//	FullDisruption     no Ready node                                                 → EvictionLimiterQPS
//
// unless every zone is in FullDisruption: then the controller assumes it
// is itself cut off, removes every not-ready/unreachable NoExecute taint
// and stops tainting until some node is Ready again, when every node
// gets a fresh grace period.
//
// When a node stops being Ready, the Ready condition of each pod on it is
// set to False (a status patch), so endpoints stop sending traffic there
// before any eviction; the event NodeNotReady is recorded on the Node and
// on each pod.
//
// # taint-eviction-controller: NoExecute taints evict pods
//
// For every pod bound to a node with NoExecute taints (whoever put them
// there), the eviction controller decides from the pod's tolerations:
//
//   - a taint no toleration tolerates: delete the pod now;
//   - all tolerated, some with tolerationSeconds: delete it that many
//     seconds after the taint was added (the taint's timeAdded), the
//     earliest such deadline winning;
//   - all tolerated forever (no tolerationSeconds): the pod stays.
//     DaemonSet pods carry such tolerations for not-ready and
//     unreachable, so they stay with their node.
//
// An eviction adds the pod condition DisruptionTarget (reason
// DeletionByTaintManager) and then deletes the pod gracefully; the event
// TaintManagerEviction "Marking for deletion Pod ns/name" is recorded.
// A scheduled eviction that no longer applies (taint removed, toleration
// added) is cancelled with the event "Cancelling deletion of Pod ns/name".
//
// # Level-based
//
// Everything is recomputed from the API's current state: taints from
// conditions, evictions from taints, their timeAdded and tolerations. A
// controller restarted in the middle converges: nodes get a fresh grace
// period from the restart (the controller cannot know when it last heard
// from them), pods on NotReady nodes are marked once more, and pending
// evictions are rescheduled from the taints' timeAdded.
//
// The decisions are pure functions with the time passed in (health.go,
// zones.go, taints.go, eviction.go); monitor.go, noschedule.go,
// tainteviction.go and pods.go read informers and do the writes.
//
// # Usage
//
// Through the controller manager (internal/controllers lists both):
//
//	nodelifecycle.Descriptor                 // "nodelifecycle", upstream's defaults
//	nodelifecycle.TaintEvictionDescriptor    // "taint-eviction-controller"
//	nodelifecycle.NewDescriptor(nodelifecycle.Config{NodeMonitorGracePeriod: 2 * time.Second})
package nodelifecycle
