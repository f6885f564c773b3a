package server

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// TestWatchInformerWatchList runs client-go informers, which in v0.36
// start with a WatchList (a watch with sendInitialEvents) instead of a
// LIST, and checks that each syncs and follows adds, updates and deletes.
// The three informer flavours decode differently — typed protobuf,
// unstructured JSON, metadata-only — so each must get the initial-events
// bookmark in a shape it understands, or it falls back to LIST.
func TestWatchInformerWatchList(t *testing.T) {
	e := newAPIEnv(t, Config{})
	gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
	cases := []struct {
		name string
		// informer builds a factory on cfg for namespace ns, starts it
		// with stop, and returns the configmap informer.
		informer func(cfg *rest.Config, ns string, stop <-chan struct{}) (cache.SharedIndexInformer, func())
	}{
		{"typed", func(cfg *rest.Config, ns string, stop <-chan struct{}) (cache.SharedIndexInformer, func()) {
			f := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0, informers.WithNamespace(ns))
			inf := f.Core().V1().ConfigMaps().Informer()
			f.Start(stop)
			return inf, f.Shutdown
		}},
		{"dynamic", func(cfg *rest.Config, ns string, stop <-chan struct{}) (cache.SharedIndexInformer, func()) {
			f := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dynamic.NewForConfigOrDie(cfg), 0, ns, nil)
			inf := f.ForResource(gvr).Informer()
			f.Start(stop)
			return inf, f.Shutdown
		}},
		{"metadata", func(cfg *rest.Config, ns string, stop <-chan struct{}) (cache.SharedIndexInformer, func()) {
			f := metadatainformer.NewFilteredSharedInformerFactory(metadata.NewForConfigOrDie(cfg), 0, ns, nil)
			inf := f.ForResource(gvr).Informer()
			f.Start(stop)
			return inf, f.Shutdown
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			ns, _ := seedWatchNamespace(t, e, "informer-"+tc.name)

			log := &requestLog{}
			cfg := rest.CopyConfig(e.cfg)
			cfg.Wrap(log.wrap)
			// Handlers see "add a", "update a rev=2", "delete a"; the rev
			// label is what every informer flavour can read.
			events := make(chan string, 100)
			describeObj := func(verb string, obj any) string {
				if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
					obj = d.Obj
				}
				m, err := meta.Accessor(obj)
				if err != nil {
					return verb + " " + err.Error()
				}
				if verb == "update" {
					return verb + " " + m.GetName() + " rev=" + m.GetLabels()["rev"]
				}
				return verb + " " + m.GetName()
			}
			stopCtx, stop := context.WithCancel(ctx)
			inf, shutdown := tc.informer(cfg, ns, stopCtx.Done())
			// Deferred calls run last-in first-out: stop the informer, then wait.
			defer shutdown()
			defer stop()
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc:    func(obj any) { events <- describeObj("add", obj) },
				UpdateFunc: func(_, obj any) { events <- describeObj("update", obj) },
				DeleteFunc: func(obj any) { events <- describeObj("delete", obj) },
			}); err != nil {
				t.Fatal(err)
			}
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatal("informer did not sync")
			}

			// The informer must have used a WatchList, not fallen back to LIST.
			path := "/api/v1/namespaces/" + ns + "/configmaps"
			var watchLists, lists int
			for _, req := range log.all() {
				if !strings.HasPrefix(req, "GET "+path+"?") {
					continue
				}
				switch {
				case strings.Contains(req, "watch=true") && strings.Contains(req, "sendInitialEvents=true"):
					watchLists++
				case !strings.Contains(req, "watch=true"):
					lists++
				}
			}
			if watchLists == 0 || lists != 0 {
				t.Fatalf("%d WatchList and %d LIST requests, want a WatchList and no LIST: %v", watchLists, lists, log.all())
			}

			expect := func(want ...string) {
				t.Helper()
				var got []string
				timer := time.NewTimer(watchTimeout)
				defer timer.Stop()
				for len(got) < len(want) {
					select {
					case ev := <-events:
						got = append(got, ev)
					case <-timer.C:
						t.Fatalf("handler saw %v, want %v", got, want)
					}
				}
				if !sameSet(got, want) {
					t.Fatalf("handler saw %v, want %v", got, want)
				}
			}
			expect("add a", "add b")
			cmc := e.cs.CoreV1().ConfigMaps(ns)
			if _, err := cmc.Create(ctx, testConfigMap("c", map[string]string{"rev": "1"}), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			expect("add c")
			c, err := cmc.Get(ctx, "c", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c.Labels["rev"] = "2"
			if _, err := cmc.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			expect("update c rev=2")
			if err := cmc.Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			expect("delete c")
			if keys := inf.GetStore().ListKeys(); !sameSet(keys, []string{ns + "/a", ns + "/b"}) {
				t.Fatalf("informer store %v", keys)
			}
		})
	}
}
