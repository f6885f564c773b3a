package nodelifecycle

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// writeAttempts bounds the conflict retries of one taint write.
const writeAttempts = 5

// writeTaints sets node's taints to what compute returns for it (false:
// nothing to change). It starts from node as cached and, when the write
// conflicts with a newer version, reads the live Node and computes again.
// A Node that is gone is not an error.
func writeTaints(ctx context.Context, client kubernetes.Interface, node *corev1.Node, compute func(*corev1.Node) ([]corev1.Taint, bool)) error {
	for attempt := 1; ; attempt++ {
		taints, ok := compute(node)
		if !ok {
			return nil
		}
		patch, err := taintsPatch(node, taints)
		if err != nil {
			return err
		}
		_, err = client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		switch {
		case err == nil, apierrors.IsNotFound(err):
			return nil
		case !apierrors.IsConflict(err) || attempt == writeAttempts:
			return fmt.Errorf("taint node %s: %w", node.Name, err)
		}
		if node, err = client.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{}); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("taint node %s: %w", node.Name, err)
		}
	}
}

// podStatusPatch is a strategic merge patch of one pod condition (merged
// by type, the condition's other fields kept). The UID makes it apply to
// this pod only, never to a new pod of the same name.
func podStatusPatch(uid types.UID, cond corev1.PodCondition) ([]byte, error) {
	type meta struct {
		UID types.UID `json:"uid"`
	}
	type status struct {
		Conditions []corev1.PodCondition `json:"conditions"`
	}
	return json.Marshal(struct {
		Metadata meta   `json:"metadata"`
		Status   status `json:"status"`
	}{meta{uid}, status{[]corev1.PodCondition{cond}}})
}

// podNotReadyCondition returns the Ready condition to patch into pod to
// mark it not ready as of now; ok is false when the pod has no Ready
// condition or it is already False.
func podNotReadyCondition(pod *corev1.Pod, now time.Time) (corev1.PodCondition, bool) {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status == corev1.ConditionFalse {
				return corev1.PodCondition{}, false
			}
			return corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now)}, true
		}
	}
	return corev1.PodCondition{}, false
}

// patchPodCondition patches cond into pod's status. A pod gone (or
// replaced) is not an error.
func patchPodCondition(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod, cond corev1.PodCondition) error {
	patch, err := podStatusPatch(pod.UID, cond)
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("patch pod %s/%s status: %w", pod.Namespace, pod.Name, err)
}

// podNodeIndex indexes pods by spec.nodeName, upstream's index name.
const podNodeIndex = "spec.nodeName"

// addPodNodeIndex adds podNodeIndex to the shared pod informer; both
// controllers here (and maybe others) ask for it, so an index already
// there is not an error.
func addPodNodeIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[podNodeIndex]; ok {
		return nil
	}
	err := inf.AddIndexers(cache.Indexers{podNodeIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok && p.Spec.NodeName != "" {
			return []string{p.Spec.NodeName}, nil
		}
		return nil, nil
	}})
	if err != nil {
		if _, ok := inf.GetIndexer().GetIndexers()[podNodeIndex]; ok {
			return nil
		}
	}
	return err
}

// podsOnNode lists the pods bound to node from the index.
func podsOnNode(idx cache.Indexer, node string) []*corev1.Pod {
	objs, err := idx.ByIndex(podNodeIndex, node)
	if err != nil {
		return nil
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// nodeRef is what events about a node point at.
func nodeRef(node *corev1.Node) *corev1.ObjectReference {
	return &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
}
