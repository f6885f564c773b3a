package apiserver

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GetObject implements admission.ObjectSource: one object of a served
// resource, from the watch cache, else from etcd, because an object
// created a moment ago may not be cached yet. It returns nil, nil when
// there is none. A cached object is shared: callers must not modify it.
func (s *Server) GetObject(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	h, ok := s.handlerFor(gvr)
	if !ok {
		return nil, fmt.Errorf("resource %s is not served", gvr)
	}
	if o := h.cache.get(h.key(namespace, name)); o != nil {
		return o.obj, nil
	}
	obj, _, err := h.getStored(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return obj, err
}

// ListObjects implements admission.ObjectSource: the cached objects of a
// served resource in namespace (every namespace, or a cluster-scoped
// resource, for ""). Without fresh the answer may miss writes made a
// moment ago; with it the cache first catches up with etcd, as a list
// without resourceVersion does, and etcd answers when the cache cannot
// catch up in time. The objects are shared: callers must not modify
// them.
func (s *Server) ListObjects(ctx context.Context, gvr schema.GroupVersionResource, namespace string, fresh bool) ([]runtime.Object, error) {
	h, ok := s.handlerFor(gvr)
	if !ok {
		return nil, fmt.Errorf("resource %s is not served", gvr)
	}
	prefix := h.prefix(namespace)
	if fresh {
		if _, err := h.cache.freshRevision(ctx); err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			items, _, _, _, err := h.readPages(ctx, prefix, "", 0, 0, nil)
			if err != nil {
				return nil, err
			}
			return cachedObjects(items), nil
		}
	}
	items, _ := h.cache.list(prefix, nil)
	return cachedObjects(items), nil
}

func cachedObjects(items []*cacheObject) []runtime.Object {
	out := make([]runtime.Object, len(items))
	for i, o := range items {
		out[i] = o.obj
	}
	return out
}
