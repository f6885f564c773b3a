package garbagecollector

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
)

// resourceSet maps each watched resource to its kind.
type resourceSet map[schema.GroupVersionResource]string

// deletableResources picks, from discovery's preferred versions, the
// resources the collector watches: those that can be listed, watched and
// deleted, minus the ignored ones. Subresources never qualify.
func deletableResources(lists []*metav1.APIResourceList, ignored map[schema.GroupResource]bool) resourceSet {
	out := resourceSet{}
	for _, l := range discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"delete", "list", "watch"}}, lists) {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || ignored[gv.WithResource(r.Name).GroupResource()] {
				continue
			}
			out[gv.WithResource(r.Name)] = r.Kind
		}
	}
	return out
}

// keepFailedGroups adds to cur the resources of prev whose group version
// discovery failed to read this time: a group that is briefly
// unavailable (an aggregated API restarting) must not make the
// collector forget its objects.
func keepFailedGroups(prev, cur resourceSet, failed map[schema.GroupVersion]error) {
	for r, kind := range prev {
		if _, ok := failed[r.GroupVersion()]; ok {
			if _, present := cur[r]; !present {
				cur[r] = kind
			}
		}
	}
}

// discover reads the deletable resources from the API server. A partial
// failure keeps the failed groups' resources of prev; an answer with no
// resources at all is an error (the server is not ready).
func (c *collector) discover(prev resourceSet) (resourceSet, error) {
	lists, err := c.discovery.ServerPreferredResources()
	cur := deletableResources(lists, c.cfg.ignored)
	if failed, ok := discovery.GroupDiscoveryFailedErrorGroups(err); ok {
		c.log.Info("some API groups could not be discovered", "groups", len(failed), "err", err)
		keepFailedGroups(prev, cur, failed)
	} else if err != nil {
		return nil, err
	}
	if len(cur) == 0 {
		return nil, errNoResources
	}
	return cur, nil
}

// monitor watches one resource with its own metadata informer, so it can
// be stopped when the resource leaves discovery.
type monitor struct {
	kind     string
	informer cache.SharedIndexInformer
	stop     context.CancelFunc
	done     chan struct{}
}

// syncMonitors starts a monitor for every resource in want that has
// none, and stops (and forgets the objects of) those no longer wanted.
func (c *collector) syncMonitors(ctx context.Context, want resourceSet) (added, removed int) {
	c.monitorsMu.Lock()
	defer c.monitorsMu.Unlock()
	for r, m := range c.monitors {
		if _, ok := want[r]; ok {
			continue
		}
		m.stop()
		<-m.done
		delete(c.monitors, r)
		c.apply(c.graph.purge(r))
		removed++
	}
	for _, r := range slices.SortedFunc(maps.Keys(want), func(a, b schema.GroupVersionResource) int {
		return strings.Compare(a.String(), b.String())
	}) {
		if _, ok := c.monitors[r]; ok {
			continue
		}
		c.monitors[r] = c.startMonitor(ctx, r, want[r])
		added++
	}
	return added, removed
}

func (c *collector) startMonitor(ctx context.Context, r schema.GroupVersionResource, kind string) *monitor {
	// No resync: the graph changes only when an object does.
	inf := metadatainformer.NewFilteredMetadataInformer(c.metadata, r, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	_ = inf.SetTransform(stripMetadata)
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observe(r, kind, obj) },
		UpdateFunc: func(_, obj any) { c.observe(r, kind, obj) },
		DeleteFunc: func(obj any) { c.observeDeleted(obj) },
	})
	mctx, stop := context.WithCancel(ctx)
	m := &monitor{kind: kind, informer: inf, stop: stop, done: make(chan struct{})}
	go func() {
		defer close(m.done)
		inf.RunWithContext(mctx)
	}()
	return m
}

// stopMonitors stops every monitor and waits for them.
func (c *collector) stopMonitors() {
	c.monitorsMu.Lock()
	defer c.monitorsMu.Unlock()
	for r, m := range c.monitors {
		m.stop()
		<-m.done
		delete(c.monitors, r)
	}
}

// monitorsSynced reports whether every monitor has listed its resource.
func (c *collector) monitorsSynced() bool {
	c.monitorsMu.Lock()
	defer c.monitorsMu.Unlock()
	if len(c.monitors) == 0 {
		return false
	}
	for _, m := range c.monitors {
		if !m.informer.HasSynced() {
			return false
		}
	}
	return true
}

// waitForSync waits until every monitor has synced or timeout passes,
// and reports which. Proceeding unsynced is safe: nothing is deleted on
// the graph's word that an owner is missing, only on the API server's.
func (c *collector) waitForSync(ctx context.Context, timeout time.Duration) bool {
	t := c.clock.NewTimer(timeout)
	defer t.Stop()
	tick := c.clock.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !c.monitorsSynced() {
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
			return false
		case <-tick.C():
		}
	}
	return true
}

// stripMetadata keeps only what the graph reads. The collector watches
// every object in the cluster, so labels, annotations and managedFields
// (often most of an object's metadata) would cost memory for nothing.
func stripMetadata(obj any) (any, error) {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return obj, nil
	}
	out := &metav1.PartialObjectMetadata{TypeMeta: m.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name:              m.Name,
		Namespace:         m.Namespace,
		UID:               m.UID,
		ResourceVersion:   m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp,
		OwnerReferences:   m.OwnerReferences,
	}}
	for _, f := range m.Finalizers {
		if f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents {
			out.Finalizers = append(out.Finalizers, f)
		}
	}
	return out, nil
}

// syncLoop rediscovers the resources every period until ctx ends,
// starting monitors for new ones (custom resources just defined) and
// stopping those of resources that went away.
func (c *collector) syncLoop(ctx context.Context, current resourceSet) {
	tick := c.clock.NewTicker(c.cfg.DiscoveryPeriod)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
		next, err := c.discover(current)
		if err != nil {
			c.log.Info("resource discovery failed, keeping the current monitors", "err", err)
			continue
		}
		if maps.Equal(next, current) {
			continue
		}
		// Owner references to the new kinds must resolve from now on.
		c.mapper.Reset()
		added, removed := c.syncMonitors(ctx, next)
		c.log.Info("resources changed: monitors synced", "added", added, "removed", removed, "total", len(next))
		current = next
		// Workers keep going meanwhile; this only reports a monitor
		// that cannot list its resource.
		if !c.waitForSync(ctx, c.cfg.DiscoveryPeriod) && ctx.Err() == nil {
			c.log.Info("not every monitor synced within the discovery period")
		}
	}
}
