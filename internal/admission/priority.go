package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Priority turns a pod's priorityClassName into the numbers the scheduler
// uses, as upstream's plugin of that name does. On create:
//
//   - a named class must exist (403 "no PriorityClass with name x was
//     found"); its value becomes spec.priority and its preemptionPolicy
//     spec.preemptionPolicy;
//   - a pod naming none gets the globalDefault class (the lowest-valued
//     one, should a race have made two), name included, or else priority
//     0 and PreemptLowerPriority;
//   - a pod that states a priority or preemption policy other than the
//     computed one is refused: only a class grants priority.
//
// Updates keep the stored priority and policy when the client left them
// out (the fields are immutable; validation refuses other changes).
//
// It also validates PriorityClass writes: only one class may be the
// globalDefault. (Reserved names and values are checked by the
// PriorityClass registry.) Upstream no longer limits the system classes
// to kube-system here; that is now a ResourceQuota policy.
type Priority struct {
	Objects ObjectSource
}

func (Priority) Name() string { return "Priority" }

// Admit implements Mutator.
func (p Priority) Admit(ctx context.Context, a *Attributes) error {
	if a.Subresource != "" || a.Resource.GroupResource() != podsResource {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return nil
	}
	switch a.Operation {
	case Update:
		if old, ok := a.OldObject.(*corev1.Pod); ok {
			if pod.Spec.Priority == nil && old.Spec.Priority != nil {
				v := *old.Spec.Priority
				pod.Spec.Priority = &v
			}
			if pod.Spec.PreemptionPolicy == nil && old.Spec.PreemptionPolicy != nil {
				v := *old.Spec.PreemptionPolicy
				pod.Spec.PreemptionPolicy = &v
			}
		}
		return nil
	case Create:
		return p.admitNewPod(ctx, a, pod)
	}
	return nil
}

func (p Priority) admitNewPod(ctx context.Context, a *Attributes, pod *corev1.Pod) error {
	var value int32
	var policy *corev1.PreemptionPolicy
	if pod.Spec.PriorityClassName == "" {
		def, err := p.globalDefault(ctx, false)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to get default priority class: %v", err))
		}
		if def != nil {
			pod.Spec.PriorityClassName, value, policy = def.Name, def.Value, def.PreemptionPolicy
		} else {
			lower := corev1.PreemptLowerPriority
			policy = &lower
		}
	} else {
		obj, err := p.Objects.GetObject(ctx, priorityClassesGVR, "", pod.Spec.PriorityClassName)
		if err != nil {
			return apierrors.NewInternalError(fmt.Errorf("failed to get PriorityClass with name %s: %v", pod.Spec.PriorityClassName, err))
		}
		pc, ok := obj.(*schedulingv1.PriorityClass)
		if !ok {
			return forbiddenFor(a, fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		value, policy = pc.Value, pc.PreemptionPolicy
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return forbiddenFor(a, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value))
	}
	pod.Spec.Priority = &value
	if policy != nil {
		if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != *policy {
			return forbiddenFor(a, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, *policy))
		}
		v := *policy
		pod.Spec.PreemptionPolicy = &v
	}
	return nil
}

// Validate implements Validator.
func (p Priority) Validate(ctx context.Context, a *Attributes) error {
	if a.Subresource != "" || a.Resource.GroupResource() != priorityClassesResource || (a.Operation != Create && a.Operation != Update) {
		return nil
	}
	pc, ok := a.Object.(*schedulingv1.PriorityClass)
	if !ok || !pc.GlobalDefault {
		return nil
	}
	// Class writes are rare and two defaults in quick succession are
	// what this rule is about, so the list is a consistent one.
	def, err := p.globalDefault(ctx, true)
	if err != nil {
		return apierrors.NewInternalError(fmt.Errorf("failed to get default priority class: %v", err))
	}
	if def != nil && (a.Operation == Create || def.Name != pc.Name) {
		return forbiddenFor(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}

// globalDefault returns the default class, nil when there is none. Should
// a race have made two, the lower value wins, as upstream picks it.
func (p Priority) globalDefault(ctx context.Context, fresh bool) (*schedulingv1.PriorityClass, error) {
	objs, err := p.Objects.ListObjects(ctx, priorityClassesGVR, "", fresh)
	if err != nil {
		return nil, err
	}
	var def *schedulingv1.PriorityClass
	for _, o := range objs {
		pc, ok := o.(*schedulingv1.PriorityClass)
		if ok && pc.GlobalDefault && (def == nil || pc.Value < def.Value) {
			def = pc
		}
	}
	return def, nil
}
