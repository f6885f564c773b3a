// Package endpointslice is the EndpointSlice controller: for every
// Service with a selector it keeps discovery.k8s.io/v1 EndpointSlices
// listing the pods the selector matches, as kube-controller-manager's
// "endpointslice" controller does. Proxies and DNS servers read these
// slices to route to a Service.
//
// # Usage
//
// The manager builds it from its descriptor ("endpointslice" in
// --controllers); NewDescriptor sets --max-endpoints-per-slice:
//
//	runnables, err := endpointslice.Descriptor.New(ctx, cx)
//
// # What a slice holds
//
// Each slice belongs to one Service (label kubernetes.io/service-name,
// controller owner reference with blockOwnerDeletion, so the garbage
// collector removes it with the Service), carries the Service's labels,
// endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io
// (slices managed by anyone else are never touched) and
// service.kubernetes.io/headless for a Service without a cluster IP. It
// is named "<service>-" plus a generated suffix, and holds at most
// MaxEndpointsPerSlice (100) endpoints of one address type (one per IP
// family of the Service) and one port list: a named targetPort is
// resolved on each pod, so pods that number it differently, or lack it,
// land in slices of their own.
//
// An endpoint is one pod with an IP that has not finished: its addresses
// of the slice's family, its node, its node's topology.kubernetes.io/zone,
// a target reference to the pod, its hostname when the pod names the
// Service as its subdomain, and three conditions:
//
//	serving      the pod is Ready
//	terminating  the pod is being deleted
//	ready        serving and not terminating (always true when the
//	             Service publishes not-ready addresses)
//
// A Service that selects nothing gets one empty placeholder slice.
//
// # Few writes
//
// Every slice write reaches every proxy in the cluster, so a sync writes
// as little as it can (planSlices, a pure function): an endpoint that did
// not change stays where it is; a changed one is updated in place; new
// endpoints first fill slices being written anyway, then the one existing
// slice they fill best, and only then new slices; an emptied slice is
// deleted, or reused for a slice that would otherwise be created. Slices
// are not repacked for density.
//
// # Never twice
//
// The informer lags the API. A sync planned from a cache that misses the
// slice the previous sync created would create it again. So the
// controller remembers the version of every slice it wrote and every
// slice it deleted (sliceTracker); a sync whose cache is older than that
// is refused and retried with back-off. The same record tells the events
// of its own writes, which need no sync, from changes made by others,
// which do. A restarted controller has no record and starts from its
// freshly synced cache, which holds every slice that exists.
//
// What it decides about one pod (is it in, is it ready, which port,
// which Services to look at again after it changed) and the trigger-time
// annotation come from internal/serviceendpoints, which the Endpoints
// controller (internal/controllers/endpoints) uses too, so the two
// objects of one Service agree.
//
// Not done: topology hints (service.kubernetes.io/topology-mode and
// trafficDistribution) and the controller's metrics.
package endpointslice
