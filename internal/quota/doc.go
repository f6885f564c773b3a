// Package quota is what a ResourceQuota charges for an object: the pure
// measurement both sides of quota share. Quota admission
// (internal/admission) charges a write before the object is stored; the
// resource quota controller (internal/controllers/resourcequota) later
// sums the stored objects. Both go through this package, so what
// admission charges is exactly what the next recalculation finds.
//
// Nothing here reads the API or keeps state: objects and the time come
// in, resource lists come out.
//
//	m := quota.MeasureFor(corev1.Resource("pods"))  // admission: one object
//	in, err := m.InScope(pod, quota.QuotaScopes(q))
//	used, err := m.Usage(pod, now)
//
//	ev := quota.NewPodEvaluator(listPods)          // controller: a namespace
//	used, measured, until, err := quota.CalculateUsage(q, []quota.Evaluator{ev}, now)
//	st, dirty := quota.NewStatus(q, used, measured)
//
// # What is counted
//
// A quota's status.used has, for every name in spec.hard
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
//     replicationcontrollers and resourcequotas.
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
// # Shape
//
// usage.go is Measure, the per-object view admission uses; evaluate.go the
// evaluators over lists of objects the controller uses; pods.go the pod
// arithmetic (requests, limits, scopes); resources.go resource-list
// helpers.
package quota
