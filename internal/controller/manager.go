package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/leaderelect"
)

// ManagerConfig configures RunManager. Zero values take the defaults
// noted on each field.
type ManagerConfig struct {
	// RestConfig holds the credentials the controllers act with. The
	// manager derives its clients from it: protobuf, no client-side rate
	// limit, user agent "rudder-controller-manager".
	RestConfig *rest.Config
	// Controllers selects controllers with upstream's --controllers
	// syntax (see Enabled). Nil or empty means ["*"].
	Controllers []string
	// Descriptors are the controllers that exist (a static registry).
	Descriptors []Descriptor

	// LeaderElect runs the controllers only while this manager holds the
	// Lease LeaseNamespace/LeaseName (default
	// kube-system/kube-controller-manager) as Identity (default
	// hostname_uuid). Losing the lease stops the controllers and makes
	// RunManager return an error: the caller should exit or start over,
	// never carry on as if it still led.
	LeaderElect                         bool
	LeaseName, LeaseNamespace, Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod tune the election;
	// defaults 15 s, 10 s and 2 s as upstream.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration

	// ResyncPeriod of the shared informers (default 12 h).
	ResyncPeriod time.Duration
	Clock        clock.WithTicker
	Log          *slog.Logger
	// RestartBackoff is the first delay before a failed runnable is
	// started again (default 1 s, doubling up to 1 min).
	RestartBackoff time.Duration
}

// ManagerUserAgent is the user agent of the manager's clients.
const ManagerUserAgent = "rudder-controller-manager"

func (c *ManagerConfig) defaults() {
	if len(c.Controllers) == 0 {
		c.Controllers = []string{"*"}
	}
	if c.LeaseName == "" {
		c.LeaseName = "kube-controller-manager"
	}
	if c.LeaseNamespace == "" {
		c.LeaseNamespace = metav1.NamespaceSystem
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = host + "_" + string(uuid.NewUUID())
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = 10 * time.Second
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = 2 * time.Second
	}
	if c.ResyncPeriod == 0 {
		c.ResyncPeriod = 12 * time.Hour
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
	if c.RestartBackoff == 0 {
		c.RestartBackoff = time.Second
	}
}

// Enabled reports whether the controller name runs under selectors, as
// upstream's --controllers reads them: the first entry naming it wins
// ("name" on, "-name" off); otherwise it runs when "*" is present and it
// is not disabled by default. Nil or empty selectors mean ["*"]; "-*"
// (or any list without "*") runs only the controllers named.
func Enabled(name string, selectors []string, disabledByDefault bool) bool {
	if len(selectors) == 0 {
		selectors = []string{"*"}
	}
	star := false
	for _, s := range selectors {
		switch s {
		case name:
			return true
		case "-" + name:
			return false
		case "*":
			star = true
		}
	}
	return star && !disabledByDefault
}

// RunManager builds every enabled controller, starts the shared
// informers and runs the controllers until ctx ends. Each Runnable runs
// in its own goroutine: a *Controller starts its workers once its own
// HasSynced informers have synced (all of them if it names none), any
// other Runnable once every informer has. So a resource the API server
// does not serve stalls only the controllers that watch it. A Runnable
// that fails (returns an error or panics) is logged and started again
// after a back-off, so one broken controller never stops the others. RunManager returns nil
// once ctx has ended and every Runnable has returned; it returns an error
// when a controller cannot be built or (with LeaderElect) the lease is
// lost.
func RunManager(ctx context.Context, cfg ManagerConfig) error {
	if cfg.RestConfig == nil {
		return errors.New("controller manager: no rest config")
	}
	cfg.defaults()
	installWorkqueueMetrics()
	if !cfg.LeaderElect {
		return runControllers(ctx, &cfg)
	}
	return runElected(ctx, &cfg, func(ctx context.Context) error { return runControllers(ctx, &cfg) })
}

// NewContext builds the clients, shared informer factories and event
// recorders every controller is made from, with the manager's client
// settings (protobuf, no client-side rate limit). It is what RunManager
// uses, and what a test of one controller uses to build it alone:
//
//	cx, err := controller.NewContext(ctx, restConfig)
//	runnables, err := mycontroller.Descriptor.New(ctx, cx)
//	err = cx.Start(ctx)
//	go runnables[0].Run(ctx)
//
// The event broadcaster stops when ctx ends.
func NewContext(ctx context.Context, rc *rest.Config) (*Context, error) {
	cx, stopEvents, err := newContext(rc, 12*time.Hour, clock.RealClock{}, slog.Default())
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, stopEvents)
	return cx, nil
}

