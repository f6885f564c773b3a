// Package statefulset runs StatefulSets: pods with a stable identity
// (name, hostname, storage) that are created, removed and updated in a
// predictable order. It is upstream's statefulset controller, with the
// same behaviour seen from the API, written on internal/controller.
//
// # Usage
//
// The manager builds it from its descriptor ("statefulset" in
// --controllers):
//
//	controller.RunManager(ctx, controller.ManagerConfig{
//		RestConfig:  rc,
//		Descriptors: []controller.Descriptor{statefulset.Descriptor},
//	})
//
// Claims are deleted by the garbage collector (the retention policy below
// works through owner references), so it should run too.
//
// # Identity
//
// A set of n replicas keeps one pod per ordinal of [start, start+n)
// (start is spec.ordinals.start, 0 by default), named "<set>-<ordinal>",
// with hostname = its name and subdomain = spec.serviceName, so the
// headless service gives it a stable DNS name, and labels
// statefulset.kubernetes.io/pod-name and apps.kubernetes.io/pod-index.
// Each claim template becomes a PersistentVolumeClaim
// "<template>-<set>-<ordinal>" (labelled with the selector's
// matchLabels), created before the pod, and a volume of that name in the
// pod: a replacement pod gets its predecessor's storage back.
//
// # Order
//
// With podManagementPolicy OrderedReady (the default), ordinal i is
// created only once 0..i-1 are Running, Ready and available
// (minReadySeconds), and scaling down removes the highest ordinal first,
// one at a time, each once the one above it is gone. Parallel creates
// and deletes all at once. Failed and Succeeded pods are deleted to be
// made again.
//
// # Revisions and updates
//
// Every template the set has had is a ControllerRevision (package
// history): "<set>-<hash>", labelled controller.kubernetes.io/hash, with
// rising revision numbers; going back to an earlier template renumbers
// its revision instead of copying it. Status names the current revision
// (what the pods ran before the update) and the update revision (the
// template now), and each pod carries the one it was made from in its
// controller-revision-hash label. A pod is updated by deleting it: it
// comes back from the update revision.
//
//   - RollingUpdate deletes outdated pods from the highest ordinal down to
//     rollingUpdate.partition, one at a time, each once the pod above is
//     back and available; with rollingUpdate.maxUnavailable (a field the
//     API keeps only where it was already set) up to that many pods are
//     down at once. Pods below the partition stay at the current
//     revision, and one lost there comes back at it.
//   - OnDelete leaves pods as they are until someone deletes them.
//
// When every pod is updated and ready, the update revision becomes
// current. Revisions no pod uses beyond revisionHistoryLimit are deleted,
// oldest first.
//
// # Claim retention
//
// persistentVolumeClaimRetentionPolicy decides what happens to claims,
// through their owner references as upstream does it:
// whenDeleted=Delete makes the set their controller (they go with the
// set); whenScaled=Delete makes the pod of a removed ordinal the
// controller of its claims just before the pod is deleted (they go with
// it). A pod is not created on a claim still owned by an earlier pod of
// its name, nor on one being deleted: it waits for the claim to go and
// then gets a fresh one. Retain (both defaults) leaves claims alone.
//
// # One sync
//
// Every event about a set or its pods queues the set's key; a sync (five
// at once, never two for one key) claims the set's pods (those its name
// and selector make members) and revisions, finds or writes the update
// revision, asks the pure core (planSync) what to do, runs those writes
// and writes the status: replicas, readyReplicas, availableReplicas,
// currentReplicas, updatedReplicas, currentRevision, updateRevision,
// collisionCount and observedGeneration. Expectations
// (controller.Expectations) keep a sync from acting before the cache
// shows what the previous one did, and deletes carry the pod's UID as a
// precondition, so a stale cache never deletes a replacement pod.
//
// Not done: pod volumes are not rewritten when a member's storage does
// not match the claim templates (pod volumes cannot be updated); the
// StatefulSet conditions upstream does not set either stay empty.
package statefulset
