// Package disruption is the disruption controller: it keeps the status of
// every PodDisruptionBudget current, so that the eviction subresource of
// pods can tell at a glance whether one more voluntary disruption is
// allowed. It is upstream's "disruption" controller (the name in
// --controllers), written on internal/controller.
//
// # A budget's numbers
//
// The pods of a budget are those of its namespace that its selector
// matches (an empty selector matches them all, as in policy/v1). From them:
//
//   - expectedPods: with an integer minAvailable, the number of those
//     pods. Otherwise (a percentage minAvailable, or maxUnavailable in
//     any form) the sum of the scales of the pods' controllers, each
//     controller counted once: a Deployment (found through the pod's
//     ReplicaSet), a ReplicaSet, a ReplicationController, a StatefulSet,
//     or any other kind through its /scale subresource. Pods without a
//     controller add nothing and get the budget an UnmanagedPods event;
//     a controller that cannot be found fails the sync (below).
//   - desiredHealthy: minAvailable, or expectedPods - maxUnavailable (not
//     below 0). Percentages round up: minAvailable "50%" of 3 is 2, and
//     maxUnavailable "50%" of 3 is also 2 (so desiredHealthy is 1).
//   - currentHealthy: pods that are Ready, not being deleted, and not in
//     status.disruptedPods (evicted less than DeletionTimeout, 2 min,
//     ago — the eviction is in flight). unhealthyPodEvictionPolicy does
//     not enter here; it only changes what the eviction subresource may
//     evict.
//   - disruptionsAllowed: currentHealthy - desiredHealthy, never
//     negative, and 0 while expectedPods is 0.
//   - disruptedPods: the eviction subresource adds entries; this
//     controller drops those whose pod is gone, being deleted, or was not
//     deleted within DeletionTimeout (then with a NotDeleted event on the
//     pod), and syncs the budget again when the next entry expires.
//   - observedGeneration and the DisruptionAllowed condition: True with
//     reason SufficientPods when disruptionsAllowed > 0, else False with
//     InsufficientPods.
//
// The status is written only when one of these changed. When the numbers
// cannot be computed, the budget fails safe: disruptionsAllowed 0 and
// DisruptionAllowed False with reason SyncFailed and the error as the
// message; then it is retried with back-off (upstream waits for the next
// event instead).
//
// # What triggers a sync
//
// A budget is synced when it changes, when a pod its selector matches (or
// matched) is added, changed or deleted, and — unlike upstream, which
// notices only through the pods — when a workload in its namespace changes
// its replicas, for budgets whose numbers depend on scales. A pod matching
// several budgets queues all of them, with a MultiplePodDisruptionBudgets
// event when it appears or changes labels (the eviction subresource
// refuses such pods).
//
// # Stale DisruptionTarget conditions
//
// A second queue watches pods that carry DisruptionTarget=True while not
// being deleted and not terminal (an eviction or preemption that marked
// the pod and then gave up). After StalePodDisruptionTimeout (2 min) from
// the condition's last transition it is reset to False. Conditions set by
// the kubelet (reason TerminationByKubelet) are left alone.
//
// # Shape
//
// budget.go is the pure core: counts and statuses from the budget, its
// pods, a scale finder and the time. scale.go finds controllers' scales,
// disruption.go wires informers, queues and status writes.
package disruption
