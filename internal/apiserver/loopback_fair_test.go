package apiserver

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFairShare: at most limit seats are taken; when flows wait, seats go
// to them in turn, not in arrival order; a waiter that gives up leaves
// the queue, and a seat granted as it gives up is passed on.
func TestFairShare(t *testing.T) {
	f := newFairShare(2)
	ctx := context.Background()
	r1, _ := f.acquire(ctx, "a")
	r2, _ := f.acquire(ctx, "a")

	// Flow a queues three, then b one: b must be served second, not fourth.
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	releases := make(chan func(), 4)
	enqueue := func(flow string) {
		wg.Go(func() {
			rel, err := f.acquire(ctx, flow)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, flow)
			mu.Unlock()
			releases <- rel
		})
		// Let it reach the queue before the next one.
		fairWaitFor(t, func() bool {
			f.mu.Lock()
			defer f.mu.Unlock()
			n := 0
			for _, fl := range f.turn {
				n += len(fl.waiting)
			}
			return n > 0 && lastWaiterIs(f, flow)
		})
	}
	enqueue("a")
	enqueue("a")
	enqueue("a")
	enqueue("b")

	// A fifth waiter gives up: it must leave no trace.
	cctx, cancel := context.WithCancel(ctx)
	gaveUp := make(chan error)
	go func() {
		_, err := f.acquire(cctx, "c")
		gaveUp <- err
	}()
	fairWaitFor(t, func() bool { return lastWaiterIs(f, "c") })
	cancel()
	if err := <-gaveUp; err != context.Canceled {
		t.Fatalf("cancelled acquire: %v", err)
	}

	// Free one seat at a time and see who gets it.
	r1()
	got := <-releases
	r2()
	got2 := <-releases
	got()
	got3 := <-releases
	got2()
	got4 := <-releases
	got3()
	got4()
	wg.Wait()
	if want := "a b a a"; strings.Join(order, " ") != want {
		t.Errorf("served %q, want %q", strings.Join(order, " "), want)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.inUse != 0 || len(f.turn) != 0 || len(f.flows) != 0 {
		t.Errorf("left behind: inUse %d, turn %d, flows %d", f.inUse, len(f.turn), len(f.flows))
	}
}

func lastWaiterIs(f *fairShare, flow string) bool {
	fl := f.flows[flow]
	return fl != nil && len(fl.waiting) > 0
}

func fairWaitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(time.Millisecond)
	}
}

func TestFairFlowOf(t *testing.T) {
	for _, c := range []struct{ method, agent, path, want string }{
		{"GET", "rudder-scheduler/v1", "/api/v1/pods", ""},
		{"POST", "rudder-scheduler/v1.36 (linux/amd64)", "/api/v1/namespaces/ns/pods/p/binding", "rudder-scheduler pods"},
		{"PUT", "rudder-simnode", "/api/v1/namespaces/ns/pods/p/status", "rudder-simnode pods"},
		{"PUT", "rudder-simnode", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n", "rudder-simnode leases"},
		{"POST", "kcm", "/apis/apps/v1/namespaces/ns/replicasets", "kcm replicasets"},
		{"POST", "kcm", "/api/v1/namespaces", "kcm namespaces"},
		{"DELETE", "kcm", "/api/v1/nodes/n", "kcm nodes"},
		{"POST", "x", "/version", "x "},
	} {
		r := httptest.NewRequest(c.method, c.path, nil)
		r.Header.Set("User-Agent", c.agent)
		if got := fairFlowOf(r); got != c.want {
			t.Errorf("%s %s %s: %q, want %q", c.method, c.agent, c.path, got, c.want)
		}
	}
}
