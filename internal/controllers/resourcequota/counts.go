package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/quota"
)

// countTracker serves object counts of any kind (count/<resource>.<group>
// and the legacy bare names) from metadata informers, started the first
// time a quota names the kind. Upstream watches every quotable resource
// of the cluster from the start; watching only what some quota counts
// costs nothing in clusters that count nothing, which is most.
//
// Kinds are resolved through discovery: a resource counts if it is
// namespaced and supports create, list, watch and delete (upstream's
// rule). A name that resolves to nothing is not measured; discovery is
// read again at most every rediscoverAfter in case it appears (a CRD).
type countTracker struct {
	informers metadatainformer.SharedInformerFactory
	discovery discovery.DiscoveryInterface
	clock     clock.PassiveClock
	log       *slog.Logger
	// changed is called with an object's kind and namespace when one is
	// added or deleted.
	changed func(ev quota.Evaluator, namespace string)

	mu         sync.Mutex
	quotable   map[schema.GroupResource]schema.GroupVersionResource
	discovered time.Time
	tracked    map[schema.GroupResource]*tracked
}

type tracked struct {
	eval   quota.Evaluator
	synced cache.InformerSynced
}

// rediscoverAfter bounds how often an unknown name sends us to
// discovery, as upstream re-reads it every 30 s.
const rediscoverAfter = 30 * time.Second

// syncTimeout bounds how long a sync waits for a newly started informer.
const syncTimeout = 30 * time.Second

// evaluators returns the count evaluators for the names among hard that
// count kinds, starting (and waiting for) their informers as needed. An
// informer that does not sync in time is an error; the others are still
// returned.
func (t *countTracker) evaluators(ctx context.Context, hard []corev1.ResourceName) ([]quota.Evaluator, error) {
	var want []schema.GroupResource
	for _, n := range hard {
		if gr, ok := quota.CountTarget(n); ok && !slices.Contains(want, gr) {
			want = append(want, gr)
		}
	}
	if len(want) == 0 {
		return nil, nil
	}
	var out []quota.Evaluator
	var errs []error
	for _, gr := range want {
		tr, err := t.track(ctx, gr)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if tr == nil {
			continue // not a quotable resource
		}
		if !tr.synced() {
			wctx, cancel := context.WithTimeout(ctx, syncTimeout)
			ok := cache.WaitForCacheSync(wctx.Done(), tr.synced)
			cancel()
			if !ok {
				errs = append(errs, fmt.Errorf("informer for %s did not sync", gr))
				continue
			}
		}
		out = append(out, tr.eval)
	}
	return out, errors.Join(errs...)
}

// track returns gr's quota.Evaluator, starting its informer the first time; nil
// if gr is not a quotable resource.
func (t *countTracker) track(ctx context.Context, gr schema.GroupResource) (*tracked, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tr, ok := t.tracked[gr]; ok {
		return tr, nil
	}
	gvr, ok := t.quotable[gr]
	if !ok && (t.discovered.IsZero() || t.clock.Since(t.discovered) >= rediscoverAfter) {
		if err := t.discover(); err != nil {
			return nil, err
		}
		gvr, ok = t.quotable[gr]
	}
	if !ok {
		return nil, nil
	}
	inf := t.informers.ForResource(gvr)
	lister := inf.Lister()
	ev := quota.NewCountEvaluator(gr, func(ns string) ([]runtime.Object, error) {
		return lister.ByNamespace(ns).List(labels.Everything())
	})
	notify := func(obj interface{}) {
		if m, ok := controller.ObjectOf[metav1.Object](obj); ok {
			t.changed(ev, m.GetNamespace())
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: notify, DeleteFunc: notify}); err != nil {
		return nil, err
	}
	// Starting the factory again starts only the informers it has not
	// started yet, so this is safe next to the manager's own Start.
	t.informers.Start(ctx.Done())
	tr := &tracked{eval: ev, synced: inf.Informer().HasSynced}
	if t.tracked == nil {
		t.tracked = map[schema.GroupResource]*tracked{}
	}
	t.tracked[gr] = tr
	t.log.Info("counting objects for quota", "resource", gvr.String())
	return tr, nil
}

// discover reads which resources can be counted. A partial answer (one
// API group failing) is used for what it has.
func (t *countTracker) discover() error {
	lists, err := t.discovery.ServerPreferredNamespacedResources()
	if len(lists) == 0 && err != nil {
		return fmt.Errorf("discover quotable resources: %w", err)
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"create", "list", "watch", "delete"}}, lists)
	gvrs, gerr := discovery.GroupVersionResources(lists)
	if gerr != nil {
		return fmt.Errorf("discover quotable resources: %w", gerr)
	}
	q := make(map[schema.GroupResource]schema.GroupVersionResource, len(gvrs))
	for gvr := range gvrs {
		q[gvr.GroupResource()] = gvr
	}
	t.quotable = q
	t.discovered = t.clock.Now()
	return nil
}
