package plugins

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// PrioritySortName is the PrioritySort plugin's name.
const PrioritySortName = "PrioritySort"

// PrioritySort orders the active queue by pod priority, highest first,
// and by arrival in the queue among equals (FIFO).
type PrioritySort struct{}

var _ framework.QueueSortPlugin = (*PrioritySort)(nil)

// NewPrioritySort builds the plugin; it takes no arguments.
func NewPrioritySort(context.Context, runtime.Object, framework.Handle) (framework.Plugin, error) {
	return &PrioritySort{}, nil
}

func (p *PrioritySort) Name() string { return PrioritySortName }

// Less reports whether a is popped before b.
func (p *PrioritySort) Less(a, b *framework.QueuedPodInfo) bool {
	pa, pb := sortPriority(a.Pod), sortPriority(b.Pod)
	return pa > pb || (pa == pb && a.Timestamp.Before(b.Timestamp))
}

// sortPriority is spec.priority, which admission resolves from the
// priority class; unset means 0.
func sortPriority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}
