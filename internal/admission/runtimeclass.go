package admission

import (
	"context"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RuntimeClass applies a pod's RuntimeClass to the pod on create, as
// upstream's plugin of that name does:
//
//   - a pod naming a RuntimeClass that does not exist is refused (403
//     "pod rejected: RuntimeClass "x" not found");
//   - the class's overhead becomes spec.overhead; a pod that states an
//     overhead other than its class's, or one without a class that
//     defines one, is refused: only a class may charge overhead, since the
//     scheduler and quota add it to the pod's requests;
//   - the class's scheduling.nodeSelector is merged into the pod's (a key
//     the pod sets to another value is a conflict and refused) and its
//     tolerations are added, keeping only the wider of two tolerations
//     where one covers the other.
//
// Admit sets the fields; Validate checks the overhead again on the final
// object, after every other mutator has run.
type RuntimeClass struct {
	Objects ObjectSource
}

func (RuntimeClass) Name() string { return "RuntimeClass" }

var rcRuntimeClassesGVR = schema.GroupVersionResource{Group: "node.k8s.io", Version: "v1", Resource: "runtimeclasses"}

// Admit implements Mutator.
func (p RuntimeClass) Admit(ctx context.Context, a *Attributes) error {
	if rcIgnore(a) {
		return nil
	}
	pod, class, err := p.objects(ctx, a)
	if err != nil || class == nil {
		return err
	}
	if class.Overhead != nil {
		if len(pod.Spec.Overhead) > 0 && !apiequality.Semantic.DeepEqual(class.Overhead.PodFixed, pod.Spec.Overhead) {
			return forbiddenFor(a, errors.New("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
		}
		pod.Spec.Overhead = class.Overhead.PodFixed.DeepCopy()
	}
	if s := class.Scheduling; s != nil {
		selector := pod.Spec.NodeSelector
		if selector == nil {
			selector = maps.Clone(s.NodeSelector)
		} else {
			for k, v := range s.NodeSelector {
				if podValue, ok := selector[k]; ok && podValue != v {
					return forbiddenFor(a, fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, podValue))
				}
				selector[k] = v
			}
		}
		pod.Spec.NodeSelector = selector
		pod.Spec.Tolerations = rcMergeTolerations(pod.Spec.Tolerations, s.Tolerations)
	}
	return nil
}

// Validate implements Validator.
func (p RuntimeClass) Validate(ctx context.Context, a *Attributes) error {
	if rcIgnore(a) {
		return nil
	}
	pod, class, err := p.objects(ctx, a)
	if err != nil || len(pod.Spec.Overhead) == 0 {
		return err
	}
	if class == nil || class.Overhead == nil {
		return forbiddenFor(a, errors.New("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead"))
	}
	if !apiequality.Semantic.DeepEqual(class.Overhead.PodFixed, pod.Spec.Overhead) {
		return forbiddenFor(a, errors.New("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead"))
	}
	return nil
}

func rcIgnore(a *Attributes) bool {
	return a.Operation != Create || a.Subresource != "" || a.Resource.GroupResource() != podsResource
}

// objects returns the pod and its RuntimeClass (nil when it names none).
func (p RuntimeClass) objects(ctx context.Context, a *Attributes) (*corev1.Pod, *nodev1.RuntimeClass, error) {
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil, nil, apierrors.NewBadRequest("Resource was marked with kind Pod but was unable to be converted")
	}
	if pod.Spec.RuntimeClassName == nil {
		return pod, nil, nil
	}
	name := *pod.Spec.RuntimeClassName
	obj, err := p.Objects.GetObject(ctx, rcRuntimeClassesGVR, "", name)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(fmt.Errorf("failed to get RuntimeClass %s: %w", name, err))
	}
	class, ok := obj.(*nodev1.RuntimeClass)
	if !ok {
		return nil, nil, forbiddenFor(a, fmt.Errorf("pod rejected: RuntimeClass %q not found", name))
	}
	return pod, class, nil
}

// rcMergeTolerations joins two toleration lists, first then second,
// dropping each toleration another one covers (of two equal ones the
// first stays), as upstream's MergeTolerations does.
func rcMergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := append(append([]corev1.Toleration(nil), first...), second...)
	var merged []corev1.Toleration
next:
	for i, t := range all {
		for _, m := range merged {
			if rcCovers(m, t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !apiequality.Semantic.DeepEqual(t, later) && rcCovers(later, t) {
				continue next
			}
		}
		merged = append(merged, t)
	}
	return merged
}

// rcCovers reports whether wide tolerates everything t does.
func rcCovers(wide, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(wide, t) {
		return true
	}
	// An empty key with Exists matches every key.
	if t.Key != wide.Key && (wide.Key != "" || wide.Operator != corev1.TolerationOpExists) {
		return false
	}
	// An empty effect matches every effect.
	if t.Effect != wide.Effect && wide.Effect != "" {
		return false
	}
	// A NoExecute toleration with a time limit covers only shorter stays.
	if wide.Effect == corev1.TaintEffectNoExecute && wide.TolerationSeconds != nil {
		if t.TolerationSeconds == nil || *t.TolerationSeconds > *wide.TolerationSeconds {
			return false
		}
	}
	switch wide.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == wide.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}