func newContext(rc *rest.Config, resync time.Duration, clk clock.WithTicker, log *slog.Logger) (*Context, func(), error) {
	c := rest.CopyConfig(rc)
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	c.UserAgent = ManagerUserAgent
	client, err := kubernetes.NewForConfig(c)
	if err != nil {
		return nil, nil, fmt.Errorf("controller manager: clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		return nil, nil, fmt.Errorf("controller manager: dynamic client: %w", err)
	}
	md, err := metadata.NewForConfig(c)
	if err != nil {
		return nil, nil, fmt.Errorf("controller manager: metadata client: %w", err)
	}
	recorders, stopEvents := newRecorders(client, log)
	return &Context{
		Client:   client,
		Dynamic:  dyn,
		Metadata: md,
		// managedFields are dropped from every cached object, as upstream
		// does: no controller reads them and they are often half an
		// object's size.
		Informers:         informers.NewSharedInformerFactoryWithOptions(client, resync, informers.WithTransform(dropManagedFields)),
		MetadataInformers: metadatainformer.NewSharedInformerFactoryWithOptions(md, resync, metadatainformer.WithTransform(dropManagedFields)),
		Recorder:          recorders,
		Clock:             clk,
		Log:               log,
	}, stopEvents, nil
}

// Start starts both informer factories and waits until every informer
// requested so far has synced. It returns ctx's error if ctx ends first.
// Informers requested after Start are not started; call Start again.
func (cx *Context) Start(ctx context.Context) error {
	cx.Informers.Start(ctx.Done())
	cx.MetadataInformers.Start(ctx.Done())
	for typ, ok := range cx.Informers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("informer for %v did not sync", typ)
		}
	}
	for gvr, ok := range cx.MetadataInformers.WaitForCacheSync(ctx.Done()) {
		if !ok {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("metadata informer for %v did not sync", gvr)
		}
	}
	return nil
}

func dropManagedFields(obj interface{}) (interface{}, error) {
	if a, err := meta.Accessor(obj); err == nil && a.GetManagedFields() != nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}

func runControllers(ctx context.Context, cfg *ManagerConfig) error {
	log := cfg.Log.With("component", "controller-manager")
	// The informers and recorders live exactly as long as this run, so
	// a manager that lost its lease leaves nothing behind.
	ctx, cancel := context.WithCancel(ctx)
	cx, stopEvents, err := newContext(cfg.RestConfig, cfg.ResyncPeriod, cfg.Clock, cfg.Log)
	if err != nil {
		cancel()
		return err
	}
	// Deferred calls run last to first: controllers are stopped (ctx)
	// before the events they recorded are flushed, then the informers.
	defer cx.Informers.Shutdown()
	defer cx.MetadataInformers.Shutdown()
	defer stopEvents()
	defer cancel()

	type named struct {
		name string
		r    Runnable
	}
	var runnables []named
	for _, d := range cfg.Descriptors {
		if !Enabled(d.Name, cfg.Controllers, d.DisabledByDefault) {
			log.Debug("controller disabled", "controller", d.Name)
			continue
		}
		rs, err := d.New(ctx, cx)
		if err != nil {
			return fmt.Errorf("controller %s: %w", d.Name, err)
		}
		for _, r := range rs {
			runnables = append(runnables, named{d.Name, r})
		}
		log.Info("controller built", "controller", d.Name)
	}
	// Every controller waits for its own informers only, so one whose
	// resource the server does not serve (yet) holds up no other.
	// Runnables that cannot say which informers they need wait for all.
	cx.Informers.Start(ctx.Done())
	cx.MetadataInformers.Start(ctx.Done())
	synced := make(chan struct{})
	go func() {
		if cx.Start(ctx) == nil {
			close(synced)
		}
	}()
	allSynced := func() bool {
		select {
		case <-synced:
			return true
		default:
			return false
		}
	}
	var wg sync.WaitGroup
	for _, n := range runnables {
		r := n.r
		if c, ok := r.(*Controller); ok {
			if len(c.HasSynced) == 0 {
				c.HasSynced = []cache.InformerSynced{allSynced}
			}
		} else {
			r = RunnableFunc(func(ctx context.Context) error {
				select {
				case <-synced:
				case <-ctx.Done():
					return nil
				}
				return n.r.Run(ctx)
			})
		}
		wg.Go(func() { supervise(ctx, n.name, r, cfg.RestartBackoff, cfg.Clock, log) })
	}
	log.Info("controllers started", "count", len(runnables))
	<-ctx.Done()
	wg.Wait()
	return nil
}

