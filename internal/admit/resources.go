package admit

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// How the API server describes what it serves to the plugins that need
// it; internal/apiserver/registry builds both lists from its resources.

// ResourceKind names one served resource: what a paramKind resolves to
// and, with New, what a policy's expressions are type-checked against.
type ResourceKind struct {
	Resource   schema.GroupVersionResource
	Kind       string
	Namespaced bool
	// New returns an empty object of the resource's Go type; nil for
	// kinds without one (custom resources).
	New func() runtime.Object
}

// ServedResource is one resource the server serves, as the webhook
// plugins need to know it: matchPolicy Equivalent matches a write under
// the other resources served from the same storage (autoscaling/v1 and
// v2 HorizontalPodAutoscalers, core and events.k8s.io Events), whose
// objects the conversions below translate; and an object a webhook
// patched gets its resource's defaults again, as a decoded object would.
type ServedResource struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
	// Default fills the resource's defaults; nil for none.
	Default func(runtime.Object)
	// Storage is the resource whose objects this one serves, converted;
	// zero when it is stored as itself. ToStorage and FromStorage
	// convert to and from it, returning new objects.
	Storage                schema.GroupVersionResource
	ToStorage, FromStorage func(runtime.Object) runtime.Object
}

// StorageIdentity is what equivalent resources share.
func (s ServedResource) StorageIdentity() schema.GroupResource {
	if !s.Storage.Empty() {
		return s.Storage.GroupResource()
	}
	return s.Resource.GroupResource()
}
