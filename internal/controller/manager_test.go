package controller_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

func TestEnabled(t *testing.T) {
	tests := []struct {
		name              string
		selectors         []string
		disabledByDefault bool
		want              bool
	}{
		{"nil means all defaults", nil, false, true},
		{"nil leaves off-by-default off", nil, true, false},
		{"star", []string{"*"}, false, true},
		{"star leaves off-by-default off", []string{"*"}, true, false},
		{"named turns an off-by-default one on", []string{"*", "foo"}, true, true},
		{"minus turns one off", []string{"*", "-foo"}, false, false},
		{"first mention wins: minus before star", []string{"-foo", "*"}, false, false},
		{"first mention wins: name before minus", []string{"foo", "-foo"}, false, true},
		{"minus star runs nothing unnamed", []string{"-*"}, false, false},
		{"minus star plus a name", []string{"-*", "foo"}, false, true},
		{"no star: only named ones", []string{"bar"}, false, false},
		{"other names do not matter", []string{"*", "-bar", "baz"}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := controller.Enabled("foo", tt.selectors, tt.disabledByDefault); got != tt.want {
				t.Errorf("Enabled(foo, %q, %v) = %v, want %v", tt.selectors, tt.disabledByDefault, got, tt.want)
			}
		})
	}
}

// probe is a trivial controller that records being built and run.
type probe struct {
	built, running atomic.Int32
	started        chan struct{}
	once           sync.Once
}

func newProbe() *probe { return &probe{started: make(chan struct{})} }

func (p *probe) descriptor(name string, disabledByDefault bool) controller.Descriptor {
	return controller.Descriptor{
		Name:              name,
		DisabledByDefault: disabledByDefault,
		New: func(ctx context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			p.built.Add(1)
			if cx.Client == nil || cx.Informers == nil || cx.MetadataInformers == nil || cx.Recorder == nil || cx.Clock == nil || cx.Log == nil {
				return nil, errors.New("context not filled")
			}
			return []controller.Runnable{controller.RunnableFunc(func(ctx context.Context) error {
				p.running.Add(1)
				defer p.running.Add(-1)
				p.once.Do(func() { close(p.started) })
				<-ctx.Done()
				return nil
			})}, nil
		},
	}
}

