package apiserver

import (
	"context"
	"log/slog"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
)

// The CRD controller's writes: conditions, the cleanup finalizer, and the
// deletion of a terminating definition's objects. Every write goes through
// the CRD handler's own update path as the server's identity, so it is a
// compare-and-swap like a client's and skipped when nothing changes.

// updateStatus writes the conditions a definition's names earn: accepted
// and established, or refused with the conflicting name.
func (c *crdController) updateStatus(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, conflict *crdConflict) {
	now := metav1.NewTime(c.s.now())
	c.writeStatus(ctx, crd.Name, func(st *apiextensionsv1.CustomResourceDefinitionStatus, spec *apiextensionsv1.CustomResourceDefinitionSpec) {
		if conflict == nil {
			st.AcceptedNames = spec.Names
			crdSetCondition(st, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted,
				Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found"}, now)
			crdSetCondition(st, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
				Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}, now)
			return
		}
		crdSetCondition(st, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted,
			Status: apiextensionsv1.ConditionFalse, Reason: conflict.reason, Message: conflict.message}, now)
		if crdCondition(st, apiextensionsv1.Established) == nil || crdCondition(st, apiextensionsv1.Established).Status != apiextensionsv1.ConditionTrue {
			crdSetCondition(st, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established,
				Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"}, now)
		}
	})
}

// writeStatus applies change to the stored definition's status.
func (c *crdController) writeStatus(ctx context.Context, name string, change func(*apiextensionsv1.CustomResourceDefinitionStatus, *apiextensionsv1.CustomResourceDefinitionSpec)) {
	_, _, err := c.crds.guaranteedUpdate(ctx, updateRequest{name: name, subresource: "status", user: privileged,
		mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
			crd := cur.(*apiextensionsv1.CustomResourceDefinition)
			change(&crd.Status, &crd.Spec)
			return crd, false, nil
		}})
	if err != nil && ctx.Err() == nil {
		slog.Warn("custom resource definition status", "crd", name, "err", err)
	}
}

// setFinalizer adds or removes the cleanup finalizer. Removing the last
// finalizer of a terminating definition deletes it.
func (c *crdController) setFinalizer(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, add bool) {
	_, _, err := c.crds.guaranteedUpdate(ctx, updateRequest{name: crd.Name, user: privileged,
		mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
			m := objectMeta(cur)
			if add {
				if m.GetDeletionTimestamp() != nil {
					return cur, false, nil
				}
				m.SetFinalizers(addString(m.GetFinalizers(), registry.CRDCleanupFinalizer))
			} else {
				m.SetFinalizers(removeString(m.GetFinalizers(), registry.CRDCleanupFinalizer))
			}
			return cur, false, nil
		}})
	if err != nil && ctx.Err() == nil {
		slog.Warn("custom resource definition finalizer", "crd", crd.Name, "err", err)
	}
}

func crdCondition(st *apiextensionsv1.CustomResourceDefinitionStatus, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// crdSetCondition sets a condition, keeping its transition time unless its
// status changes.
func crdSetCondition(st *apiextensionsv1.CustomResourceDefinitionStatus, cond apiextensionsv1.CustomResourceDefinitionCondition, now metav1.Time) {
	cur := crdCondition(st, cond.Type)
	if cur == nil {
		cond.LastTransitionTime = now
		st.Conditions = append(st.Conditions, cond)
		return
	}
	if cur.Status == cond.Status {
		cond.LastTransitionTime = cur.LastTransitionTime
	} else {
		cond.LastTransitionTime = now
	}
	*cur = cond
}

// terminate deletes a terminating definition's objects, then lets the
// definition go by removing its finalizer. Objects with finalizers of
// their own are marked deleted and waited for. It reports whether the
// served table changed.
func (c *crdController) terminate(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) bool {
	changed := false
	if !slices.Contains(crd.Finalizers, registry.CRDCleanupFinalizer) {
		return c.unserve(crd.Name)
	}
	sv := c.served[crd.Name]
	if sv == nil || sv.uid != string(crd.UID) {
		changed = c.serve(ctx, crd)
		if sv = c.served[crd.Name]; sv == nil {
			return changed
		}
	}
	if !sv.terminating {
		sv.terminating = true
		for _, h := range sv.handlers {
			h.custom.terminating.Store(true)
		}
	}
	now := metav1.NewTime(c.s.now())
	c.writeStatus(ctx, crd.Name, func(st *apiextensionsv1.CustomResourceDefinitionStatus, _ *apiextensionsv1.CustomResourceDefinitionSpec) {
		crdSetCondition(st, apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating,
			Status: apiextensionsv1.ConditionTrue, Reason: "InstanceDeletionInProgress", Message: "CustomResource deletion is in progress"}, now)
	})
	if len(sv.handlers) == 0 {
		c.setFinalizer(ctx, crd, false)
		return c.unserve(crd.Name) || changed
	}
	remaining, err := c.deleteAll(ctx, sv.handlers[0])
	if err != nil {
		if ctx.Err() == nil {
			slog.Warn("deleting custom resources", "crd", crd.Name, "err", err)
		}
		return changed
	}
	if remaining > 0 {
		return changed // objects with finalizers: retried on the next pass
	}
	c.setFinalizer(ctx, crd, false)
	return c.unserve(crd.Name) || changed
}

// deleteAll deletes every stored object of a resource, read from etcd
// (not the cache, which may lag a create a moment old), and returns how
// many are still pending deletion.
func (c *crdController) deleteAll(ctx context.Context, h *resourceHandler) (int, error) {
	list, err := c.s.store.List(ctx, h.prefix(""), "", 0, 0)
	if err != nil {
		return 0, err
	}
	remaining := 0
	for _, kv := range list.KVs {
		obj, err := h.decodeKV(kv)
		if err != nil {
			continue
		}
		m := objectMeta(obj)
		_, pending, err := h.deleteObject(ctx, m.GetNamespace(), m.GetName(), &metav1.DeleteOptions{}, privileged)
		if err != nil && !apierrors.IsNotFound(err) {
			return 0, err
		}
		if pending {
			remaining++
		}
	}
	return remaining, nil
}
