package bench

// The latency phase of `rudder bench density`, clusterloader2's way of
// measuring the pod startup SLO: once the cluster holds the Deployment's
// pods (the saturation phase), latency pods are created one at a time at a
// low, fixed rate, and their startup latency — creation to Running seen
// by a watch — is what the SLO (p99 ≤ 5 s) is judged on. A saturation
// burst measures throughput: its pods queue behind one another by design,
// so their startup times grow with the size of the burst and are reported,
// not judged.

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Defaults of the latency phase: clusterloader2's density test creates its
// latency pods at 5 per second.
const (
	densityLatencyPods = 100
	densityLatencyQPS  = 5
)

const densityLatencyLabel = "rudder.dev/bench-latency-pod"

// densityLatency creates n latency pods in namespace at qps and waits for
// all to run (or ctx to end). Their figures are in the returned snapshot;
// err is a failure to start the watch or to create a pod.
func densityLatency(ctx context.Context, creator, watcher kubernetes.Interface, namespace string, n int, qps float64) (densitySnapshot, error) {
	tracker := newDensityTracker(n)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := tracker.startSelected(wctx, watcher, namespace, densityLatencyLabel+"=true"); err != nil {
		return densitySnapshot{}, err
	}
	interval := time.Duration(float64(time.Second) / qps)
	tick := time.NewTicker(interval)
	defer tick.Stop()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for i := range n {
		if i > 0 {
			select {
			case <-tick.C:
			case <-ctx.Done():
				wg.Wait()
				return tracker.snapshot(), ctx.Err()
			}
		}
		// Each create on its own goroutine: a slow one must not shift the
		// schedule of the next.
		wg.Go(func() {
			_, err := creator.CoreV1().Pods(namespace).Create(ctx, densityLatencyPod(i), metav1.CreateOptions{})
			if err != nil {
				mu.Lock()
				if firstErr == nil {
					firstErr = fmt.Errorf("create latency pod %d: %w", i, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if firstErr != nil {
		return tracker.snapshot(), firstErr
	}
	select {
	case <-tracker.done:
	case <-ctx.Done():
	}
	return tracker.snapshot(), nil
}

// densityLatencyPod is latency pod i: the Deployment's pod, bare.
func densityLatencyPod(i int) *corev1.Pod {
	tmpl := densityDeployment(1).Spec.Template
	pod := &corev1.Pod{ObjectMeta: tmpl.ObjectMeta, Spec: tmpl.Spec}
	pod.Name = fmt.Sprintf("latency-%d", i)
	pod.Labels = map[string]string{densityLatencyLabel: "true"}
	return pod
}
