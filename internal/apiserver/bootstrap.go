package apiserver

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// EnsureObjects creates each object that does not exist yet, through the
// same defaults, validation and admission as a client's create, as the
// server's own privileged identity. Existing objects are left as they are.
func (s *Server) EnsureObjects(ctx context.Context, objs []runtime.Object) error {
	for _, obj := range objs {
		gvk := obj.GetObjectKind().GroupVersionKind()
		var h *resourceHandler
		for _, cand := range s.handlers {
			if cand.gvk == gvk {
				h = cand
				break
			}
		}
		if h == nil {
			return fmt.Errorf("bootstrap: no resource serves %s", gvk)
		}
		m := objectMeta(obj)
		if _, _, err := h.getStored(ctx, m.GetNamespace(), m.GetName()); err == nil {
			continue
		} else if !apierrors.IsNotFound(err) {
			return err
		}
		if _, err := h.createObject(ctx, obj.DeepCopyObject(), privileged, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("bootstrap %s %s: %w", gvk.Kind, m.GetName(), err)
		}
	}
	return nil
}