// maxRestartBackoff caps the delay between restarts of a failing
// runnable; a run that lasted longer than this resets the delay.
const maxRestartBackoff = time.Minute

// supervise runs r until ctx ends, restarting it with exponential
// back-off when it fails. A runnable that returns nil before ctx ends has
// finished its work and is not restarted.
func supervise(ctx context.Context, name string, r Runnable, backoff time.Duration, clk clock.WithTicker, log *slog.Logger) {
	delay := backoff
	for {
		start := clk.Now()
		err := runRecovered(ctx, r)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			log.Info("controller loop returned", "controller", name)
			return
		}
		if clk.Since(start) > maxRestartBackoff {
			delay = backoff
		}
		log.Error("controller failed, restarting", "controller", name, "err", err, "after", delay)
		t := clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		delay = min(2*delay, maxRestartBackoff)
	}
}

func runRecovered(ctx context.Context, r Runnable) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return r.Run(ctx)
}

// runElected runs run only while holding the lease. The lease is given
// up (so a standby takes over within one RetryPeriod instead of a whole
// LeaseDuration) only after run has returned, so two managers never act
// at once.
func runElected(ctx context.Context, cfg *ManagerConfig, run func(context.Context) error) error {
	return leaderelect.Run(ctx, leaderelect.Config{
		RestConfig: cfg.RestConfig, Namespace: cfg.LeaseNamespace, Name: cfg.LeaseName, Identity: cfg.Identity,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Log: cfg.Log.With("component", "controller-manager"),
	}, run)
}

// ControllerUIDIndex names the index AddControllerUIDIndex installs:
// objects by the UID of their controller owner reference, and objects with
// no controller under OrphanIndexKey(namespace). With it a controller finds
// the pods it owns, plus those it might adopt, in time proportional to
// their number rather than to the namespace's.
const ControllerUIDIndex = "rudder.dev/controller-uid"

// OrphanIndexKey is the ControllerUIDIndex key of the objects in
// namespace that have no controller.
func OrphanIndexKey(namespace string) string { return "orphan/" + namespace }

// AddControllerUIDIndex adds ControllerUIDIndex to a shared informer
// (typed or metadata). Several controllers share one informer, so adding
// it again is not an error.
func AddControllerUIDIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[ControllerUIDIndex]; ok {
		return nil
	}
	err := inf.AddIndexers(cache.Indexers{ControllerUIDIndex: controllerUIDIndexFunc})
	if err != nil {
		// Lost a race with another controller adding the same index.
		if _, ok := inf.GetIndexer().GetIndexers()[ControllerUIDIndex]; ok {
			return nil
		}
	}
	return err
}

func controllerUIDIndexFunc(obj interface{}) ([]string, error) {
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, nil
	}
	if ref := metav1.GetControllerOfNoCopy(a); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return []string{OrphanIndexKey(a.GetNamespace())}, nil
}
