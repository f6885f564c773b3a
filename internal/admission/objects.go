package admission

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ObjectSource is how plugins read the cluster: the API server backs it
// with its watch caches (apiserver.Server implements it), so admission
// costs no request to another component.
//
// GetObject returns nil, nil when the object does not exist; it falls
// back to storage on a cache miss, so an object created a moment ago is
// found. ListObjects lists a namespace ("" for all, or for a
// cluster-scoped resource) from the cache; fresh makes it wait until the
// cache has caught up with storage first, at the cost of a storage read.
// Returned objects are shared with the cache: plugins must not modify
// them, and copy what they put into the admitted object.
type ObjectSource interface {
	GetObject(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error)
	ListObjects(ctx context.Context, gvr schema.GroupVersionResource, namespace string, fresh bool) ([]runtime.Object, error)
}

// The resources the pod-shaping plugins read or judge.
var (
	podsResource            = schema.GroupResource{Resource: "pods"}
	nodesResource           = schema.GroupResource{Resource: "nodes"}
	pvcsResource            = schema.GroupResource{Resource: "persistentvolumeclaims"}
	serviceAccountsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	limitRangesGVR          = schema.GroupVersionResource{Version: "v1", Resource: "limitranges"}
	priorityClassesGVR      = schema.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1", Resource: "priorityclasses"}
	priorityClassesResource = priorityClassesGVR.GroupResource()
)

// forbiddenFor is upstream's admission Forbidden: a 403 on the request's
// resource, named as the client named it. Mutating admission runs before a
// generateName is expanded, so such an object is named by its prefix, and
// one with neither by "Unknown". An error that already is a Forbidden is
// returned as it is.
func forbiddenFor(a *Attributes, err error) error {
	if apierrors.IsForbidden(err) {
		return err
	}
	name := a.Name
	if name == "" {
		name = "Unknown"
		if a.Object != nil {
			if m, merr := meta.Accessor(a.Object); merr == nil {
				if m.GetName() != "" {
					name = m.GetName()
				} else if m.GetGenerateName() != "" {
					name = m.GetGenerateName()
				}
			}
		}
	}
	return apierrors.NewForbidden(a.Resource.GroupResource(), name, err)
}
