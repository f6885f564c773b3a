package scheduler

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// waitingPods holds pods a Permit plugin told to Wait. Each waits for
// every such plugin to allow it, and is rejected when the first timer
// fires.
type waitingPods struct {
	mu   sync.Mutex
	pods map[types.UID]*waitingPod
}

type waitingPod struct {
	pod     *corev1.Pod
	mu      sync.Mutex
	pending map[string]*time.Timer
	done    chan *framework.Status // buffered 1: the verdict
}

func newWaitingPods() *waitingPods { return &waitingPods{pods: map[types.UID]*waitingPod{}} }

func (w *waitingPods) add(pod *corev1.Pod, plugins map[string]time.Duration) {
	wp := &waitingPod{pod: pod, pending: map[string]*time.Timer{}, done: make(chan *framework.Status, 1)}
	wp.mu.Lock()
	for name, d := range plugins {
		name := name
		wp.pending[name] = time.AfterFunc(d, func() {
			wp.reject(name, "rejected due to timeout after waiting "+d.String()+" at plugin "+name)
		})
	}
	wp.mu.Unlock()
	w.mu.Lock()
	w.pods[pod.UID] = wp
	w.mu.Unlock()
}

// wait blocks until the pod is allowed or rejected and forgets it.
func (w *waitingPods) wait(uid types.UID) *framework.Status {
	w.mu.Lock()
	wp := w.pods[uid]
	w.mu.Unlock()
	if wp == nil {
		return nil
	}
	s := <-wp.done
	w.mu.Lock()
	delete(w.pods, uid)
	w.mu.Unlock()
	return s
}

// get returns a waiting pod for Allow/Reject, or nil.
func (w *waitingPods) get(uid types.UID) *waitingPod {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pods[uid]
}

// Allow records one plugin's approval; the last one releases the pod.
func (wp *waitingPod) Allow(plugin string) {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	if t, ok := wp.pending[plugin]; ok {
		t.Stop()
		delete(wp.pending, plugin)
	}
	if len(wp.pending) == 0 {
		select {
		case wp.done <- nil:
		default:
		}
	}
}

func (wp *waitingPod) reject(plugin, msg string) {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	for _, t := range wp.pending {
		t.Stop()
	}
	wp.pending = map[string]*time.Timer{}
	select {
	case wp.done <- framework.NewStatus(framework.Unschedulable, msg).WithPlugin(plugin):
	default:
	}
}
