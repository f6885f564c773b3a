package deployment

import (
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// Event handlers map replica-set and pod changes to the deployments that
// care. A replica set with a controller reference wakes its owner; an
// orphan wakes every deployment whose selector matches it, one of which
// may adopt it.

func (r *Reconciler) addReplicaSet(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		return
	}
	if rs.DeletionTimestamp != nil {
		// Seen for the first time already being deleted (e.g. after a
		// restart): treat as a delete.
		r.deleteReplicaSet(rs)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := r.resolveControllerRef(rs.Namespace, ref); d != nil {
			r.queue.Enqueue(d)
		}
		return
	}
	for _, d := range r.deploymentsForReplicaSet(rs) {
		r.queue.Enqueue(d)
	}
}

func (r *Reconciler) updateReplicaSet(oldObj, newObj any) {
	old, ok1 := oldObj.(*appsv1.ReplicaSet)
	cur, ok2 := newObj.(*appsv1.ReplicaSet)
	if !ok1 || !ok2 || old.ResourceVersion == cur.ResourceVersion {
		// Periodic resyncs carry nothing new.
		return
	}
	curRef, oldRef := metav1.GetControllerOfNoCopy(cur), metav1.GetControllerOfNoCopy(old)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if d := r.resolveControllerRef(old.Namespace, oldRef); d != nil {
			r.queue.Enqueue(d)
		}
	}
	if curRef != nil {
		if d := r.resolveControllerRef(cur.Namespace, curRef); d != nil {
			r.queue.Enqueue(d)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(cur.Labels, old.Labels) {
		for _, d := range r.deploymentsForReplicaSet(cur) {
			r.queue.Enqueue(d)
		}
	}
}

func (r *Reconciler) deleteReplicaSet(obj any) {
	rs, ok := obj.(*appsv1.ReplicaSet)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if rs, ok = tomb.Obj.(*appsv1.ReplicaSet); !ok {
			return
		}
	}
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		if d := r.resolveControllerRef(rs.Namespace, ref); d != nil {
			r.queue.Enqueue(d)
		}
	}
}

// Pods matter only to Recreate, which waits for the old pods to be gone:
// a pod deleted or finished may let it start the new replica set.
func (r *Reconciler) updatePod(oldObj, newObj any) {
	old, ok1 := oldObj.(*corev1.Pod)
	cur, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 || old.Status.Phase == cur.Status.Phase {
		return
	}
	if cur.Status.Phase == corev1.PodSucceeded || cur.Status.Phase == corev1.PodFailed {
		r.enqueueRecreateFor(cur)
	}
}

func (r *Reconciler) deletePod(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if pod, ok = tomb.Obj.(*corev1.Pod); !ok {
			return
		}
	}
	r.enqueueRecreateFor(pod)
}

func (r *Reconciler) enqueueRecreateFor(pod *corev1.Pod) {
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil || ref.Kind != "ReplicaSet" {
		return
	}
	rs, err := r.rsLister.ReplicaSets(pod.Namespace).Get(ref.Name)
	if err != nil || rs.UID != ref.UID {
		return
	}
	rsRef := metav1.GetControllerOfNoCopy(rs)
	if rsRef == nil {
		return
	}
	if d := r.resolveControllerRef(rs.Namespace, rsRef); d != nil && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		r.queue.Enqueue(d)
	}
}

// resolveControllerRef returns the deployment a controller reference
// names, if it still exists with that uid.
func (r *Reconciler) resolveControllerRef(ns string, ref *metav1.OwnerReference) *appsv1.Deployment {
	if ref.Kind != deploymentKind.Kind {
		return nil
	}
	d, err := r.dLister.Deployments(ns).Get(ref.Name)
	if err != nil || d.UID != ref.UID {
		return nil
	}
	return d
}

// deploymentsForReplicaSet lists the deployments whose (non-empty)
// selector matches an orphan's labels.
func (r *Reconciler) deploymentsForReplicaSet(rs *appsv1.ReplicaSet) []*appsv1.Deployment {
	if len(rs.Labels) == 0 {
		return nil
	}
	ds, err := r.dLister.Deployments(rs.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var out []*appsv1.Deployment
	for _, d := range ds {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(rs.Labels)) {
			continue
		}
		out = append(out, d)
	}
	if len(out) > 1 {
		r.log.Info("more than one deployment selects replica set", "replicaSet", nsName(rs), "deployments", len(out))
	}
	return out
}
