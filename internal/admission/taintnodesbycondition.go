package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// TaintNodesByCondition registers every new Node as tainted
// node.kubernetes.io/not-ready:NoSchedule. The node lifecycle controller
// removes the taint once the node reports Ready, so the scheduler never
// places a pod on a node that has not yet said it can run one, however
// the node was created.
type TaintNodesByCondition struct{}

func (TaintNodesByCondition) Name() string { return "TaintNodesByCondition" }

// Admit implements Mutator.
func (TaintNodesByCondition) Admit(_ context.Context, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "" || a.Resource.GroupResource() != nodesResource {
		return nil
	}
	node, ok := a.Object.(*corev1.Node)
	if !ok {
		return nil
	}
	for _, t := range node.Spec.Taints {
		// A taint is the same one when its key and effect are.
		if t.Key == corev1.TaintNodeNotReady && t.Effect == corev1.TaintEffectNoSchedule {
			return nil
		}
	}
	node.Spec.Taints = append(node.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule})
	return nil
}
