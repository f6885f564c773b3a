package garbagecollector

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Config tunes the collector; zero fields take the defaults noted.
type Config struct {
	// Workers is how many objects are processed at once, per queue
	// (upstream's --concurrent-gc-syncs, default 20).
	Workers int
	// DiscoveryPeriod is how often the watched resources are
	// rediscovered (default 30 s, as upstream).
	DiscoveryPeriod time.Duration
	// InitialSyncTimeout bounds the wait for every monitor's first list
	// before the workers start anyway (default 30 s).
	InitialSyncTimeout time.Duration
	// IgnoredResources are never watched (default: core and
	// events.k8s.io events, as upstream). Objects of these resources can
	// still be owners: they are checked by live reads.
	IgnoredResources []schema.GroupResource

	ignored map[schema.GroupResource]bool
}

// DefaultWorkers is upstream's --concurrent-gc-syncs default.
const DefaultWorkers = 20

// DefaultDiscoveryPeriod is how often upstream's collector rediscovers
// resources.
const DefaultDiscoveryPeriod = 30 * time.Second

func (c *Config) defaults() {
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.DiscoveryPeriod <= 0 {
		c.DiscoveryPeriod = DefaultDiscoveryPeriod
	}
	if c.InitialSyncTimeout <= 0 {
		c.InitialSyncTimeout = 30 * time.Second
	}
	if c.IgnoredResources == nil {
		c.IgnoredResources = []schema.GroupResource{
			{Group: "", Resource: "events"},
			{Group: eventsv1.GroupName, Resource: "events"},
		}
	}
	c.ignored = map[schema.GroupResource]bool{}
	for _, r := range c.IgnoredResources {
		c.ignored[r] = true
	}
}

// Descriptor is the collector with upstream's defaults
// ("garbage-collector" in --controllers).
var Descriptor = NewDescriptor(Config{})

// NewDescriptor returns the collector configured by cfg.
func NewDescriptor(cfg Config) controller.Descriptor {
	cfg.defaults()
	return controller.Descriptor{
		Name: "garbage-collector",
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			return []controller.Runnable{&runner{cx: cx, cfg: cfg}}, nil
		},
	}
}

// runner is the Runnable the manager supervises. Each Run starts from
// nothing (a new graph, new queues, new informers), so a collector that
// failed, or lost and regained leadership, rebuilds its picture from the
// API server.
type runner struct {
	cx  *controller.Context
	cfg Config
}

func (r *runner) Run(ctx context.Context) error {
	return newCollector(r.cx, r.cfg).run(ctx)
}

// EventSource is the component name on the collector's events.
const EventSource = "garbage-collector-controller"

var errNoResources = errors.New("discovery reported no deletable resources")

// collector is one run of the garbage collector.
type collector struct {
	cfg       Config
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	// mapper turns an ownerReference's apiVersion and kind into a
	// resource; it is reset whenever discovery changes.
	mapper   *restmapper.DeferredDiscoveryRESTMapper
	recorder record.EventRecorder
	clock    clock.WithTicker
	log      *slog.Logger

	graph *graph
	// absent caches owners the API server confirmed absent, so the
	// dependents of one deleted owner cost one read, not one each.
	absent *lru.Cache

	attemptToDelete *controller.Controller
	attemptToOrphan *controller.Controller

	monitorsMu sync.Mutex
	monitors   map[schema.GroupVersionResource]*monitor
}

func newCollector(cx *controller.Context, cfg Config) *collector {
	c := &collector{
		cfg:       cfg,
		metadata:  cx.Metadata,
		discovery: cx.Client.Discovery(),
		mapper:    restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cx.Client.Discovery())),
		clock:     cx.ClockOrReal(),
		log:       cx.Logger("garbage-collector"),
		graph:     newGraph(),
		absent:    lru.New(absentCacheSize),
		monitors:  map[schema.GroupVersionResource]*monitor{},
	}
	if cx.Recorder != nil {
		c.recorder = cx.Recorder(EventSource)
	} else {
		c.recorder = &record.FakeRecorder{}
	}
	// Upstream's queue names, so dashboards written for
	// kube-controller-manager read these.
	c.attemptToDelete = controller.New("garbage_collector_attempt_to_delete", cfg.Workers, controller.ReconcilerFunc(c.processAttemptToDelete))
	c.attemptToOrphan = controller.New("garbage_collector_attempt_to_orphan", cfg.Workers, controller.ReconcilerFunc(c.processAttemptToOrphan))
	return c
}

