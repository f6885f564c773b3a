package scheduler

import (
	"math/rand/v2"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/scheduler/framework"
)

// TestAssumedPodLeavesTheQueuedPodAlone checks the cheap copy the cache
// assumes: it is on the chosen node with the same requests and terms,
// while the pod the queue (and the informer) holds still has no node, so
// a failed bind requeues the pod as it was.
func TestAssumedPodLeavesTheQueuedPodAlone(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "u1", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}}}},
	}
	pi := framework.NewPodInfo(pod)
	assumed, api := assumedPod(pi, "n1")
	if assumed.Spec.NodeName != "n1" || api.Pod != assumed {
		t.Fatalf("assumed pod on %q (PodInfo pod %p, want %p)", assumed.Spec.NodeName, api.Pod, assumed)
	}
	if pod.Spec.NodeName != "" || pi.Pod != pod {
		t.Fatalf("queued pod changed: node %q, PodInfo pod %p", pod.Spec.NodeName, pi.Pod)
	}
	if !reflect.DeepEqual(api.Requests, framework.PodRequests(assumed, false)) || !reflect.DeepEqual(api.NonZeroRequests, framework.PodRequests(assumed, true)) {
		t.Fatalf("assumed requests %+v / %+v differ from the pod's", api.Requests, api.NonZeroRequests)
	}
	if assumed.UID != pod.UID || assumed.Name != pod.Name || assumed.Labels["app"] != "web" {
		t.Fatalf("assumed pod lost its identity: %+v", assumed.ObjectMeta)
	}
}

// TestSelectHostPicksTiesUniformly: only nodes with the highest score are
// picked, each of them about equally often, whatever their position.
func TestSelectHostPicksTiesUniformly(t *testing.T) {
	s := &Scheduler{rand: rand.New(rand.NewPCG(1, 2))}
	scores := []framework.NodeScore{
		{Name: "a", Score: 90}, {Name: "b", Score: 100}, {Name: "c", Score: 40},
		{Name: "d", Score: 100}, {Name: "e", Score: 99}, {Name: "f", Score: 100},
	}
	if got := s.selectHost(scores[:1]); got != "a" {
		t.Fatalf("one node: picked %q", got)
	}
	if got := s.selectHost(scores[:3]); got != "b" {
		t.Fatalf("one best node: picked %q", got)
	}
	const draws = 30000
	counts := map[string]int{}
	for range draws {
		counts[s.selectHost(scores)]++
	}
	for _, name := range []string{"b", "d", "f"} {
		// Expect draws/3 = 10,000 each, give or take 82 (one standard
		// deviation); the bounds are 7 of them away, and the seed is fixed.
		if c := counts[name]; c < 9400 || c > 10600 {
			t.Errorf("node %s picked %d times of %d, want about %d", name, c, draws, draws/3)
		}
	}
	if len(counts) != 3 {
		t.Errorf("picked %v, want only b, d and f", counts)
	}
}
