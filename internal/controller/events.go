package controller

import (
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
// object as upstream's does. shutdown stops it, dropping events still
// queued; the manager calls it once every controller has returned, so a
// sync finishing during shutdown still records its events.
func newRecorders(client kubernetes.Interface, log *slog.Logger) (recorders func(component string) record.EventRecorder, shutdown func()) {
	b := record.NewBroadcaster()
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: client.CoreV1().Events("")})
	b.StartEventWatcher(func(e *corev1.Event) {
		log.Debug("event", "component", e.Source.Component, "object", e.InvolvedObject.Kind+"/"+e.InvolvedObject.Namespace+"/"+e.InvolvedObject.Name,
			"type", e.Type, "reason", e.Reason, "message", e.Message)
	})

	var mu sync.Mutex
	byComponent := map[string]record.EventRecorder{}
	return func(component string) record.EventRecorder {
		mu.Lock()
		defer mu.Unlock()
		r, ok := byComponent[component]
		if !ok {
			r = b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: component})
			byComponent[component] = r
		}
		return r
	}, b.Shutdown
}
