package replicaset

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// benchRS is a Deployment's ReplicaSet of n Running, ready pods, as in
// `rudder bench density`.
func benchRS(n int) (*appsv1.ReplicaSet, []*corev1.Pod) {
	lbl := map[string]string{"app.kubernetes.io/name": "rudder-bench-density", appsv1.DefaultDeploymentUniqueLabelKey: "5d4f8b7c9"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "density-5d4f8b7c9", UID: "rs-uid"},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(int32(n)),
			Selector: &metav1.LabelSelector{MatchLabels: lbl},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: lbl}},
		},
	}
	ref := *metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		l := map[string]string{}
		for k, v := range lbl {
			l[k] = v
		}
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("density-5d4f8b7c9-%05d", i), UID: types.UID(fmt.Sprint(i)),
				Labels: l, OwnerReferences: []metav1.OwnerReference{ref}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue},
			}},
		}
	}
	return rs, pods
}

// BenchmarkRecount is the part of a sync that grows with the pods:
// claiming and counting 10,000 of them.
func BenchmarkRecount(b *testing.B) {
	rs, pods := benchRS(10000)
	sel, _ := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	now := time.Now()
	for b.Loop() {
		p := planClaims(rs, sel, pods)
		calculateStatus(rs, p.owned, nil, nil, now, true)
	}
}

// BenchmarkRecountMemo is the same through the per-pod memo a sync uses,
// when (as between two syncs of a settled ReplicaSet) no pod changed.
func BenchmarkRecountMemo(b *testing.B) {
	rs, pods := benchRS(10000)
	sel, _ := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	now := time.Now()
	memos := newLabelMemos()
	for b.Loop() {
		m := memos.get("ns/web", rs, sel)
		p := planClaimsBy(rs, m.selected, pods)
		calculateStatusBy(rs, p.owned, nil, nil, now, true, m.fullyLabeled)
		m.sweep(pods)
	}
}
