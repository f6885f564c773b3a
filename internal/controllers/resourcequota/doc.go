// Package resourcequota is the resource quota controller: it keeps
// status.hard and status.used of every ResourceQuota true to what its
// namespace holds, as upstream's "resourcequota" controller (the name in
// --controllers) does. Quota admission, which refuses a create that would
// go over a limit, reads status.used; it charges what it admits at once,
// and this controller recalculates from the objects themselves, giving
// back what was deleted or finished and correcting any drift.
//
// # What is counted
//
// What one object costs and which scopes it falls under is decided in
// internal/quota, which quota admission uses too, so what admission
// charges is exactly what the next recalculation finds. status.hard is
// spec.hard; status.used has, for every name in spec.hard that some
// evaluator measures, the sum over the namespace's objects that fall
// under the quota's scopes. A name no evaluator knows is left as it was
// in status.used. An evaluator that fails leaves its names as they were
// too, and the sync is retried. Object counts are watched through
// metadata informers started the first time a quota names the kind
// (counts.go).
//
// # When
//
// A quota is synced when it is created or its spec changes, when an
// object of a kind it limits is added or deleted in its namespace or
// changes in a way that changes its usage (a pod finishing or starting to
// terminate, a service changing type, a claim growing), and in any case
// SyncPeriod (5 min, --resource-quota-sync-period) after its last sync.
// The status is written only when hard or used changed by value.
//
// # Shape
//
// The pure core (usage from objects, scopes and the time) is
// internal/quota. controller.go wires informers, the queue and status
// writes; counts.go starts object-count informers on demand; hold.go
// keeps what admission charged until a recalculation has seen it.
//
//	runnables, err := resourcequota.NewDescriptor(resourcequota.Config{SyncPeriod: time.Minute}).New(ctx, cx)
package resourcequota
