package apiserver

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/storage"
)

// TestServiceAllocationRepair: an allocation no service holds (a failed
// release, a crash mid-write) is freed by the periodic repair, but only
// once two repairs in a row found it leaked, so that an allocation whose
// service is still being written survives; one a service holds stays.
func TestServiceAllocationRepair(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	etcd, err := storage.StartEmbedded(ctx, storage.EmbeddedConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Close)
	store := storage.NewStore(etcd.Client)
	clock := clocktesting.NewFakeClock(time.Now())
	s, err := New(Config{Store: store, Clock: clock, WatchCacheCapacity: 100})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{{Port: 80}}}}
	svc.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Service"))
	if err := s.EnsureObjects(ctx, []runtime.Object{
		&corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		svc,
	}); err != nil {
		t.Fatal(err)
	}
	held, leaked := ipAllocPrefix+"10.96.0.10", ipAllocPrefix+"10.96.0.77"
	if _, err := store.Create(ctx, leaked, []byte("default/gone")); err != nil {
		t.Fatal(err)
	}
	exists := func(key string) bool {
		_, err := store.Get(ctx, key)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			t.Fatal(err)
		}
		return err == nil
	}
	if !exists(held) {
		t.Fatalf("the service's cluster IP has no allocation %s", held)
	}
	cache := s.handlers[corev1.SchemeGroupVersion.WithResource("services")].cache
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
		items, _ := cache.list(cache.prefix, nil)
		return len(items) == 1, fmt.Sprintf("%d services in the cache", len(items))
	})
	// The repair goroutine waits on the clock between runs: once it
	// waits again after a step, that run is done.
	repaired := func() (bool, string) { return clock.HasWaiters(), "the repair still runs" }
	controllertest.Eventually(t, 10*time.Second, repaired)

	// The first periodic repair only suspects the leak; the second frees it.
	clock.Step(repairInterval)
	controllertest.Eventually(t, 10*time.Second, repaired)
	if !exists(leaked) {
		t.Fatal("a leak found once was freed at once")
	}
	clock.Step(repairInterval)
	controllertest.Eventually(t, 10*time.Second, func() (bool, string) { return !exists(leaked), "the leaked allocation is still there" })
	if !exists(held) {
		t.Fatal("the repair freed an allocation a service holds")
	}
}