func TestRunManagerSelectsControllers(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	tests := []struct {
		name        string
		controllers []string
		want        map[string]bool
	}{
		{"all but foo", []string{"*", "-foo"}, map[string]bool{"foo": false, "bar": true, "baz": false}},
		{"defaults", nil, map[string]bool{"foo": true, "bar": true, "baz": false}},
		{"only the off-by-default one", []string{"-*", "baz"}, map[string]bool{"foo": false, "bar": false, "baz": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probes := map[string]*probe{"foo": newProbe(), "bar": newProbe(), "baz": newProbe()}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() {
				done <- controller.RunManager(ctx, controller.ManagerConfig{
					RestConfig:  c.Config,
					Controllers: tt.controllers,
					Descriptors: []controller.Descriptor{
						probes["foo"].descriptor("foo", false),
						probes["bar"].descriptor("bar", false),
						probes["baz"].descriptor("baz", true),
					},
				})
			}()
			for name, want := range tt.want {
				if !want {
					continue
				}
				select {
				case <-probes[name].started:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s did not run", name)
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatalf("RunManager: %v", err)
			}
			for name, want := range tt.want {
				p := probes[name]
				if ran := p.built.Load() == 1; ran != want {
					t.Errorf("%s built %d times, want enabled=%v", name, p.built.Load(), want)
				}
				if n := p.running.Load(); n != 0 {
					t.Errorf("%s still running after RunManager returned", name)
				}
			}
		})
	}
}

// A failing or panicking controller is restarted; the others carry on.
func TestRunManagerRestartsFailedRunnables(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	var failing, panicking atomic.Int32
	steady := newProbe()
	flaky := controller.Descriptor{Name: "flaky", New: func(context.Context, *controller.Context) ([]controller.Runnable, error) {
		return []controller.Runnable{
			controller.RunnableFunc(func(ctx context.Context) error {
				if failing.Add(1) <= 2 {
					return errors.New("transient")
				}
				<-ctx.Done()
				return nil
			}),
			controller.RunnableFunc(func(ctx context.Context) error {
				if panicking.Add(1) == 1 {
					panic("bad input")
				}
				<-ctx.Done()
				return nil
			}),
		}, nil
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.RunManager(ctx, controller.ManagerConfig{
			RestConfig:     c.Config,
			Descriptors:    []controller.Descriptor{flaky, steady.descriptor("steady", false)},
			RestartBackoff: 50 * time.Millisecond,
		})
	}()
	deadline := time.Now().Add(10 * time.Second)
	for failing.Load() < 3 || panicking.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("runs: failing %d (want 3), panicking %d (want 2)", failing.Load(), panicking.Load())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if steady.running.Load() != 1 {
		t.Fatal("the healthy controller stopped")
	}
	controllertest.Consistently(t, 300*time.Millisecond, func() (bool, string) {
		return failing.Load() == 3 && panicking.Load() == 2,
			fmt.Sprintf("a runnable that is running again was restarted: failing %d panicking %d", failing.Load(), panicking.Load())
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("RunManager: %v", err)
	}
}

// Two managers on one lease: one runs the controllers; the other takes
// over once the first stops, and never while it still runs.
func TestLeaderElection(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	const lease = "test-controller-manager"
	var running atomic.Int32 // managers running their controllers now
	var overlap atomic.Bool
	type member struct {
		runs    atomic.Int32
		started chan struct{}
		once    sync.Once
		cancel  context.CancelFunc
		done    chan error
	}
	start := func(id string) *member {
		m := &member{started: make(chan struct{}), done: make(chan error, 1)}
		d := controller.Descriptor{Name: "work", New: func(context.Context, *controller.Context) ([]controller.Runnable, error) {
			return []controller.Runnable{controller.RunnableFunc(func(ctx context.Context) error {
				if running.Add(1) > 1 {
					overlap.Store(true)
				}
				m.runs.Add(1)
				m.once.Do(func() { close(m.started) })
				<-ctx.Done()
				running.Add(-1)
				return nil
			})}, nil
		}}
		var ctx context.Context
		ctx, m.cancel = context.WithCancel(context.Background())
		go func() {
			m.done <- controller.RunManager(ctx, controller.ManagerConfig{
				RestConfig:    c.Config,
				Descriptors:   []controller.Descriptor{d},
				LeaderElect:   true,
				LeaseName:     lease,
				Identity:      id,
				LeaseDuration: 4 * time.Second,
				RenewDeadline: 3 * time.Second,
				RetryPeriod:   250 * time.Millisecond,
			})
		}()
		t.Cleanup(m.cancel)
		return m
	}
	a := start("manager-a")
	select {
	case <-a.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the only candidate did not start its controllers")
	}
	b := start("manager-b")
	controllertest.Consistently(t, time.Second, func() (bool, string) { // many retry periods
		return b.runs.Load() == 0, "the standby runs controllers while the leader holds the lease"
	})
	l, err := c.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "manager-a" {
		t.Fatalf("lease holder %q, want manager-a", h)
	}

	a.cancel()
	if err := <-a.done; err != nil {
		t.Fatalf("leader's RunManager: %v", err)
	}
	// The leader gave the lease up when it stopped, so the standby need
	// not wait out the lease: once RunManager returned, the lease names
	// no holder, or already the standby. (Asserted on the lease, not on
	// a take-over time, which a loaded machine stretches.)
	l, err = c.Client.CoordinationV1().Leases(metav1.NamespaceSystem).Get(context.Background(), lease, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if h := ptr.Deref(l.Spec.HolderIdentity, ""); h != "" && h != "manager-b" {
		t.Errorf("after the leader stopped the lease is held by %q, want released", h)
	}
	select {
	case <-b.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the standby did not take over")
	}
	if overlap.Load() {
		t.Fatal("both managers ran controllers at once")
	}
	b.cancel()
	if err := <-b.done; err != nil {
		t.Fatalf("standby's RunManager: %v", err)
	}
}

// A manager whose lease is taken stops its controllers and returns an
// error, rather than run on beside the new leader.
func TestLeaderElectionLost(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	const lease = "test-lost"
	var running atomic.Int32
	started := make(chan struct{})
	var once sync.Once
	d := controller.Descriptor{Name: "work", New: func(context.Context, *controller.Context) ([]controller.Runnable, error) {
		return []controller.Runnable{controller.RunnableFunc(func(ctx context.Context) error {
			running.Add(1)
			once.Do(func() { close(started) })
			<-ctx.Done()
			running.Add(-1)
			return nil
		})}, nil
	}}
	done := make(chan error, 1)
	go func() {
		done <- controller.RunManager(ctx, controller.ManagerConfig{
			RestConfig: c.Config, Descriptors: []controller.Descriptor{d},
			LeaderElect: true, LeaseName: lease, Identity: "victim",
			LeaseDuration: 3 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 200 * time.Millisecond,
		})
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("controllers did not start")
	}
	leases := c.Client.CoordinationV1().Leases(metav1.NamespaceSystem)
	// The victim renews every 200 ms: steal on a fresh copy until a write
	// wins.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l, err := leases.Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			return err
		}
		l.Spec = coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("thief"),
			LeaseDurationSeconds: ptr.To(int32(3600)),
			AcquireTime:          &metav1.MicroTime{Time: time.Now()},
			RenewTime:            &metav1.MicroTime{Time: time.Now()},
		}
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "leader election lost") {
			t.Fatalf("RunManager returned %v, want a lost-lease error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunManager kept running after losing its lease")
	}
	if running.Load() != 0 {
		t.Fatal("controllers still running after the lease was lost")
	}
}

func TestWorkqueueMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(controller.Collectors()...)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	handled := make(chan struct{}, 3)
	calls := 0
	c := controller.New("metrics-test", 1, controller.ReconcilerFunc(func(context.Context, string) (controller.Result, error) {
		calls++
		handled <- struct{}{}
		if calls == 1 {
			return controller.Result{}, errors.New("retry me")
		}
		return controller.Result{}, nil
	}))
	go func() { _ = c.Run(ctx) }()
	c.EnqueueKey("ns/a")
	for i := 0; i < 2; i++ {
		select {
		case <-handled:
		case <-time.After(5 * time.Second):
			t.Fatal("key not reconciled")
		}
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if (l.GetName() == "name" || l.GetName() == "controller") && l.GetValue() == "metrics-test" {
					switch {
					case m.GetCounter() != nil:
						got[f.GetName()] = m.GetCounter().GetValue()
					case m.GetHistogram() != nil:
						got[f.GetName()] = float64(m.GetHistogram().GetSampleCount())
					case m.GetGauge() != nil:
						got[f.GetName()] = m.GetGauge().GetValue()
					}
				}
			}
		}
	}
	for name, min := range map[string]float64{
		"workqueue_adds_total": 2, "workqueue_retries_total": 1, "workqueue_queue_duration_seconds": 2,
		"workqueue_work_duration_seconds": 1, "rudder_controller_reconcile_errors_total": 1,
		"rudder_controller_reconcile_duration_seconds": 1,
	} {
		if got[name] < min {
			t.Errorf("%s = %v, want at least %v (all: %v)", name, got[name], min, got)
		}
	}
	if _, ok := got["workqueue_depth"]; !ok {
		t.Errorf("no workqueue_depth for the queue: %v", got)
	}
}
