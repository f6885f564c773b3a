// Package leaderelect runs a function only while this process holds a
// coordination.k8s.io Lease, so that of several replicas of a component
// (scheduler, controller manager) exactly one acts. Timings are
// upstream's: 15 s lease, 10 s renew deadline, 2 s retry.
//
//	err := leaderelect.Run(ctx, leaderelect.Config{Client: c, Namespace: "kube-system",
//		Name: "kube-scheduler", Identity: host}, func(ctx context.Context) error { ... })
//
// When the lease is lost, the function's context is cancelled and Run
// returns an error: upstream components exit then, and so should ours, so
// that no two leaders ever act at once.
package leaderelect

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Config names the lease and the candidate.
type Config struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
	// Identity is this candidate's name (default: a random UUID); a
	// random suffix is always added so two processes on one host differ.
	Identity string
	// LeaseDuration, RenewDeadline, RetryPeriod default to 15s/10s/2s.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// ErrLeaseLost is returned when the lease was lost while running.
var ErrLeaseLost = errors.New("leader election lost")

// Run blocks until this candidate leads, then runs fn with a context that
// ends when ctx ends or the lease is lost. It returns fn's error,
// ErrLeaseLost, or ctx's error.
func Run(ctx context.Context, cfg Config, fn func(ctx context.Context) error) error {
	if cfg.LeaseDuration == 0 {
		cfg.LeaseDuration = 15 * time.Second
	}
	if cfg.RenewDeadline == 0 {
		cfg.RenewDeadline = 10 * time.Second
	}
	if cfg.RetryPeriod == 0 {
		cfg.RetryPeriod = 2 * time.Second
	}
	id := string(uuid.NewUUID())
	if cfg.Identity != "" {
		id = cfg.Identity + "_" + id
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.Name},
		Client:     cfg.Client.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
	runErr := make(chan error, 1)
	var led atomic.Bool
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   cfg.LeaseDuration,
		RenewDeadline:   cfg.RenewDeadline,
		RetryPeriod:     cfg.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            cfg.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(lctx context.Context) {
				led.Store(true)
				slog.Info("became leader", "lease", cfg.Namespace+"/"+cfg.Name, "identity", id)
				err := fn(lctx)
				runErr <- err
				// fn returning ends the candidacy too.
				cancel()
			},
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	le.Run(ctx)
	if !led.Load() {
		return parent.Err()
	}
	// le.Run does not wait for the callback: fn sees its context end
	// and returns.
	err = <-runErr
	if parent.Err() != nil || err != nil {
		return err
	}
	return ErrLeaseLost
}
