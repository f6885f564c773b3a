package controller

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// Dependents routes the informer events of dependents (pods, most often)
// to the owners that control them, for controllers that sync an owner
// whenever one of its dependents changes: the pods of a ReplicaSet,
// StatefulSet, DaemonSet or Job, the ReplicaSets of a Deployment, the
// Jobs of a CronJob.
//
// The routing is the same for every such controller; what it does once
// the owner is known differs (expectations, batched or immediate syncs,
// finalizers), so that part is left to the hooks:
//
//   - An owner is the object a dependent's controller reference names,
//     if it is of OwnerKind, in the cache, and has the reference's UID (a
//     reference to an owner deleted and created again under the same name
//     is not followed).
//   - A dependent seen already terminating, or whose graceful deletion
//     began, counts as deleted at once: a controller replaces it now, not
//     when its node confirms (UpdateTerminating turns this off for
//     updates). Its removal is seen as deleted again; the expectations
//     count each pod key once.
//   - An update whose resourceVersion did not change is a resync and is
//     dropped.
//   - An update that moves the controller reference wakes the old owner
//     (Released) as well as the new one.
//   - A dependent without a controller is an orphan: every owner whose
//     selector matches it (Adopters) is synced, on its creation and when
//     its labels or reference change, so it can adopt it.
//
// Handler returns the handler to register on the dependents' informer.
// The fields are read-only once it is registered.
type Dependents[O, D metav1.Object] struct {
	// OwnerKind is the Kind a controller reference must name, e.g.
	// "ReplicaSet". Only the Kind is compared (the UID decides the rest).
	OwnerKind string
	// GetOwner reads an owner from the informer cache.
	GetOwner func(namespace, name string) (O, error)
	// Adopters returns the owners that may adopt an orphan dependent
	// (their selectors match it). Nil: orphans wake nobody.
	Adopters func(dep D) []O
	// Enqueue syncs the owner under key ("namespace/name"). It is also
	// what a nil hook below does.
	Enqueue func(key string)
	// Expectations, if set, are told of what the owner sees happen: a
	// creation (CreationObserved) before Created, a deletion
	// (DeletionObserved, by the dependent's "namespace/name") before
	// Deleted.
	Expectations *Expectations

	// Created: an owned dependent appeared, not terminating.
	Created func(key string, owner O, dep D)
	// Updated: an owned dependent changed and is not terminating. moved
	// reports that its controller reference or labels changed too.
	Updated func(key string, owner O, old, cur D, moved bool)
	// Released: an update moved cur's controller reference away from
	// owner.
	Released func(key string, owner O, cur D)
	// Deleted: an owned dependent was removed (final) or began its
	// graceful deletion (!final).
	Deleted func(key string, owner O, dep D, final bool)
	// Orphan, if set, sees each creation and update of a dependent with
	// no controller reference, and each deletion of a dependent whose
	// controller is not (or no longer) in the cache.
	Orphan func(dep D, final bool)
	// DeleteOldOnRelabel: when a graceful deletion begins with a change
	// of labels, also treat the old object as deleted (the ReplicaSet and
	// StatefulSet controllers do, as upstream's do).
	DeleteOldOnRelabel bool
	// UpdateTerminating routes an update of a dependent whose graceful
	// deletion has begun as an update (Released, Updated, adopters), not
	// as a deletion: for owners that keep no expectations and only need
	// waking (Deployments over ReplicaSets, CronJobs over Jobs).
	UpdateTerminating bool
}

// Resolve returns the owner ref names and its key, if ref is of OwnerKind
// and names a cached owner with ref's UID.
func (d *Dependents[O, D]) Resolve(namespace string, ref *metav1.OwnerReference) (O, string, bool) {
	var zero O
	if ref == nil || ref.Kind != d.OwnerKind {
		return zero, "", false
	}
	owner, err := d.GetOwner(namespace, ref.Name)
	if err != nil || isNil(owner) || owner.GetUID() != ref.UID {
		return zero, "", false
	}
	return owner, namespace + "/" + owner.GetName(), true
}

// ControllerOf resolves obj's controller reference (see Resolve).
func (d *Dependents[O, D]) ControllerOf(obj metav1.Object) (O, string, bool) {
	return d.Resolve(obj.GetNamespace(), metav1.GetControllerOfNoCopy(obj))
}

// Handler returns the event handler to add to the dependents' informer.
func (d *Dependents[O, D]) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    d.OnAdd,
		UpdateFunc: d.OnUpdate,
		DeleteFunc: func(obj interface{}) { d.OnDelete(obj, true) },
	}
}

