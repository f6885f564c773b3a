package garbagecollector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"

	"github.com/rudder-dev/rudder/internal/controller"
)

// errOwnerNotObserved requeues (with the runner's backoff) a dependent
// kept alive by an owner the API server has but the graph has not seen:
// the informer lags, or the owner's resource is not watched. Polling is
// the only way to learn when such an owner goes.
var errOwnerNotObserved = errors.New("an owner exists but has not been observed yet")

// errClusterScopedDependent: a cluster-scoped object cannot have a
// namespaced owner. Retrying cannot help, so the object is left alone.
var errClusterScopedDependent = errors.New("cluster-scoped objects cannot refer to namespaced owners")

// processAttemptToDelete looks at one object (key: its UID) and deletes
// it if all its owners are gone, trims references to owners that are
// gone, or, for an owner being deleted in the foreground, deletes its
// blocking dependents and finally lets it go.
func (c *collector) processAttemptToDelete(ctx context.Context, key string) (controller.Result, error) {
	v, ok := c.graph.view(types.UID(key))
	if !ok {
		return controller.Result{}, nil
	}
	// Being deleted is a one-way trip: wait for the deletion to finish,
	// then its dependents are looked at.
	if v.beingDeleted && !v.deletingDependents {
		return controller.Result{}, nil
	}
	if !v.deletingDependents && (len(v.owners) == 0 || v.ownersLive) {
		return controller.Result{}, nil
	}
	latest, err := c.get(ctx, v.id)
	if err != nil {
		return controller.Result{}, err
	}
	if latest == nil {
		// Gone, though the informer has not said so yet.
		c.apply(c.graph.forget(v.id.uid, true))
		return controller.Result{}, nil
	}
	if latest.DeletionTimestamp != nil {
		if !slices.Contains(latest.Finalizers, metav1.FinalizerDeleteDependents) {
			return controller.Result{}, nil
		}
		return controller.Result{}, c.finishForeground(ctx, v, latest)
	}
	if len(latest.OwnerReferences) == 0 {
		return controller.Result{}, nil
	}
	refs, err := c.classify(ctx, v.id, latest.OwnerReferences)
	if errors.Is(err, errClusterScopedDependent) {
		c.log.Info("cluster-scoped object refers to a namespaced owner; leaving it alone", "item", v.id.String())
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	verdict := judge(refs, latest.Finalizers, v.dependents)
	switch verdict.action {
	case keep:
		for _, r := range refs {
			if r.state == ownerSolid && !c.graph.observed(r.ref.UID) {
				return controller.Result{}, errOwnerNotObserved
			}
		}
		return controller.Result{}, nil
	case dropRefs:
		c.log.Info("removing references to owners that are gone or waiting for their dependents", "item", v.id.String(), "owners", verdict.drop)
		_, err := c.updateMeta(ctx, v.id, latest, func(m *metav1.ObjectMeta) map[string]any {
			refs, changed := withoutOwners(m.OwnerReferences, verdict.drop...)
			if !changed {
				return nil
			}
			return map[string]any{"ownerReferences": refs}
		})
		return controller.Result{}, err
	}
	if verdict.unblockFirst {
		c.log.Info("unblocking owner references before a foreground delete, to break a possible cycle", "item", v.id.String())
		patched, err := c.updateMeta(ctx, v.id, latest, func(m *metav1.ObjectMeta) map[string]any {
			refs, changed := unblocked(m.OwnerReferences)
			if !changed {
				return nil
			}
			return map[string]any{"ownerReferences": refs}
		})
		if err != nil || patched == nil {
			return controller.Result{}, err
		}
		latest = patched
	}
	c.log.Info("deleting object whose owners are gone", "item", v.id.String(), "propagationPolicy", verdict.policy)
	return controller.Result{}, c.deleteObject(ctx, v.id, latest, verdict.policy)
}

// finishForeground handles an owner being deleted in the foreground.
func (c *collector) finishForeground(ctx context.Context, v itemView, latest *metav1.PartialObjectMetadata) error {
	done, attempt := planForeground(v.dependents)
	if !done {
		for _, uid := range attempt {
			c.attemptToDelete.EnqueueKey(string(uid))
		}
		return nil
	}
	c.log.Info("dependents gone: removing the foregroundDeletion finalizer", "item", v.id.String())
	return c.removeFinalizer(ctx, v.id, latest, metav1.FinalizerDeleteDependents)
}

// processAttemptToOrphan releases the dependents of an owner deleted
// with the orphan policy (key: its UID), then removes its orphan
// finalizer so the API server can delete it.
func (c *collector) processAttemptToOrphan(ctx context.Context, key string) (controller.Result, error) {
	v, ok := c.graph.view(types.UID(key))
	if !ok {
		return controller.Result{}, nil
	}
	latest, err := c.get(ctx, v.id)
	if err != nil || latest == nil {
		return controller.Result{}, err
	}
	// A later delete may have changed the policy; act on what is there.
	if latest.DeletionTimestamp == nil || !slices.Contains(latest.Finalizers, metav1.FinalizerOrphanDependents) {
		return controller.Result{}, nil
	}
	if err := c.orphanDependents(ctx, v); err != nil {
		return controller.Result{}, err
	}
	c.log.Info("dependents released: removing the orphan finalizer", "item", v.id.String(), "dependents", len(v.dependents))
	return controller.Result{}, c.removeFinalizer(ctx, v.id, latest, metav1.FinalizerOrphanDependents)
}

// orphanParallelism bounds the writes of one orphaning.
const orphanParallelism = 16

// orphanDependents removes the owner's reference from each dependent.
func (c *collector) orphanDependents(ctx context.Context, owner itemView) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	sem := make(chan struct{}, orphanParallelism)
	for _, d := range owner.dependents {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			_, err := c.updateMeta(ctx, d.id, nil, func(m *metav1.ObjectMeta) map[string]any {
				refs, changed := withoutOwners(m.OwnerReferences, owner.id.uid)
				if !changed {
					return nil
				}
				return map[string]any{"ownerReferences": refs}
			})
			if err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("orphaning %s: %w", d.id, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// classify reads each owner live and says whether it is solid, dangling
// or waiting for its dependents.
func (c *collector) classify(ctx context.Context, item identity, refs []metav1.OwnerReference) ([]classifiedRef, error) {
	out := make([]classifiedRef, 0, len(refs))
	for _, ref := range refs {
		state, err := c.ownerState(ctx, item, ref)
		if err != nil {
			return nil, err
		}
		out = append(out, classifiedRef{ref: ref, state: state})
	}
	return out, nil
}

// ownerState reads one owner with a quorum read. Not found, or found
// with another UID, means the owner is gone; that answer is cached.
func (c *collector) ownerState(ctx context.Context, item identity, ref metav1.OwnerReference) (ownerState, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return 0, fmt.Errorf("ownerReference of %s has an invalid apiVersion %q: %w", item, ref.APIVersion, err)
	}
	key := absentKey{group: gv.Group, kind: ref.Kind, name: ref.Name, uid: ref.UID}
	if _, ok := c.absent.Get(key); ok {
		return ownerDangling, nil
	}
	key.namespace = item.namespace
	if _, ok := c.absent.Get(key); ok {
		return ownerDangling, nil
	}
	resource, namespaced, err := c.resourceFor(gv, ref.Kind)
	if err != nil {
		// An unknown kind may be a custom resource discovery has not
		// caught up with, or a typo; retried with backoff, as upstream.
		return 0, fmt.Errorf("ownerReference of %s: %w", item, err)
	}
	if namespaced && item.namespace == "" {
		return 0, errClusterScopedDependent
	}
	if !namespaced {
		key.namespace = ""
	}
	owner, err := c.metadata.Resource(resource).Namespace(key.namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.absent.Add(key, struct{}{})
		return ownerDangling, nil
	case err != nil:
		return 0, err
	case owner.UID != ref.UID:
		c.absent.Add(key, struct{}{})
		return ownerDangling, nil
	case owner.DeletionTimestamp != nil && slices.Contains(owner.Finalizers, metav1.FinalizerDeleteDependents):
		return ownerWaiting, nil
	}
	return ownerSolid, nil
}

// resourceFor maps an owner's group, version and kind to its resource.
// A version the server no longer serves falls back to the group's
// preferred one: every version serves the same objects, and the UID
// check decides identity.
func (c *collector) resourceFor(gv schema.GroupVersion, kind string) (schema.GroupVersionResource, bool, error) {
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	m, err := c.mapper.RESTMapping(gk, gv.Version)
	if err != nil && meta.IsNoMatchError(err) {
		m, err = c.mapper.RESTMapping(gk)
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

func (c *collector) client(id identity) metadata.ResourceInterface {
	return c.metadata.Resource(id.resource).Namespace(id.namespace)
}

// get reads an object live. It returns nil (and no error) if the object
// with that UID no longer exists.
func (c *collector) get(ctx context.Context, id identity) (*metav1.PartialObjectMetadata, error) {
	m, err := c.client(id).Get(ctx, id.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if m.UID != id.uid {
		return nil, nil
	}
	return m, nil
}

// deleteObject deletes an object as last read, with its UID and
// resourceVersion as preconditions: the decision was made on its owners
// at that version. If only something other than its owners changed since,
// the delete is retried with the UID alone.
func (c *collector) deleteObject(ctx context.Context, id identity, latest *metav1.PartialObjectMetadata, policy metav1.DeletionPropagation) error {
	uid, rv := id.uid, latest.ResourceVersion
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}, PropagationPolicy: &policy}
	err := c.client(id).Delete(ctx, id.name, opts)
	if apierrors.IsConflict(err) {
		live, gerr := c.get(ctx, id)
		switch {
		case gerr != nil:
			return gerr
		case live == nil:
			err = nil // gone meanwhile
		case reflect.DeepEqual(live.OwnerReferences, latest.OwnerReferences):
			opts.Preconditions.ResourceVersion = nil
			err = c.client(id).Delete(ctx, id.name, opts)
		}
	}
	if apierrors.IsNotFound(err) {
		c.apply(c.graph.forget(id.uid, true))
		return nil
	}
	return err
}

// removeFinalizer removes a finalizer from an object.
func (c *collector) removeFinalizer(ctx context.Context, id identity, latest *metav1.PartialObjectMetadata, finalizer string) error {
	_, err := c.updateMeta(ctx, id, latest, func(m *metav1.ObjectMeta) map[string]any {
		f, changed := withoutFinalizer(m.Finalizers, finalizer)
		if !changed {
			return nil
		}
		return map[string]any{"finalizers": f}
	})
	return err
}

// updateMeta changes an object's metadata. change gets the live
// metadata and returns the fields to write (nil: nothing to do); they
// are sent as a JSON merge patch carrying the UID and resourceVersion
// they were computed from, so a concurrent change fails the patch (409)
// and the change is recomputed on a fresh read. A merge patch works for
// every resource, built-in or custom. latest, if not nil, is a fresh
// read to start from. It returns the object as written, or nil if
// nothing was written (no change needed, or the object is gone).
func (c *collector) updateMeta(ctx context.Context, id identity, latest *metav1.PartialObjectMetadata, change func(*metav1.ObjectMeta) map[string]any) (*metav1.PartialObjectMetadata, error) {
	var written *metav1.PartialObjectMetadata
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur := latest
		latest = nil
		if cur == nil {
			var err error
			if cur, err = c.get(ctx, id); err != nil || cur == nil {
				return err
			}
		}
		fields := change(&cur.ObjectMeta)
		if fields == nil {
			return nil
		}
		fields["uid"] = cur.UID
		fields["resourceVersion"] = cur.ResourceVersion
		patch, err := json.Marshal(map[string]any{"metadata": fields})
		if err != nil {
			return err
		}
		written, err = c.client(id).Patch(ctx, id.name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			written = nil
			return nil
		}
		return err
	})
	return written, err
}
