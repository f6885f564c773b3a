// Package namespace is the namespace controller: it empties a namespace
// that is being deleted and then releases it, as kube-controller-manager's
// "namespace" controller does. Without it `kubectl delete namespace x`
// leaves x Terminating forever.
//
// # The protocol with the API server
//
// Every namespace is born with "kubernetes" in spec.finalizers. Deleting
// it only sets metadata.deletionTimestamp and status.phase Terminating;
// from then on the API server refuses new objects in it. This controller
// sees the deletion, deletes everything inside, and removes "kubernetes"
// from spec.finalizers through the namespaces/{name}/finalize subresource.
// A terminating namespace left with no finalizers is removed by the API
// server itself during that write.
//
//	kubectl delete ns x ─▶ deletionTimestamp, phase Terminating
//	                      │  (wait DeletionDelay, 5 s, so every API server
//	                      │   has seen it and refuses new content)
//	                      ▼
//	   discover namespaced resources ─▶ deletecollection each (or list +
//	   delete one by one) ─▶ list again: anything left?
//	        │ yes: update conditions, look again in estimate/2+1 s
//	        ▼ no
//	   PUT namespaces/x/finalize without "kubernetes" ─▶ x is gone
//
// # What "everything" is
//
// The set of resources comes from discovery
// (ServerPreferredNamespacedResources), so custom resources are included
// with no code here. A resource counts when its verbs include "delete";
// it is emptied with one deletecollection when it supports that, else by
// listing and deleting each object; resources that cannot be listed are
// trusted to be empty once deleted. Deletes are sent with
// propagationPolicy Background, so the garbage collector never adds an
// orphan finalizer that would hold the namespace. All requests go through
// the metadata client: the controller needs names and finalizers, never
// bodies.
//
// # Waiting
//
// Content does not vanish at once. Pods are deleted gracefully and stay
// until their node confirms; objects with finalizers stay until their
// finalizers' owners act. After each pass the controller lists every
// resource again and, if something remains, sets the namespace's
// conditions to say what (NamespaceContentRemaining: "Some resources are
// remaining: configmaps. has 1 resource instances",
// NamespaceFinalizersRemaining: "Some finalizers are remaining:
// example.com/hold in 1 resource instances") and looks again later. The
// estimate is upstream's: the longest terminationGracePeriodSeconds of
// the namespace's non-terminal pods, counted from the namespace's
// deletionTimestamp, or 15 s when only finalizers hold objects. Errors
// (discovery failing for some group, a delete refused) are reported in
// NamespaceDeletionDiscoveryFailure, NamespaceDeletionGroupVersionParsingFailure
// and NamespaceDeletionContentFailure, retried with the runner's backoff,
// and block the finalize: a namespace is never released while content
// may be left behind. Each condition is set False with upstream's "ok"
// reason once its problem clears, so `kubectl describe ns` tells the
// whole story.
//
// The condition bookkeeping is pure (conditions.go); the passes over the
// API are in deleter.go.
//
// Usage, through the controller manager:
//
//	runnables, err := namespace.Descriptor.New(ctx, cx)
package namespace
