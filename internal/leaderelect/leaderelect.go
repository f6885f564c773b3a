// Package leaderelect runs a function only while this process holds a
// coordination.k8s.io Lease, so that of several replicas of a component
// (scheduler, controller manager) exactly one acts. Timings default to
// upstream's: 15 s lease, 10 s renew deadline, 2 s retry.
//
//	err := leaderelect.Run(ctx, leaderelect.Config{RestConfig: rc, Namespace: "kube-system",
//		Name: "kube-scheduler", Identity: id}, func(ctx context.Context) error { ... })
//
// When the lease is lost, fn's context ends and Run returns an error once
// fn has returned: upstream components exit then, and callers should too,
// so that no two leaders ever act at once. When ctx ends, Run waits for fn
// to return and only then releases the lease, so a standby takes over
// within one retry period and never overlaps.
package leaderelect

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/ptr"
)

// Config names the lease and the candidate.
type Config struct {
	// RestConfig reaches the API server; the lock gets its own client
	// from it.
	RestConfig *rest.Config
	Namespace  string
	Name       string
	// Identity is this candidate's name (default hostname_uuid).
	Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod default to 15s/10s/2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	Log                                       *slog.Logger
}

func (c *Config) defaults() {
	if c.LeaseDuration == 0 {
		c.LeaseDuration = 15 * time.Second
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = 10 * time.Second
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = 2 * time.Second
	}
	if c.Identity == "" {
		host, _ := os.Hostname()
		c.Identity = host + "_" + string(uuid.NewUUID())
	}
	if c.Log == nil {
		c.Log = slog.Default()
	}
}

// Run blocks until this candidate leads, then runs fn until ctx ends or
// the lease is lost. It returns nil when ctx ended, fn's error if fn
// failed, and an error naming the lease if it was lost.
func Run(ctx context.Context, cfg Config, fn func(ctx context.Context) error) error {
	cfg.defaults()
	lease := cfg.Namespace + "/" + cfg.Name
	log := cfg.Log.With("lease", lease, "identity", cfg.Identity)
	// The lock's client gives up on a request after half the renew
	// deadline, as upstream's does, so one hung request cannot outlast
	// the lease.
	lc := rest.CopyConfig(cfg.RestConfig)
	lc.ContentType = "application/vnd.kubernetes.protobuf"
	lc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	lc.UserAgent = cfg.RestConfig.UserAgent + "/leader-election"
	lc.Timeout = cfg.RenewDeadline / 2
	client, err := kubernetes.NewForConfig(lc)
	if err != nil {
		return fmt.Errorf("leader election client: %w", err)
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: cfg.Identity},
	}

	// The elector runs on its own context, ended by us once fn has
	// stopped; ReleaseOnCancel then clears the lease.
	electCtx, stopElect := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElect()
	var (
		mu       sync.Mutex
		stopping bool
		running  sync.WaitGroup
	)
	runDone := make(chan error, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            lease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				mu.Lock()
				if stopping {
					mu.Unlock()
					return
				}
				running.Add(1)
				mu.Unlock()
				defer running.Done()
				log.Info("became leader")
				// fn stops when either the caller's ctx ends or the
				// lease is lost (leadCtx ends).
				runCtx, cancel := context.WithCancel(ctx)
				defer cancel()
				stop := context.AfterFunc(leadCtx, cancel)
				defer stop()
				runDone <- fn(runCtx)
			},
			OnStoppedLeading: func() {},
			OnNewLeader: func(id string) {
				if id != cfg.Identity {
					log.Info("lease held by another candidate", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	electDone := make(chan struct{})
	go func() {
		defer close(electDone)
		le.Run(electCtx)
	}()
	// shutdown waits for fn to stop, then releases the lease.
	shutdown := func() {
		mu.Lock()
		stopping = true
		mu.Unlock()
		running.Wait()
		stopElect()
		<-electDone
		release(client, cfg, log)
	}
	select {
	case <-ctx.Done():
		shutdown()
		return nil
	case err := <-runDone:
		shutdown()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
	case <-electDone:
		// The elector gave up (lease lost) while fn may still be stopping.
		shutdown()
		if ctx.Err() != nil {
			return nil
		}
	}
	return fmt.Errorf("leader election lost: lease %s", lease)
}

// release clears the lease if it still names this candidate. The
// elector's own release on cancel can fail: cancelling it may cut a renew
// short after etcd applied it, and the release then writes with a stale
// resourceVersion and conflicts, leaving standbys to wait out the whole
// lease. This reads the lease afresh and retries on conflict.
func release(client kubernetes.Interface, cfg Config, log *slog.Logger) {
	leases := client.CoordinationV1().Leases(cfg.Namespace)
	for range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.RenewDeadline)
		err := func() error {
			l, err := leases.Get(ctx, cfg.Name, metav1.GetOptions{})
			if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != cfg.Identity {
				return nil // gone, or not ours: nothing to give up
			}
			now := metav1.NewMicroTime(time.Now())
			l.Spec.HolderIdentity = nil
			l.Spec.LeaseDurationSeconds = ptr.To(int32(1))
			l.Spec.AcquireTime, l.Spec.RenewTime = &now, &now
			_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
			return err
		}()
		cancel()
		if err == nil {
			return
		}
		if !apierrors.IsConflict(err) {
			log.Warn("releasing lease", "err", err)
			return
		}
	}
}
