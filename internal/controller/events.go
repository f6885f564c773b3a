package controller

import (
	"context"
	"log/slog"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

// newRecorders returns the Context.Recorder function: one event
// broadcaster for the whole manager, writing core/v1 Events through
// client, and one recorder per component name (e.g.
// "replicaset-controller", the Event's source.component). The
// broadcaster's correlator aggregates and rate-limits repeated events per
// object as upstream's does; it is shut down when ctx ends, dropping
// events still queued.
func newRecorders(ctx context.Context, client kubernetes.Interface, log *slog.Logger) func(component string) record.EventRecorder {
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	b.StartEventWatcher(func(e *corev1.Event) {
		log.Debug("event", "component", e.Source.Component, "object", e.InvolvedObject.Kind+"/"+e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name,
			"type", e.Type, "reason", e.Reason, "message", e.Message)
	})
	context.AfterFunc(ctx, b.Shutdown)

	var mu sync.Mutex
	recorders := map[string]record.EventRecorder{}
	return func(component string) record.EventRecorder {
		mu.Lock()
		defer mu.Unlock()
		r, ok := recorders[component]
		if !ok {
			r = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
			recorders[component] = r
		}
		return r
	}
}
