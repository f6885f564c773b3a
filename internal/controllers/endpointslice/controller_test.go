package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/rudder-dev/rudder/internal/serviceendpoints"
)

// TestReconcileWaitsForItsOwnWrites drives Reconcile against caches the
// test feeds by hand, so the informer's lag is under its control: a sync
// that runs before the cache shows the slice the previous one created
// must not create it again.
func TestReconcileWaitsForItsOwnWrites(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	var seq atomic.Int64
	// The fake store neither generates names nor versions; the API
	// server does.
	client.PrependReactor("create", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice).DeepCopy()
		n := seq.Add(1)
		s.Name, s.UID, s.ResourceVersion, s.Generation = fmt.Sprintf("%s%d", s.GenerateName, n), types.UID(fmt.Sprint("slice-", n)), fmt.Sprint(n), 1
		return true, s, client.Tracker().Create(a.GetResource(), s, s.Namespace)
	})
	index := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	svcs, pods, nodes, slicesIdx := index(), index(), index(), index()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(svcs.Add(testService()))
	for i := range 3 {
		must(pods.Add(testPod(fmt.Sprintf("p%d", i), fmt.Sprintf("10.0.0.%d", i+1))))
	}
	must(nodes.Add(testNodes("n0")))
	c := &sliceController{
		client:      client,
		services:    corelisters.NewServiceLister(svcs),
		pods:        corelisters.NewPodLister(pods),
		nodes:       corelisters.NewNodeLister(nodes),
		slices:      discoverylisters.NewEndpointSliceLister(slicesIdx),
		tracker:     newSliceTracker(),
		triggers:    serviceendpoints.NewTriggerTimes(),
		recorder:    record.NewFakeRecorder(10),
		log:         slog.Default(),
		maxPerSlice: DefaultMaxEndpointsPerSlice,
	}
	creates := func() int {
		n := 0
		for _, a := range client.Actions() {
			if a.GetVerb() == "create" && a.GetResource().Resource == "endpointslices" {
				n++
			}
		}
		return n
	}

	if _, err := c.Reconcile(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if n := creates(); n != 1 {
		t.Fatalf("first sync: %d creates, want 1", n)
	}
	// The cache has not seen the new slice yet.
	if _, err := c.Reconcile(ctx, "ns/web"); !errors.Is(err, errStaleCache) {
		t.Errorf("sync on a cache without our slice: err = %v, want %v", err, errStaleCache)
	}
	if n := creates(); n != 1 {
		t.Errorf("sync on a stale cache created a duplicate: %d creates", n)
	}
	// Now it has.
	created, err := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
	must(err)
	for i := range created.Items {
		must(slicesIdx.Add(&created.Items[i]))
	}
	before := len(client.Actions())
	if _, err := c.Reconcile(ctx, "ns/web"); err != nil {
		t.Fatalf("sync on an up-to-date cache: %v", err)
	}
	if extra := client.Actions()[before:]; len(extra) != 0 {
		t.Errorf("sync with nothing to change made %d requests: %v", len(extra), extra)
	}
	// Our own write's event is no news; someone else's later write is.
	s := &created.Items[0]
	if c.tracker.shouldSync(s) {
		t.Error("the event of our own create would cause a sync")
	}
	s2 := s.DeepCopy()
	s2.Generation, s2.ResourceVersion = 2, "99"
	if !c.tracker.shouldSync(s2) {
		t.Error("someone else's update would not cause a sync")
	}
}
