package controllertest

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/controller"
)

// PodWatch follows the pods of one namespace through a watch, as a user
// running kubectl get pods --watch would, and keeps two records of what
// it saw: a log of what happened to each pod, in the order the watch
// told it, and the most pods that were ever active at once. Workload
// controllers promise things about both: a StatefulSet starts web-1 only
// once web-0 is ready; a ReplicaSet or Job never runs more pods than it
// was asked for, even for a moment.
type PodWatch struct {
	ns       string
	describe func(*corev1.Pod) string

	mu     sync.Mutex
	log    []string
	active map[types.UID]bool // the pods active now
	// now and max count the active pods now and at most.
	now, max int
	// reached is closed once threshold pods are active at once.
	threshold int
	reached   chan struct{}
}

// WatchPods starts a PodWatch of namespace ns and returns once it has
// seen the pods that exist already. describe names a pod in the log; nil
// names it by its name. The watch stops when the test ends.
func WatchPods(t testing.TB, client kubernetes.Interface, ns string, describe func(*corev1.Pod) string) *PodWatch {
	t.Helper()
	if describe == nil {
		describe = func(p *corev1.Pod) string { return p.Name }
	}
	w := &PodWatch{ns: ns, describe: describe, active: map[types.UID]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	if _, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p := w.pod(obj); p != nil {
				w.record(p, "created")
				if podReady(p) {
					w.record(p, "ready")
				}
				w.count(p, podActive(p))
			}
		},
		UpdateFunc: func(o, n any) {
			op, np := w.pod(o), w.pod(n)
			if op == nil || np == nil {
				return
			}
			if !podReady(op) && podReady(np) {
				w.record(np, "ready")
			}
			if op.DeletionTimestamp == nil && np.DeletionTimestamp != nil {
				w.record(np, "terminating")
			}
			w.count(np, podActive(np))
		},
		DeleteFunc: func(obj any) {
			if p := w.pod(obj); p != nil {
				w.record(p, "gone")
				w.count(p, false)
			}
		},
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	return w
}

// pod is obj as a pod of the watched namespace, or nil. The namespace
// check guards against a server whose namespaced watch leaks other
// namespaces' events, which would otherwise pass for the controller's.
func (w *PodWatch) pod(obj any) *corev1.Pod {
	p, ok := controller.ObjectOf[*corev1.Pod](obj)
	if !ok || p.Namespace != w.ns {
		return nil
	}
	return p
}

func (w *PodWatch) record(p *corev1.Pod, what string) {
	w.mu.Lock()
	w.log = append(w.log, w.describe(p)+" "+what)
	w.mu.Unlock()
}

// count notes whether p is active now.
func (w *PodWatch) count(p *corev1.Pod, active bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.active[p.UID] != active {
		if active {
			w.now++
		} else {
			w.now--
		}
	}
	if active {
		w.active[p.UID] = true
	} else {
		delete(w.active, p.UID)
	}
	w.max = max(w.max, w.now)
	if w.reached != nil && w.now >= w.threshold {
		close(w.reached)
		w.reached = nil
	}
}

// Log returns the entries so far, each "<pod> <what>": <pod> as
// WatchPods' describe names it, <what> one of created, ready,
// terminating, gone.
func (w *PodWatch) Log() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.log)
}

// ResetLog forgets the entries so far, so that a test can check the
// order of what follows an action.
func (w *PodWatch) ResetLog() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log = nil
}

// AssertOrder fails the test unless each entry of want is in the log, in
// this order; other entries may come between them.
func (w *PodWatch) AssertOrder(t testing.TB, want ...string) {
	t.Helper()
	log := w.Log()
	at := -1
	for _, e := range want {
		i := slices.Index(log[at+1:], e)
		if i < 0 {
			t.Fatalf("%q not found in order %v in the log:\n%s", e, want, strings.Join(log, "\n"))
		}
		at += 1 + i
	}
}

// MaxActive is the most pods that were active at one time since the
// watch started: pods neither terminating nor finished (Succeeded or
// Failed), the ones a workload controller counts as its replicas.
func (w *PodWatch) MaxActive() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

// NotifyAt returns a channel that is closed once n pods are active at
// once, for a test that acts in the middle of a scale-up.
func (w *PodWatch) NotifyAt(n int) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	reached := make(chan struct{})
	if w.now >= n {
		close(reached)
		return reached
	}
	w.threshold, w.reached = n, reached
	return reached
}

func podActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// podReady: the pod runs and its Ready condition is True.
func podReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
