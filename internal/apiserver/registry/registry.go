package registry

// All returns every resource the API server serves, in discovery order.
// The list is static: adding a resource means adding it to one of the
// per-group functions below, nothing registers itself.
func All() []*Resource {
	var all []*Resource
	for _, group := range [][]*Resource{
		coreResources(),
		admissionregistrationResources(),
		apiextensionsResources(),
		appsResources(),
		authenticationResources(),
		authorizationResources(),
		autoscalingResources(),
		batchResources(),
		certificatesResources(),
		coordinationResources(),
		discoveryResources(),
		eventsResources(),
		flowcontrolResources(),
		networkingResources(),
		policyResources(),
		rbacResources(),
		resourceResources(),
		storageResources(),
		schedulingResources(),
		nodeResources(),
		apiregistrationResources(),
	} {
		all = append(all, group...)
	}
	return all
}
