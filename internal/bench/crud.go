package bench

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// opFunc is one operation on item i, sent through cs.
type opFunc func(ctx context.Context, cs kubernetes.Interface, i int) error

// runOps runs n operations on c concurrent workers. Workers take the next
// item from a shared counter rather than a fixed share, so one slow worker
// does not leave the others idle at the end and the wall time measures the
// server, not the luckiest partition. Worker k sends through connection
// k mod len(pool). It returns when all are done or ctx ends.
func runOps(ctx context.Context, pool *clientPool, name string, c, n int, op opFunc) OpResult {
	var (
		next     atomic.Int64
		errCount atomic.Int64
		firstErr atomic.Pointer[string]
		wg       sync.WaitGroup
		hists    = make([]histogram, c)
	)
	start := time.Now()
	cpu := startCPU()
	for k := 0; k < c; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			cs := pool.get(k)
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				err := op(ctx, cs, i)
				hists[k].record(time.Since(t0))
				if err != nil {
					errCount.Add(1)
					msg := err.Error()
					firstErr.CompareAndSwap(nil, &msg)
				}
			}
		}(k)
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all histogram
	for k := range hists {
		all.merge(&hists[k])
	}
	done := int(all.n)
	res := OpResult{Op: name, Clients: c, Count: done, Errors: int(errCount.Load()), Seconds: round3(elapsed.Seconds()),
		PerSec: round3(float64(done) / elapsed.Seconds()), summary: all.summary()}
	res.CPUCores, res.CPUPerOpUS = cpu.read(uint64(done))
	if done < n {
		// The stage timed out: say so rather than report a partial rate as
		// if it were the whole.
		res.Errors += n - done
		msg := fmt.Sprintf("stopped after %d of %d: %v", done, n, ctx.Err())
		firstErr.CompareAndSwap(nil, &msg)
	}
	if p := firstErr.Load(); p != nil {
		res.FirstError = *p
	}
	return res
}

// runCRUD creates, updates, gets, lists and deletes cfg.Objects pods with
// c clients.
// Each phase runs to completion before the next starts, so each rate is of
// one verb alone.
func runCRUD(ctx context.Context, env *env, c int) []OpResult {
	n := env.cfg.Objects
	prefix := fmt.Sprintf("crud-c%d", c)
	pods := make([]*corev1.Pod, n)
	ns := env.namespace

	create := runOps(ctx, env.pool, "create", c, n, func(ctx context.Context, cs kubernetes.Interface, i int) error {
		p, err := cs.CoreV1().Pods(ns).Create(ctx, env.pods.pod(prefix, i), metav1.CreateOptions{})
		pods[i] = p
		return err
	})
	update := runOps(ctx, env.pool, "update", c, n, func(ctx context.Context, cs kubernetes.Interface, i int) error {
		p := pods[i]
		if p == nil {
			return errors.New("not created")
		}
		// A full PUT of the object the create returned, as a controller
		// writes back what it read: the server checks its resourceVersion.
		p.Annotations[annUpdated] = "1"
		p.Labels["version"] = "v2"
		_, err := cs.CoreV1().Pods(ns).Update(ctx, p, metav1.UpdateOptions{})
		return err
	})
	get := runOps(ctx, env.pool, "get", c, n, func(ctx context.Context, cs kubernetes.Interface, i int) error {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, podName(prefix, i), metav1.GetOptions{})
		return err
	})
	// A LIST scans the whole namespace in the cache; fewer of them than of
	// the single-object verbs keeps the phase's duration comparable.
	lists := max(c, n/20)
	list := runOps(ctx, env.pool, "list", c, lists, func(ctx context.Context, cs kubernetes.Interface, i int) error {
		sel := fmt.Sprintf("%s=g%02d", labelGroup, i%groups)
		_, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
		return err
	})
	// Deleting the run's pods measures delete and leaves the namespace as
	// the run found it, so a LIST costs the same at every value of C.
	// Grace period 0: these pods never ran, there is nothing to wait for.
	del := runOps(ctx, env.pool, "delete", c, n, func(ctx context.Context, cs kubernetes.Interface, i int) error {
		return cs.CoreV1().Pods(ns).Delete(ctx, podName(prefix, i), metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
	})
	return []OpResult{create, update, get, list, del}
}
