package leaderelect_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/leaderelect"
)

// Two candidates for one lease: only one runs at a time, and the second
// takes over when the first steps down.
func TestOneLeaderAtATime(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	cfg := leaderelect.Config{RestConfig: c.Config, Namespace: "kube-system", Name: "test-lock",
		LeaseDuration: 2 * time.Second, RenewDeadline: 1500 * time.Millisecond, RetryPeriod: 200 * time.Millisecond}

	var running, maxRunning atomic.Int32
	started := make(chan int, 2)
	candidate := func(ctx context.Context, n int) error {
		return leaderelect.Run(ctx, cfg, func(ctx context.Context) error {
			now := running.Add(1)
			defer running.Add(-1)
			for {
				if m := maxRunning.Load(); now <= m || maxRunning.CompareAndSwap(m, now) {
					break
				}
			}
			started <- n
			<-ctx.Done()
			return nil
		})
	}
	ctx1, stop1 := context.WithCancel(context.Background())
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	done1 := make(chan error, 1)
	go func() { done1 <- candidate(ctx1, 1) }()
	first := <-started
	if first != 1 {
		t.Fatalf("candidate %d led first, want 1", first)
	}
	done2 := make(chan error, 1)
	go func() { done2 <- candidate(ctx2, 2) }()
	select {
	case n := <-started:
		t.Fatalf("candidate %d started while 1 leads", n)
	case <-time.After(3 * time.Second):
	}
	stop1()
	if err := <-done1; err != nil {
		t.Fatalf("first candidate: %v", err)
	}
	select {
	case n := <-started:
		if n != 2 {
			t.Fatalf("candidate %d took over, want 2", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second candidate never led after the first stepped down")
	}
	if m := maxRunning.Load(); m != 1 {
		t.Fatalf("%d leaders ran at once", m)
	}
	stop2()
	<-done2
}
