package plugins

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// DefaultBinderName is the DefaultBinder plugin's name.
const DefaultBinderName = "DefaultBinder"

// DefaultBinder binds by creating the pod's binding subresource, which
// sets spec.nodeName. The UID in the binding makes the API server refuse
// to bind a different pod that reused the name since the scheduler saw it.
type DefaultBinder struct {
	handle framework.Handle
}

var _ framework.BindPlugin = (*DefaultBinder)(nil)

// NewDefaultBinder builds the plugin; it takes no arguments.
func NewDefaultBinder(_ context.Context, _ runtime.Object, h framework.Handle) (framework.Plugin, error) {
	return &DefaultBinder{handle: h}, nil
}

func (b *DefaultBinder) Name() string { return DefaultBinderName }

// Bind posts the Binding; an API error comes back as an Error status.
func (b *DefaultBinder) Bind(ctx context.Context, _ *framework.CycleState, pod *corev1.Pod, nodeName string) *framework.Status {
	slog.DebugContext(ctx, "binding pod", "pod", pod.Namespace+"/"+pod.Name, "node", nodeName)
	binding := &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: nodeName},
	}
	if err := b.handle.ClientSet().CoreV1().Pods(pod.Namespace).Bind(ctx, binding, metav1.CreateOptions{}); err != nil {
		return framework.AsStatus(err)
	}
	return nil
}
