package controller

import (
	"context"
	"log/slog"

	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// Context is what every controller is built from. The manager fills it
// and starts the informer factories after all controllers were built, so
// a controller's New must request every informer it uses (calling
// Informer() or Lister() on it) before returning.
type Context struct {
	// Client speaks protobuf to the API server and is not throttled.
	Client   kubernetes.Interface
	Dynamic  dynamic.Interface
	Metadata metadata.Interface
	// Informers is shared by all controllers (one watch per resource).
	Informers informers.SharedInformerFactory
	// MetadataInformers serves PartialObjectMetadata for controllers that
	// only need metadata (garbage collector, namespace deletion).
	MetadataInformers metadatainformer.SharedInformerFactory
	// Recorder makes an event recorder for a component name, e.g.
	// "deployment-controller"; events are core/v1 Events as upstream's
	// controllers write them.
	Recorder func(component string) record.EventRecorder
	Clock    clock.WithTicker
	Log      *slog.Logger
}

// Logger returns the logger of the controller name: Log (slog.Default()
// when unset) with every line tagged controller=name.
func (cx *Context) Logger(name string) *slog.Logger {
	log := cx.Log
	if log == nil {
		log = slog.Default()
	}
	return log.With("controller", name)
}

// ClockOrReal returns Clock, or the real clock when unset (tests inject
// a fake one to step time).
func (cx *Context) ClockOrReal() clock.WithTicker {
	if cx.Clock == nil {
		return clock.RealClock{}
	}
	return cx.Clock
}

// Descriptor names a controller and builds it. Registries of descriptors
// are static slices (internal/controllers).
type Descriptor struct {
	// Name is the upstream controller name used by --controllers
	// (e.g. "deployment", "replicaset", "namespace").
	Name string
	// New builds the controller(s) and registers informer handlers. Some
	// controllers run more than one queue (e.g. node lifecycle), so New
	// returns Runnables.
	New func(ctx context.Context, cx *Context) ([]Runnable, error)
	// DisabledByDefault controllers run only when named in --controllers.
	DisabledByDefault bool
}

// Runnable is a controller's loop; Run blocks until ctx ends.
type Runnable interface {
	Run(ctx context.Context) error
}

// RunnableFunc adapts a function (e.g. a periodic sweep).
type RunnableFunc func(ctx context.Context) error

func (f RunnableFunc) Run(ctx context.Context) error { return f(ctx) }
