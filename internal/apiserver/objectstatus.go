package apiserver

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// UpdateObjectStatus implements admission.StatusWriter: a status write
// from inside the server (quota admission charging a ResourceQuota), as
// the server's own identity, with the validation and admission of a
// client's PUT .../status. It is a compare-and-swap on obj's
// resourceVersion, which must be set: a stale one is a 409 Conflict and
// nothing is written. It returns the stored object, with its new
// resourceVersion.
func (s *Server) UpdateObjectStatus(ctx context.Context, gvr schema.GroupVersionResource, obj runtime.Object) (runtime.Object, error) {
	h, ok := s.handlers[gvr]
	if !ok || !h.res.HasStatus {
		return nil, fmt.Errorf("resource %s has no status", gvr)
	}
	m := objectMeta(obj)
	if m.GetResourceVersion() == "" {
		return nil, fmt.Errorf("status write of %s %s/%s without a resourceVersion", gvr.Resource, m.GetNamespace(), m.GetName())
	}
	out, _, err := h.guaranteedUpdate(ctx, updateRequest{
		namespace: m.GetNamespace(), name: m.GetName(), subresource: "status", user: privileged,
		track: true, manager: serverManager, replaces: true,
		mutate: func(runtime.Object) (runtime.Object, bool, error) { return obj.DeepCopyObject(), true, nil },
	})
	return out, err
}
