// Package garbagecollector deletes objects whose owners are gone, as
// kube-controller-manager's "garbage-collector" does. An object names its
// owners in metadata.ownerReferences; when every owner has been deleted,
// the object is deleted too. It also carries out the two deletion
// policies the API server leaves to it:
//
//   - Foreground (propagationPolicy=Foreground): the API server marks the
//     owner deleted and adds the foregroundDeletion finalizer. The
//     collector deletes the owner's dependents and removes the finalizer
//     once no dependent with blockOwnerDeletion=true is left; then the
//     API server removes the owner.
//   - Orphan (propagationPolicy=Orphan): the API server adds the orphan
//     finalizer. The collector removes the owner's reference from every
//     dependent, then the finalizer; the dependents stay.
//
// Background deletion (kubectl's default) needs no finalizer: the owner
// goes at once and the collector then deletes the dependents.
//
// # Usage
//
// The manager builds it from its descriptor ("garbage-collector" in
// --controllers):
//
//	controller.RunManager(ctx, controller.ManagerConfig{
//		RestConfig:  rc,
//		Descriptors: []controller.Descriptor{garbagecollector.Descriptor},
//	})
//
// NewDescriptor takes a Config (workers, discovery period, ignored
// resources) for tests and tuning.
//
// # Watching everything
//
// Ownership crosses types (a Pod owned by a ReplicaSet owned by a
// Deployment, a ConfigMap owned by a custom resource), so the collector
// watches every resource that supports list, watch and delete, as
// discovery reports them (preferred versions, built-in and custom; events
// are ignored). Each resource gets its own metadata-only informer (a
// "monitor") that keeps just the fields the collector reads: UID, name,
// namespace, ownerReferences, deletionTimestamp and the two finalizers
// above. Discovery is read again every 30 s: a new custom resource gets a
// monitor, a removed one has its monitor stopped and its objects
// forgotten. A group that fails discovery keeps its monitors, so a
// briefly unavailable aggregated API does not look like deleted objects.
//
// # The graph
//
// The informers' events build a graph (graph.go): a node per observed
// object, and for every owner UID the observed objects referring to it.
// The graph is pure data; each change returns its effects (objects to
// look at, owners to orphan, warnings to record) for the collector to
// carry out. An owner referred to but never observed is upstream's
// "virtual node": just a UID with dependents. Its dependents are queued
// as they are observed, and each checks its own reference with a live
// read.
//
// A namespaced object may only be owned by an object in its namespace or
// by a cluster-scoped one. A reference that names a namespaced owner in
// another namespace (or any namespaced owner, from a cluster-scoped
// object) is reported with a Warning event OwnerRefInvalidNamespace on
// the dependent. For a namespaced dependent such an owner reads as
// absent (the read is made in the dependent's namespace); a
// cluster-scoped dependent with one is left alone.
//
// # Deciding, safely
//
// Work goes through two queues keyed by UID, upstream's
// attemptToDelete and attemptToOrphan, run by internal/controller (so
// retries back off per object). Processing an object from
// attemptToDelete:
//
//  1. An object being deleted is left to finish, unless it waits for its
//     dependents (foreground), in which case its blocking dependents are
//     queued, or, if none is left, its finalizer removed.
//  2. If the graph shows every owner present and named exactly, nothing
//     is to be done and nothing is read. The graph is trusted only in this
//     direction: a stale graph can keep an object a little longer, never
//     delete one.
//  3. Otherwise the object itself and then each owner are read live
//     (quorum reads). An owner is gone only if the API server says so:
//     not found, or the name now holds an object with another UID.
//     Confirmed absences are cached (UIDs never come back).
//  4. judge (plan.go) decides: with an owner still there, references to
//     owners that are gone (or waiting in the foreground) are removed;
//     with none left, the object is deleted (in the foreground if an
//     owner waits for it and it has dependents of its own, so the owner
//     waits for the whole subtree; otherwise honouring its own orphan or
//     foreground finalizer, else in the background).
//
// Every write carries preconditions: deletes the UID and the
// resourceVersion the decision was made at (retried on the UID alone if
// only fields other than the owners changed), metadata patches the UID
// and resourceVersion (a conflict rereads and recomputes). So no object
// is deleted while an owner it names exists, even as objects change
// under the collector.
//
// # Restarts
//
// All state is rebuilt from the API server: a new run lists every
// resource, and an object seen for the first time with a deletion in
// progress (foreground or orphan) is handled as if the deletion had just
// begun. Each Run of the Runnable starts from an empty graph, so a
// supervisor may restart it at any time.
package garbagecollector
