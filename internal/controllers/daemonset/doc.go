// Package daemonset runs DaemonSets: one pod on every node that should
// run it, following nodes as they come, go and change. It is upstream's
// daemonset controller, with the same behaviour seen from the API,
// written on internal/controller.
//
// # Usage
//
// The manager builds it from its descriptor ("daemonset" in
// --controllers):
//
//	controller.RunManager(ctx, controller.ManagerConfig{
//		RestConfig:  rc,
//		Descriptors: []controller.Descriptor{daemonset.Descriptor},
//	})
//
// # Which nodes
//
// A node should run the pod when the template's nodeName (if any), its
// nodeSelector and required node affinity match the node, and the pod
// tolerates the node's NoSchedule and NoExecute taints (shouldRun). A
// pod already on a node may stay while only NoSchedule taints are not
// tolerated; an untolerated NoExecute taint, or a selector or affinity
// that stopped matching, removes it. Every daemon pod tolerates, without
// a time limit, the taints nodes get for their conditions:
// node.kubernetes.io/not-ready and unreachable (NoExecute),
// disk-pressure, memory-pressure, pid-pressure and unschedulable
// (NoSchedule), and network-unavailable for hostNetwork pods. So a
// cordoned, pressured or unreachable node keeps its daemons.
//
// # Placing a pod
//
// The controller does not bind pods itself. Each pod ("<ds>-xxxxx")
// carries a required node affinity on metadata.name=<node>, replacing the
// template's required terms (already checked), so the scheduler binds it
// to that node, preempting if need be, as it does any pod.
//
// # One sync
//
// Every event about a DaemonSet or its pods, and node changes that turn
// a node's answer, queue the set's key. A sync (two at once, never two
// for one key) claims the set's pods and revisions, finds or writes the
// revision recording the template, then, if the cache shows everything
// the previous sync did (controller.Expectations):
//
//  1. the manage step (planManage): a pod for each node that should run
//     one and has none, the extras of a node with several (the oldest
//     stays), failed pods deleted to be made again (at most once per
//     1 s doubling to 15 min per node, with a FailedDaemonPod event),
//     pods of nodes that should no longer run them deleted. A node
//     whose pod is terminating gets its new one when that is gone;
//  2. when that had nothing to do, the rolling update (planRollingUpdate):
//     with RollingUpdate, pods of older revisions are deleted while at
//     most maxUnavailable nodes lack an available pod (the manage step
//     makes their replacements); with maxSurge, the new pod is started
//     beside the old one on up to maxSurge nodes and the old one deleted
//     once the new one is available. OnDelete replaces nothing.
//
// At most 250 pods are created (in slow-start batches) and deleted per
// sync. Then the history is trimmed and the status written:
// desiredNumberScheduled, currentNumberScheduled, numberMisscheduled,
// numberReady, numberAvailable (ready for minReadySeconds, with a requeue
// for when the next one will be), numberUnavailable,
// updatedNumberScheduled, observedGeneration and collisionCount.
//
// # Revisions
//
// Each template is a ControllerRevision "<ds>-<hash>" (package history),
// labelled controller-revision-hash=<hash>; the pods carry the same label
// and pod-template-generation (the API server's template counter), and a
// pod is up to date when either matches. A rollback renumbers the old
// revision. Old revisions no pod runs are deleted beyond
// revisionHistoryLimit.
//
// Differences from upstream: the hash is FNV-32 of the revision's data
// (as StatefulSets do), where upstream hashes a printed dump of the
// template, so after switching from upstream's controller to this one
// the pods are replaced once, as after a template change.
package daemonset
