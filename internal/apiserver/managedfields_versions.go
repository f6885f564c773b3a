package apiserver

// Managed fields across versions. Some kinds are served in several
// versions from one set of stored objects: HorizontalPodAutoscalers as
// autoscaling/v1 and v2, Events as core v1 and events.k8s.io/v1. Each
// managedFields entry names the version its manager wrote through, and
// when another version writes, the field manager converts the objects to
// the entry's version to work out what that manager still owns; a version
// it cannot convert to is dropped, and the entry with it. Upstream's
// scheme converts between any two served versions; here the registry's
// StorageView conversions do it, through the stored shape: from one view
// to storage with ToStorage, from storage to the other with FromStorage.

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// versionPeers returns the built-in resources of h's kind whose objects
// are h's (the same storage), h's own included, by group version; nil if
// there is only h. The handlers are fixed once the server is built.
func (h *resourceHandler) versionPeers() map[schema.GroupVersion]*registry.Resource {
	if h.res.CustomResource || h.s == nil {
		return nil
	}
	group, resource := storedAs(h.res)
	peers := map[schema.GroupVersion]*registry.Resource{}
	for _, o := range h.s.handlers {
		if o.res.CustomResource || o.gvk.Kind != h.gvk.Kind || o.cache == nil {
			continue
		}
		if g, r := storedAs(o.res); g == group && r == resource {
			peers[o.gvk.GroupVersion()] = o.res
		}
	}
	if len(peers) < 2 {
		return nil
	}
	return peers
}

// convertPeer converts in, an object of version from (typed, or
// unstructured as the field manager makes them), to version to, through
// the stored shape. A version not among the peers is not registered.
func (s *resourceScheme) convertPeer(in runtime.Object, from schema.GroupVersionKind, to schema.GroupVersion) (out runtime.Object, err error) {
	fromRes, toRes := s.peers[from.GroupVersion()], s.peers[to]
	if fromRes == nil || toRes == nil {
		return nil, runtime.NewNotRegisteredGVKErrForTarget("rudder", from, to)
	}
	// The conversions are written for valid typed objects; whatever they
	// meet in a managedFields entry must not take the server down.
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("converting %s to %s: %v", from, to, p)
		}
	}()
	typed := fromRes.New()
	switch v := in.(type) {
	case *unstructured.Unstructured:
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(v.Object, typed); err != nil {
			return nil, err
		}
	default:
		if reflect.TypeOf(in) != reflect.TypeOf(typed) {
			return nil, fmt.Errorf("converting %s: got %T, want %T", from, in, typed)
		}
		typed = in.DeepCopyObject()
	}
	if from.GroupVersion() != to {
		if fromRes.Storage != nil {
			typed = fromRes.Storage.ToStorage(typed)
		}
		if toRes.Storage != nil {
			typed = toRes.Storage.FromStorage(typed)
		}
	}
	typed.GetObjectKind().SetGroupVersionKind(to.WithKind(s.gvk.Kind))
	return typed, nil
}
