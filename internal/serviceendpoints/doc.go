// Package serviceendpoints decides, for the two controllers that publish a
// Service's backends, what they both must agree on about a pod: does it
// belong in the Service's endpoints at all, is it ready, which port does
// a service port reach on it, which hostname it gets, and which Services
// must look again after it changed. The EndpointSlice controller
// (internal/controllers/endpointslice) and the Endpoints controller
// (internal/controllers/endpoints) both call it, so the Endpoints and the
// EndpointSlices of one Service always agree on who is in.
//
// Everything here is pure over the objects given (and a Service lister
// for ServicesForPodEvent), except TriggerTimes, which remembers per
// Service what the previous sync saw:
//
//	for _, pod := range pods {
//		if !serviceendpoints.PodInEndpoints(pod, includeTerminating) {
//			continue
//		}
//		port, ok := serviceendpoints.FindPort(pod, &svc.Spec.Ports[0])
//		ready := serviceendpoints.PodReady(pod)
//		…
//	}
//	annotation := triggers.Compute(svc, pods) // last-change-trigger-time
package serviceendpoints
