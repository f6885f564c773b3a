package kubelet

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// Events, as upstream's kubelet records them for `kubectl describe pod`:
// Pulling/Pulled/Failed/BackOff for images, Created/Started/Failed/
// Killing/BackOff for containers, FailedMount and SandboxChanged for the
// pod. They go through client-go's broadcaster, which aggregates repeats
// and writes in the background; an event that cannot be written is lost,
// never a sync's failure.

// Event reasons (upstream's).
const (
	eventPulling        = "Pulling"
	eventPulled         = "Pulled"
	eventFailed         = "Failed"
	eventBackOff        = "BackOff"
	eventCreated        = "Created"
	eventStarted        = "Started"
	eventKilling        = "Killing"
	eventFailedMount    = "FailedMount"
	eventSandboxChanged = "SandboxChanged"
	eventUnhealthy      = "Unhealthy"

	eventFailedPostStartHook = "FailedPostStartHook"
	eventFailedPreStopHook   = "FailedPreStopHook"
)

// startEvents starts the broadcaster; it stops when ctx ends.
func (k *Kubelet) startEvents(ctx context.Context) {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: k.client().CoreV1().Events("")})
	k.recorder = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: k.cfg.NodeName})
	go func() {
		<-ctx.Done()
		b.Shutdown()
	}()
}

// event records an event about pod, or about one of its containers when
// container is set.
func (k *Kubelet) event(pod *corev1.Pod, container, typ, reason, format string, args ...any) {
	if pod == nil || k.recorder == nil {
		return
	}
	ref := &corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID, ResourceVersion: pod.ResourceVersion}
	if container != "" {
		ref.FieldPath = containerFieldPath(pod, container)
	}
	k.recorder.Event(ref, typ, reason, fmt.Sprintf(format, args...))
}

// containerFieldPath is how events name a container: spec.containers{x}.
func containerFieldPath(pod *corev1.Pod, name string) string {
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return "spec.initContainers{" + name + "}"
		}
	}
	return "spec.containers{" + name + "}"
}