// OnAdd routes the creation of obj (a D).
func (d *Dependents[O, D]) OnAdd(obj interface{}) {
	dep, ok := obj.(D)
	if !ok {
		return
	}
	if dep.GetDeletionTimestamp() != nil {
		// Seen first already terminating (e.g. after a restart): a
		// deletion, never a creation anyone waited for.
		d.OnDelete(dep, false)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(dep); ref != nil {
		if owner, key, ok := d.Resolve(dep.GetNamespace(), ref); ok {
			if d.Expectations != nil {
				d.Expectations.CreationObserved(key)
			}
			if d.Created != nil {
				d.Created(key, owner, dep)
			} else {
				d.Enqueue(key)
			}
		}
		return
	}
	// An orphan: no creation is observed, nobody created it for us.
	if d.Orphan != nil {
		d.Orphan(dep, false)
	}
	d.enqueueAdopters(dep)
}

// OnUpdate routes a change from old to cur (both D).
func (d *Dependents[O, D]) OnUpdate(old, cur interface{}) {
	oldDep, ok1 := old.(D)
	curDep, ok2 := cur.(D)
	if !ok1 || !ok2 || oldDep.GetResourceVersion() == curDep.GetResourceVersion() {
		return // a resync: nothing changed
	}
	labelsChanged := !reflect.DeepEqual(oldDep.GetLabels(), curDep.GetLabels())
	if curDep.GetDeletionTimestamp() != nil && !d.UpdateTerminating {
		d.OnDelete(curDep, false)
		if d.DeleteOldOnRelabel && labelsChanged {
			d.OnDelete(oldDep, false)
		}
		return
	}
	curRef := metav1.GetControllerOfNoCopy(curDep)
	oldRef := metav1.GetControllerOfNoCopy(oldDep)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if owner, key, ok := d.Resolve(oldDep.GetNamespace(), oldRef); ok {
			if d.Released != nil {
				d.Released(key, owner, curDep)
			} else {
				d.Enqueue(key)
			}
		}
	}
	if curRef != nil {
		if owner, key, ok := d.Resolve(curDep.GetNamespace(), curRef); ok {
			if d.Updated != nil {
				d.Updated(key, owner, oldDep, curDep, refChanged || labelsChanged)
			} else {
				d.Enqueue(key)
			}
		}
		return
	}
	if d.Orphan != nil {
		d.Orphan(curDep, false)
	}
	if refChanged || labelsChanged {
		d.enqueueAdopters(curDep)
	}
}

// OnDelete routes the removal of obj (a D or a tombstone holding one),
// final, or the start of its graceful deletion (!final).
func (d *Dependents[O, D]) OnDelete(obj interface{}, final bool) {
	dep, ok := ObjectOf[D](obj)
	if !ok {
		return
	}
	owner, key, ok := d.ControllerOf(dep)
	if !ok {
		// Nobody waits for an orphan's deletion.
		if d.Orphan != nil {
			d.Orphan(dep, final)
		}
		return
	}
	if d.Expectations != nil {
		d.Expectations.DeletionObserved(key, dep.GetNamespace()+"/"+dep.GetName())
	}
	if d.Deleted != nil {
		d.Deleted(key, owner, dep, final)
	} else {
		d.Enqueue(key)
	}
}

func (d *Dependents[O, D]) enqueueAdopters(dep D) {
	if d.Adopters == nil {
		return
	}
	for _, o := range d.Adopters(dep) {
		d.Enqueue(o.GetNamespace() + "/" + o.GetName())
	}
}

// isNil reports a nil owner (a getter that returned neither an owner nor
// an error), which must not be dereferenced.
func isNil(v any) bool {
	rv := reflect.ValueOf(v)
	return !rv.IsValid() || (rv.Kind() == reflect.Pointer && rv.IsNil())
}

// ForgettingHandler returns the handler for the owners' own informer of
// a controller that remembers things per key (expectations, most often):
// every event enqueues the owner, and forget(key) drops what was
// remembered when the owner is deleted, or was deleted and created again
// under the same name between two events (a new UID), so the new one
// starts clean.
func (c *Controller) ForgettingHandler(forget func(key string)) cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: c.Enqueue,
		UpdateFunc: func(old, cur interface{}) {
			o, ok1 := old.(metav1.Object)
			n, ok2 := cur.(metav1.Object)
			if ok1 && ok2 && o.GetUID() != n.GetUID() {
				forget(o.GetNamespace() + "/" + o.GetName())
			}
			c.Enqueue(cur)
		},
		DeleteFunc: func(obj interface{}) {
			key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
			if err != nil {
				return
			}
			forget(key)
			c.EnqueueKey(key)
		},
	}
}
