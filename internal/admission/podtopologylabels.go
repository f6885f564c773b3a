package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// PodTopologyLabels lets a pod read its node's zone and region through
// the downward API, as upstream's plugin of that name does (beta and on
// by default since 1.35): when a pod is bound to a node, the node's
// topology.k8s.io/zone and topology.k8s.io/region labels are copied onto
// the Binding, and the binding subresource copies a Binding's labels onto
// the pod it binds. A pod created with spec.nodeName already set gets the
// labels directly. Labels the pod (or the Binding) already carries are
// kept. A node that does not exist is no error: nothing is copied.
type PodTopologyLabels struct {
	Objects ObjectSource
}

func (PodTopologyLabels) Name() string { return "PodTopologyLabels" }

// ptlLabels are the node labels copied, upstream's default set.
var ptlLabels = []string{"topology.k8s.io/zone", "topology.k8s.io/region"}

var nodesGVR = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}

// Admit implements Mutator.
func (p PodTopologyLabels) Admit(ctx context.Context, a *Attributes) error {
	if a.Operation != Create || a.Resource.GroupResource() != podsResource {
		return nil
	}
	var labels *map[string]string
	var node string
	switch a.Subresource {
	case "":
		pod, ok := a.Object.(*corev1.Pod)
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("expected Pod but got %T", a.Object))
		}
		labels, node = &pod.Labels, pod.Spec.NodeName
	case "binding":
		b, ok := a.Object.(*corev1.Binding)
		if !ok {
			return apierrors.NewBadRequest(fmt.Sprintf("expected Binding but got %T", a.Object))
		}
		if b.Target.Kind != "" && b.Target.Kind != "Node" {
			return nil
		}
		labels, node = &b.Labels, b.Target.Name
	default:
		return nil
	}
	if node == "" {
		return nil
	}
	obj, err := p.Objects.GetObject(ctx, nodesGVR, "", node)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return forbiddenFor(a, fmt.Errorf("reading node %s: %w", node, err))
	}
	n, ok := obj.(*corev1.Node)
	if !ok {
		return nil
	}
	for _, k := range ptlLabels {
		v, ok := n.Labels[k]
		if !ok {
			continue
		}
		if *labels == nil {
			*labels = map[string]string{}
		}
		if _, set := (*labels)[k]; !set {
			(*labels)[k] = v
		}
	}
	return nil
}
