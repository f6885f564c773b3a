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
// status.hard is spec.hard. status.used has, for every name in spec.hard
// that some evaluator measures, the sum over the namespace's objects that
// fall under the quota's scopes:
//
//   - pods (pods.go): "pods" and compute — cpu, memory, ephemeral-storage
//     and hugepages-* requests under their bare and requests.* names,
//     limits.* for limits, requests.<name> for extended resources
//     (example.com/gpu) — for every pod that is not Succeeded or Failed
//     and not stuck terminating (deletionTimestamp plus grace period
//     passed; the controller looks again at that moment). A pod's
//     requests are the larger of its containers plus sidecars and its
//     init peak, pod-level resources taking over what they name, plus
//     overhead; during an in-place resize the larger of spec and status.
//     count/pods counts every pod, finished or not.
//   - services: services, count/services, services.loadbalancers,
//     services.nodeports (one per port of NodePort and LoadBalancer
//     services, unless the load balancer opted out of node ports).
//   - persistentvolumeclaims: persistentvolumeclaims, requests.storage
//     (the request, or a larger allocation, in whole bytes), and both per
//     storage class as <class>.storageclass.storage.k8s.io/<name>.
//   - object counts: count/<resource>.<group> (count/<resource> for the
//     core group) for any namespaced resource that supports create, list,
//     watch and delete, and the legacy names configmaps, secrets,
//     replicationcontrollers and resourcequotas. These are watched through
//     metadata informers started the first time a quota names the kind
//     (counts.go).
//
// A name no evaluator knows is left as it was in status.used. An evaluator
// that fails leaves its names as they were too, and the sync is retried.
//
// # Scopes
//
// spec.scopes and spec.scopeSelector restrict which objects count: every
// requirement must hold. Pods know Terminating / NotTerminating (has
// activeDeadlineSeconds or not), BestEffort / NotBestEffort (QoS class),
// PriorityClass (exists, or In / NotIn / DoesNotExist over the pod's
// priorityClassName) and CrossNamespacePodAffinity (an affinity term that
// names or selects other namespaces). Claims know VolumeAttributesClass.
// Nothing else falls under any scope, so a scoped quota counts no
// services and no objects by count.
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
// evaluate.go and pods.go are the pure core: usage from objects, scopes
// and the time. controller.go wires informers, the queue and status
// writes; counts.go starts object-count informers on demand.
//
//	runnables, err := resourcequota.NewDescriptor(resourcequota.Config{SyncPeriod: time.Minute}).New(ctx, cx)
package resourcequota