// absentCacheSize is upstream's: enough for the owners of one burst of
// deletions.
const absentCacheSize = 500

// run discovers the resources, starts a monitor for each, waits for them
// to list (bounded), then runs the workers and rediscovers periodically
// until ctx ends.
func (c *collector) run(ctx context.Context) error {
	resources, err := c.initialDiscovery(ctx)
	if err != nil {
		return nil // ctx ended
	}
	defer c.stopMonitors()
	c.syncMonitors(ctx, resources)
	if c.waitForSync(ctx, c.cfg.InitialSyncTimeout) {
		c.log.Info("all resource monitors synced", "resources", len(resources))
	} else if ctx.Err() == nil {
		c.log.Info("not all resource monitors synced, proceeding anyway", "resources", len(resources))
	}
	var wg sync.WaitGroup
	wg.Go(func() { _ = c.attemptToDelete.Run(ctx) })
	wg.Go(func() { _ = c.attemptToOrphan.Run(ctx) })
	c.syncLoop(ctx, resources)
	wg.Wait()
	return nil
}

// initialDiscovery retries discovery every second until it succeeds or
// ctx ends.
func (c *collector) initialDiscovery(ctx context.Context) (resourceSet, error) {
	for {
		resources, err := c.discover(nil)
		if err == nil {
			return resources, nil
		}
		c.log.Info("resource discovery failed, retrying", "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-c.clock.After(time.Second):
		}
	}
}

// observe feeds an added or updated object into the graph.
func (c *collector) observe(r schema.GroupVersionResource, kind string, obj any) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return
	}
	deleting := m.DeletionTimestamp != nil
	c.apply(c.graph.observe(node{
		id:                 identity{resource: r, kind: kind, namespace: m.Namespace, name: m.Name, uid: m.UID},
		owners:             m.OwnerReferences,
		beingDeleted:       deleting,
		deletingDependents: deleting && slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents),
		orphaning:          deleting && slices.Contains(m.Finalizers, metav1.FinalizerOrphanDependents),
	}))
}

// observeDeleted removes an object an informer saw deleted.
func (c *collector) observeDeleted(obj any) {
	m, ok := controller.ObjectOf[*metav1.PartialObjectMetadata](obj)
	if !ok {
		return
	}
	c.apply(c.graph.forget(m.UID, true))
}

// apply carries out a graph change's effects.
func (c *collector) apply(eff effects) {
	for _, k := range eff.absent {
		c.absent.Add(k, struct{}{})
	}
	for _, uid := range eff.attemptToDelete {
		c.attemptToDelete.EnqueueKey(string(uid))
	}
	for _, uid := range eff.attemptToOrphan {
		c.attemptToOrphan.EnqueueKey(string(uid))
	}
	for _, inv := range eff.invalid {
		c.reportInvalidNamespace(inv)
	}
}

// reportInvalidNamespace records upstream's warning on a dependent whose
// ownerReference names a namespaced owner it cannot have.
func (c *collector) reportInvalidNamespace(inv invalidRef) {
	d := inv.dependent
	ref := &corev1.ObjectReference{APIVersion: d.apiVersion(), Kind: d.kind, Namespace: d.namespace, Name: d.name, UID: d.uid}
	owner := refString(inv.ref.APIVersion, inv.ref.Kind, d.namespace, inv.ref.Name, inv.ref.UID)
	c.log.Info("ownerReference names an owner outside the dependent's namespace", "dependent", d.String(), "owner", owner)
	c.recorder.Eventf(ref, corev1.EventTypeWarning, "OwnerRefInvalidNamespace", "ownerRef %s does not exist in namespace %q", owner, d.namespace)
}
