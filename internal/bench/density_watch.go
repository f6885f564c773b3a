package bench

// Pod startup latency as Kubernetes' SLO defines it: from the pod's
// creation to the moment a watch observes it Running (all containers
// started), for stateless pods whose images need no pull — which is what
// simulated nodes give.
//
// creationTimestamp has whole-second resolution, too coarse for a figure
// whose p50 is about a second. The pod's true creation lies in
// [creationTimestamp, creationTimestamp+1s) and before the watch first
// showed the pod, so the tracker takes the earlier of the first sighting
// and creationTimestamp+1s: late by the ADDED event's delivery delay at
// most (milliseconds), where creationTimestamp alone is early by 0.5 s on
// average. The whole-second figure, as clusterloader2 computes it, is
// kept too (StartupCTMS).

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// densityPod is what the tracker knows of one pod.
type densityPod struct {
	created time.Time // estimated creation (see the file comment)
	ct      time.Time // creationTimestamp, whole seconds
	bound   time.Time
	running time.Time
}

// densityTracker follows one namespace's pods through a watch and records
// each pod's creation, binding and Running, and the distributions of the
// steps between them. Only the watch goroutine writes; the mutex lets a
// reader take a consistent snapshot meanwhile.
type densityTracker struct {
	mu   sync.Mutex
	pods map[string]*densityPod
	// want, when positive, is the number of Running pods that completes the
	// run: done is closed when it is reached.
	want     int
	done     chan struct{}
	finished bool

	// running is how many tracked pods run now; ran how many ever did.
	seen, bound, running, ran int
	// deletedEarly counts pods deleted before they were seen Running,
	// deletedRunning those deleted after.
	deletedEarly, deletedRunning int
	// lastSeen, lastBound and lastRunning are when the last pod was first
	// seen, seen bound, seen Running.
	lastSeen, lastBound, lastRunning time.Time

	startup, startupCT, toBind, bindToRun histogram
	// err is why the watch ended early, if it did.
	err error
	// onEvent, when set, also gets every event (churn's watch latency).
	onEvent func(ev watch.Event, now time.Time)
}

func newDensityTracker(want int) *densityTracker {
	return &densityTracker{pods: map[string]*densityPod{}, want: want, done: make(chan struct{})}
}

// start lists the namespace for a resourceVersion and follows its pods from
// there until ctx ends. The list must come before any pod is created.
func (t *densityTracker) start(ctx context.Context, cs kubernetes.Interface, namespace string) error {
	return t.startSelected(ctx, cs, namespace, "")
}

// startSelected is start for the pods that match a label selector.
func (t *densityTracker) startSelected(ctx context.Context, cs kubernetes.Interface, namespace, selector string) error {
	// From the watch cache (resourceVersion 0): any recent revision will
	// do, as the pods are created after it; a consistent list would read
	// every pod of the namespace from etcd.
	list, err := cs.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector, ResourceVersion: "0"})
	if err != nil {
		return fmt.Errorf("listing pods to start the watch: %w", err)
	}
	return densityFollow(ctx, list.ResourceVersion, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		o.LabelSelector = selector
		return cs.CoreV1().Pods(namespace).Watch(ctx, o)
	}, t.observe, func(err error) { t.mu.Lock(); t.err = err; t.mu.Unlock() })
}

// densityFollow runs a watch from rv, restarted where it left off if the
// server closes it, handing each event to observe on one goroutine. An
// error event (such as 410 Gone) ends it; failed gets the reason.
func densityFollow(ctx context.Context, rv string, watchFn cache.WatchFuncWithContext, observe func(watch.Event, time.Time), failed func(error)) error {
	rw, err := watchtools.NewRetryWatcherWithContext(ctx, rv, &cache.ListWatch{WatchFuncWithContext: watchFn})
	if err != nil {
		return err
	}
	go func() {
		defer rw.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-rw.ResultChan():
				if !ok {
					if ctx.Err() == nil {
						failed(fmt.Errorf("watch closed"))
					}
					return
				}
				if ev.Type == watch.Error {
					failed(fmt.Errorf("watch error: %v", ev.Object))
					return
				}
				observe(ev, time.Now())
			}
		}
	}()
	return nil
}

func (t *densityTracker) observe(ev watch.Event, now time.Time) {
	if t.onEvent != nil {
		t.onEvent(ev, now)
	}
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok || ev.Type == watch.Bookmark {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.pods[pod.Name]
	if ev.Type == watch.Deleted {
		if p != nil {
			// A Running pod that goes (evicted, say) no longer counts
			// towards all Running: its replacement must run instead.
			if p.running.IsZero() {
				t.deletedEarly++
			} else {
				t.running--
				t.deletedRunning++
			}
			delete(t.pods, pod.Name)
		}
		return
	}
	if p == nil {
		p = &densityPod{created: now, ct: pod.CreationTimestamp.Time}
		if !p.ct.IsZero() {
			if bound := p.ct.Add(time.Second); bound.Before(now) {
				p.created = bound
			}
		}
		t.pods[pod.Name] = p
		t.seen++
		t.lastSeen = now
	}
	if p.bound.IsZero() && pod.Spec.NodeName != "" {
		p.bound = now
		t.bound++
		t.lastBound = now
		t.toBind.record(now.Sub(p.created))
	}
	if p.running.IsZero() && pod.Status.Phase == corev1.PodRunning {
		p.running = now
		t.running++
		t.ran++
		t.lastRunning = now
		t.startup.record(now.Sub(p.created))
		if !p.ct.IsZero() {
			t.startupCT.record(now.Sub(p.ct))
		}
		if !p.bound.IsZero() {
			t.bindToRun.record(now.Sub(p.bound))
		}
		if t.want > 0 && t.running == t.want && !t.finished {
			t.finished = true
			close(t.done)
		}
	}
}

// counts is how many pods were seen created, bound and Running so far.
func (t *densityTracker) counts() (seen, bound, running int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.seen, t.bound, t.running
}

// logProgress logs the counts every interval until ctx ends: a large run
// takes minutes, and its log shows where it is.
func (t *densityTracker) logProgress(ctx context.Context, t0 time.Time, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			seen, bound, running := t.counts()
			slog.Info("bench: progress", "seconds", int(time.Since(t0).Seconds()), "created", seen, "bound", bound, "running", running)
		}
	}
}

// densitySnapshot is the tracker's figures at one moment.
type densitySnapshot struct {
	seen, bound, running, ran, deletedEarly, deletedRunning int
	lastSeen, lastBound, lastRunning                        time.Time
	startup, startupCT, toBind, toRun                       Quantiles
	// notRunning is how many tracked (not deleted) pods are not Running.
	notRunning int
	err        error
}

func (t *densityTracker) snapshot() densitySnapshot {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := densitySnapshot{seen: t.seen, bound: t.bound, running: t.running, ran: t.ran, deletedEarly: t.deletedEarly, deletedRunning: t.deletedRunning,
		lastSeen: t.lastSeen, lastBound: t.lastBound, lastRunning: t.lastRunning,
		startup: quantilesOf(&t.startup), startupCT: quantilesOf(&t.startupCT),
		toBind: quantilesOf(&t.toBind), toRun: quantilesOf(&t.bindToRun), err: t.err}
	for _, p := range t.pods {
		if p.running.IsZero() {
			s.notRunning++
		}
	}
	return s
}
