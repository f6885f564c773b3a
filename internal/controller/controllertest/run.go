package controllertest

import (
	"context"
	"sync"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Run builds ds with rc's credentials (see controller.NewContext), starts
// the shared informers, waits until they have synced and runs every
// Runnable of ds until stop is called or the test ends. A controller that
// cannot be built or whose informers do not sync fails the test at once;
// a Runnable that returns an error while running fails it too. stop
// returns once every Runnable and informer has returned, and may be
// called more than once.
func Run(t testing.TB, rc *rest.Config, ds ...controller.Descriptor) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	// The Context's event broadcaster lives as long as these
	// controllers, so a test that restarts them leaves nothing behind.
	cx, err := controller.NewContext(ctx, rc)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	return run(t, ctx, cancel, cx, ds)
}

// NewContext is the Context Run would build, for a test that changes it
// (a fake Clock, a quieter Log) before RunContext builds the controllers.
// Its event broadcaster stops when the test ends.
func NewContext(t testing.TB, rc *rest.Config) *controller.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cx, err := controller.NewContext(ctx, rc)
	if err != nil {
		t.Fatal(err)
	}
	return cx
}

// RunContext is Run with a Context the caller made with NewContext. The
// Context's informer factories are started and shut down by RunContext,
// so each Context serves one RunContext.
func RunContext(t testing.TB, cx *controller.Context, ds ...controller.Descriptor) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	return run(t, ctx, cancel, cx, ds)
}

func run(t testing.TB, ctx context.Context, cancel context.CancelFunc, cx *controller.Context, ds []controller.Descriptor) (stop func()) {
	t.Helper()
	var wg sync.WaitGroup
	// Informers are shut down after the Runnables have returned, so no
	// controller reads from a cache that is going away.
	stop = sync.OnceFunc(func() {
		cancel()
		wg.Wait()
		cx.Informers.Shutdown()
		cx.MetadataInformers.Shutdown()
	})
	t.Cleanup(stop)
	type named struct {
		name string
		r    controller.Runnable
	}
	var runnables []named
	for _, d := range ds {
		rs, err := d.New(ctx, cx)
		if err != nil {
			t.Fatalf("build %s: %v", d.Name, err)
		}
		for _, r := range rs {
			runnables = append(runnables, named{d.Name, r})
		}
	}
	// Every controller has requested its informers in New; Start starts
	// them all and waits for them, as the manager does.
	if err := cx.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range runnables {
		wg.Go(func() {
			if err := n.r.Run(ctx); err != nil && ctx.Err() == nil {
				t.Errorf("%s: %v", n.name, err)
			}
		})
	}
	return stop
}

// RunManager runs ds through controller.RunManager, as the controller
// manager process runs them, with rc's credentials and without leader
// election, until stop is called or the test ends. Unlike Run, every
// controller waits only for its own informers and one that fails is
// restarted after a back-off, so a controller denied a resource by RBAC
// keeps trying as it would in production. An error from RunManager
// (a controller that cannot be built) fails the test when it stops. stop
// returns once RunManager has, and may be called more than once.
func RunManager(t testing.TB, rc *rest.Config, ds ...controller.Descriptor) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.RunManager(ctx, controller.ManagerConfig{RestConfig: rc, Descriptors: ds})
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunManager: %v", err)
		}
	})
	t.Cleanup(stop)
	return stop
}
