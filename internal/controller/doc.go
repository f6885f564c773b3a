// Package controller is the runtime every controller in
// internal/controllers is built on: the work queue and its workers, the
// controller manager that builds and supervises controllers, and the
// pieces of event handling that would otherwise be written once per
// controller.
//
// # A controller
//
// A controller is a Reconciler (level-based: read the cache, act, return
// a Result) behind a rate-limited queue of keys:
//
//	c := controller.New("widget", workers, reconciler)
//	c.HasSynced = []cache.InformerSynced{inf.HasSynced}
//	inf.AddEventHandler(c.Handler()) // enqueue the object on every event
//	go c.Run(ctx)
//
// Errors requeue with per-key exponential backoff; a panic in Reconcile
// is an error, not a crash. Controllers are listed as Descriptors in
// internal/controllers/registry.go and built from a Context (shared
// informers, clients, an event recorder, the clock and logger, see
// Context.ClockOrReal and Context.Logger) by RunManager, which restarts
// a controller whose Run returns and, when asked, runs only while it
// holds the leader lease.
//
// # Events
//
// Informer event handlers only decide which keys to enqueue:
//
//   - ObjectOf unwraps the tombstone (cache.DeletedFinalStateUnknown) a
//     delete handler receives when the informer missed the final state.
//   - Dependents routes the events of owned objects (pods of a ReplicaSet,
//     StatefulSet, DaemonSet or Job; ReplicaSets of a Deployment; Jobs of a
//     CronJob) to their controlling owner, wakes the owners that may adopt
//     an orphan, and treats a graceful deletion as a deletion. The
//     controller's own rules (expectations, batched syncs, finalizers)
//     are its hooks.
//   - Controller.ForgettingHandler enqueues an owner and drops what the
//     controller remembered about it (expectations) when it is deleted or
//     replaced under the same name.
//   - Expectations keep a controller from acting twice on creations and
//     deletions its informer has not shown it yet.
//   - AddControllerUIDIndex indexes objects by their controller's UID, so
//     a sync finds its own pods (and the orphans it may adopt) without
//     scanning the namespace.
//
// Controllers that keep an object in every namespace use ActiveNamespace
// and IgnoreCreateRace, so they agree on when a namespace can take new
// objects and which create errors mean a lost race rather than a failure.
package controller
