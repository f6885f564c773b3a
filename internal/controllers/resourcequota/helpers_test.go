package resourcequota_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller"
)

// startController builds d from the cluster's admin config, starts the
// informers and runs d's loops until the test ends. (Each controller
// package keeps its own copy of this helper.)
func startController(t *testing.T, c *clustertest.Cluster, d controller.Descriptor) *controller.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() {
		cancel()
		wg.Wait()
	})
	cx, err := controller.NewContext(ctx, c.Config)
	if err != nil {
		t.Fatal(err)
	}
	runnables, err := d.New(ctx, cx)
	if err != nil {
		t.Fatalf("build %s: %v", d.Name, err)
	}
	if err := cx.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, r := range runnables {
		wg.Go(func() {
			if err := r.Run(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", d.Name, err)
			}
		})
	}
	return cx
}

// eventually polls cond every 50 ms until it returns true or the timeout
// passes; the last message explains a failure.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, msg := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v: %s", timeout, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
