package replicaset

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// workloadKind adapts the API type a controller serves to the core,
// which is written against apps/v1 ReplicaSet. A ReplicationController is
// read as the ReplicaSet it would be (its map selector as matchLabels)
// and its status written back as its own; events and owner references
// always name the original object.
type workloadKind interface {
	gvk() schema.GroupVersionKind
	informer() cache.SharedIndexInformer
	// get reads name from the informer's cache: the ReplicaSet view, which
	// the caller must not modify, and the cached original.
	get(namespace, name string) (*appsv1.ReplicaSet, runtime.Object, error)
	// selecting returns the objects in pod's namespace whose selector
	// matches pod's labels (candidates to adopt an orphan).
	selecting(pod *corev1.Pod) []*appsv1.ReplicaSet
	// getFresh reads name from the API server (a quorum read), for the
	// re-check before adopting and the status write's retry.
	getFresh(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, runtime.Object, error)
	// writeStatus replaces orig's status with st and returns the result:
	// its ReplicaSet view and the object written.
	writeStatus(ctx context.Context, orig runtime.Object, st appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, runtime.Object, error)
	// hasTerminatingReplicas: the status has a terminatingReplicas field.
	hasTerminatingReplicas() bool
}

// ReplicaSets.

type rsKind struct {
	client kubernetes.Interface
	inf    cache.SharedIndexInformer
	lister appslisters.ReplicaSetLister
}

func (k *rsKind) gvk() schema.GroupVersionKind {
	return appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
}
func (k *rsKind) informer() cache.SharedIndexInformer { return k.inf }
func (k *rsKind) hasTerminatingReplicas() bool        { return true }

func (k *rsKind) get(namespace, name string) (*appsv1.ReplicaSet, runtime.Object, error) {
	rs, err := k.lister.ReplicaSets(namespace).Get(name)
	if err != nil {
		return nil, nil, err
	}
	return rs, rs, nil
}

func (k *rsKind) selecting(pod *corev1.Pod) []*appsv1.ReplicaSet {
	rss, err := k.lister.GetPodReplicaSets(pod)
	if err != nil {
		return nil
	}
	return rss
}

func (k *rsKind) getFresh(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, runtime.Object, error) {
	rs, err := k.client.AppsV1().ReplicaSets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	return rs, rs, nil
}

func (k *rsKind) writeStatus(ctx context.Context, orig runtime.Object, st appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, runtime.Object, error) {
	rs := orig.(*appsv1.ReplicaSet).DeepCopy()
	rs.Status = st
	out, err := k.client.AppsV1().ReplicaSets(rs.Namespace).UpdateStatus(ctx, rs, metav1.UpdateOptions{})
	if err != nil {
		return nil, nil, err
	}
	return out, out, nil
}

// ReplicationControllers.

type rcKind struct {
	client kubernetes.Interface
	inf    cache.SharedIndexInformer
	lister corelisters.ReplicationControllerLister
}

func (k *rcKind) gvk() schema.GroupVersionKind {
	return corev1.SchemeGroupVersion.WithKind("ReplicationController")
}
func (k *rcKind) informer() cache.SharedIndexInformer { return k.inf }
func (k *rcKind) hasTerminatingReplicas() bool        { return false }

func (k *rcKind) get(namespace, name string) (*appsv1.ReplicaSet, runtime.Object, error) {
	rc, err := k.lister.ReplicationControllers(namespace).Get(name)
	if err != nil {
		return nil, nil, err
	}
	return rcAsReplicaSet(rc), rc, nil
}

func (k *rcKind) selecting(pod *corev1.Pod) []*appsv1.ReplicaSet {
	rcs, err := k.lister.GetPodControllers(pod)
	if err != nil {
		return nil
	}
	out := make([]*appsv1.ReplicaSet, 0, len(rcs))
	for _, rc := range rcs {
		out = append(out, rcAsReplicaSet(rc))
	}
	return out
}

func (k *rcKind) getFresh(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, runtime.Object, error) {
	rc, err := k.client.CoreV1().ReplicationControllers(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, nil, err
	}
	return rcAsReplicaSet(rc), rc, nil
}

func (k *rcKind) writeStatus(ctx context.Context, orig runtime.Object, st appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, runtime.Object, error) {
	rc := orig.(*corev1.ReplicationController).DeepCopy()
	rc.Status = corev1.ReplicationControllerStatus{
		Replicas:             st.Replicas,
		FullyLabeledReplicas: st.FullyLabeledReplicas,
		ReadyReplicas:        st.ReadyReplicas,
		AvailableReplicas:    st.AvailableReplicas,
		ObservedGeneration:   st.ObservedGeneration,
	}
	for _, c := range st.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type:               corev1.ReplicationControllerConditionType(c.Type),
			Status:             c.Status,
			LastTransitionTime: c.LastTransitionTime,
			Reason:             c.Reason,
			Message:            c.Message,
		})
	}
	out, err := k.client.CoreV1().ReplicationControllers(rc.Namespace).UpdateStatus(ctx, rc, metav1.UpdateOptions{})
	if err != nil {
		return nil, nil, err
	}
	return rcAsReplicaSet(out), out, nil
}

// rcAsReplicaSet is the ReplicaSet an RC would be. It shares maps and the
// template with rc, so neither may be modified through it.
func rcAsReplicaSet(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: rc.ObjectMeta,
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        rc.Spec.Replicas,
			MinReadySeconds: rc.Spec.MinReadySeconds,
			Selector:        &metav1.LabelSelector{MatchLabels: rc.Spec.Selector},
		},
		Status: appsv1.ReplicaSetStatus{
			Replicas:             rc.Status.Replicas,
			FullyLabeledReplicas: rc.Status.FullyLabeledReplicas,
			ReadyReplicas:        rc.Status.ReadyReplicas,
			AvailableReplicas:    rc.Status.AvailableReplicas,
			ObservedGeneration:   rc.Status.ObservedGeneration,
		},
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template
	}
	for _, c := range rc.Status.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type:               appsv1.ReplicaSetConditionType(c.Type),
			Status:             c.Status,
			LastTransitionTime: c.LastTransitionTime,
			Reason:             c.Reason,
			Message:            c.Message,
		})
	}
	return rs
}
