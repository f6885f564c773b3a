package deployment

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Event handlers map replica-set and pod changes to the deployments that
// care. A replica set with a controller reference wakes its owner; an
// orphan wakes every deployment whose selector matches it, one of which
// may adopt it.

// rsEvents routes replica-set events to the deployment controlling them
// (see controller.Dependents). A deployment keeps no expectations, so
// every event only wakes it, a terminating replica set's updates
// included.
func (r *Reconciler) rsEvents() *controller.Dependents[*appsv1.Deployment, *appsv1.ReplicaSet] {
	return &controller.Dependents[*appsv1.Deployment, *appsv1.ReplicaSet]{
		OwnerKind: deploymentKind.Kind,
		GetOwner: func(namespace, name string) (*appsv1.Deployment, error) {
			return r.dLister.Deployments(namespace).Get(name)
		},
		Adopters:          r.deploymentsForReplicaSet,
		Enqueue:           r.queue.EnqueueKey,
		UpdateTerminating: true,
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
	pod, ok := controller.ObjectOf[*corev1.Pod](obj)
	if !ok {
		return
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
	if d, key, ok := r.replicaSets.Resolve(rs.Namespace, rsRef); ok && d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		r.queue.EnqueueKey(key)
	}
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
