// Package replicaset keeps the pods of every ReplicaSet, and of every
// ReplicationController, at spec.replicas: it creates pods from the
// template when there are too few, deletes the least valuable when there
// are too many, takes in matching orphans and lets go of pods that
// stopped matching, and reports what it counts in the status. It is
// upstream's replicaset and replicationcontroller controllers, with the
// same behaviour seen from the API, written on internal/controller.
//
// # Usage
//
// The manager builds the two controllers from their descriptors
// (--controllers names "replicaset" and "replicationcontroller"):
//
//	controller.RunManager(ctx, controller.ManagerConfig{
//		RestConfig:  rc,
//		Descriptors: []controller.Descriptor{replicaset.Descriptor, replicaset.RCDescriptor},
//	})
//
// # One sync
//
// Every event about a ReplicaSet or one of its pods queues the
// ReplicaSet's key; a sync (five run at once, never two for one key):
//
//  1. finds the candidate pods: those it controls and the orphans of its
//     namespace, from an index of the shared pod informer by controller
//     UID, so the cost is its own pods, not the namespace's;
//  2. claims them (planClaims): orphans matching the selector are
//     adopted with an owner reference (controller and blockOwnerDeletion
//     true), after one quorum read confirms the ReplicaSet is not being
//     deleted; owned pods whose labels no longer match are released;
//     pods of another controller are never touched;
//  3. if the previous sync's expectations are met (below), creates or
//     deletes pods to reach spec.replicas;
//  4. writes the status: replicas, fullyLabeledReplicas (pods carrying
//     every template label), readyReplicas, availableReplicas (ready for
//     minReadySeconds, with a requeue for when the next one will be),
//     terminatingReplicas (ReplicaSets only), observedGeneration, and the
//     ReplicaFailure condition while creating or deleting fails.
//
// Terminating pods (deletionTimestamp set) and terminal ones (Succeeded,
// Failed) do not count as replicas: a deleted pod is replaced at once,
// not when its node confirms the stop.
//
// # Never twice
//
// The informer lags the API: a sync that created 5 pods may run again
// before any of them is in the cache. So before acting a sync records its
// expectations (controller.Expectations): "5 creations", or "these 3 pods
// deleted". The pod event handlers tick them off, and a later sync
// touches replicas only once all have been seen (or 5 minutes have
// passed, in case an event was lost). Creations that fail are taken off
// at once, since they will never be seen. A restarted controller has no
// expectations and starts from what its freshly synced cache shows.
//
// # Creating
//
// At most BurstReplicas (500) pods per sync, in slow-start batches of 1,
// 2, 4, ... sent concurrently; the first batch with a failure ends the
// sync. A ReplicaSet over its quota thus makes one failing request per
// sync, with an event "Error creating: ..." and the ReplicaFailure
// condition (reason FailedCreate), not 500. A sync whose creations all
// succeeded lets the next one (within a minute) start at twice its
// largest batch, up to 250, so a scale-up of 10,000 does not go through
// nine round trips per 500 (slowStartMemory); a failure starts again at 1.
//
// # Counting
//
// Pod events that can only change the counts (a pod bound, Running,
// ready; a creation seen while others are awaited; the controller's own
// status write) sync the ReplicaSet at most once per StatusBatchPeriod
// (200 ms) after its previous sync ended, so thousands of pods changing
// at once cost a few recounts, not one each (statusBatcher). Events that
// may call for creating or deleting pods sync at once. A recount
// remembers each pod object's label answers (labelMemo), and a sync that
// follows the controller's own status write before the cache has it
// starts from the written copy instead of conflicting (writtenStatus). Each pod gets the template's
// labels, annotations, finalizers and spec, the name prefix "<name>-" and
// the event "Created pod: <name>".
//
// # Deleting
//
// When scaling down, the pods whose loss hurts least go first (see
// deletionOrder): not yet scheduled, then Pending before Unknown before
// Running, not ready before ready, lower pod-deletion-cost annotation,
// more sibling pods (of ReplicaSets with the same owner, e.g. one
// Deployment) on the same node, ready more recently, more restarts,
// created more recently. Times compare on a log2 scale, so pods of one
// wave tie and lose at random rather than always the newest.
//
// # ReplicationControllers
//
// An RC is read as the ReplicaSet it would be (its map selector as
// matchLabels) by a small adapter (workloadKind); pods it creates and
// events it writes name the RC. Its status has no terminatingReplicas.
package replicaset
