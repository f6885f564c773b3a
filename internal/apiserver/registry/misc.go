package registry

import (
	coordinationv1 "k8s.io/api/coordination/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func coordinationResources() []*Resource {
	return []*Resource{
		{Group: "coordination.k8s.io", Version: "v1", Resource: "leases", Kind: "Lease", Singular: "lease", Namespaced: true,
			New:      func() runtime.Object { return &coordinationv1.Lease{} },
			Validate: validateLease, ValidateUpdate: validateLeaseUpdate, Table: leaseTable},
	}
}

func discoveryResources() []*Resource {
	return []*Resource{
		{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices", Kind: "EndpointSlice", Singular: "endpointslice", Namespaced: true,
			New:     func() runtime.Object { return &discoveryv1.EndpointSlice{} },
			Default: defaultEndpointSlice, HasGeneration: true, Validate: validateEndpointSlice, ValidateUpdate: validateEndpointSliceUpdate,
			Table: endpointSliceTable},
	}
}

func eventsResources() []*Resource {
	return []*Resource{
		{Group: "events.k8s.io", Version: "v1", Resource: "events", Kind: "Event", Singular: "event", Namespaced: true, ShortNames: []string{"ev"},
			New:      func() runtime.Object { return &eventsv1.Event{} },
			Validate: validateEventsV1, ValidateUpdate: validateEventsV1Update, Fields: eventsV1Fields, Table: eventsV1Table,
			Storage: coreEventsStorage()},
	}
}
