package simnode_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/simnode"
)

// TestFleetKeepsStatusesTrue checks what a node does to keep the API's
// copies true to what it runs, as a kubelet does (issue 17 #1, #15): pods
// made not ready during an outage are ready again once the node is back, a
// spec change is observed, extended resources patched into the node's
// status survive its heartbeats, images that cannot exist fail to pull,
// only Job pods complete, and a pod whose finalizer held it after its
// deletion goes once released.
func TestFleetKeepsStatusesTrue(t *testing.T) {
	cs := startServer(t)
	ctx := context.Background()
	startFleet(t, fastConfig(cs))
	pods := cs.CoreV1().Pods(metav1.NamespaceDefault)

	t.Run("pods are ready again after their node recovers", func(t *testing.T) {
		pod := waitPhase(t, cs, createPod(t, cs, "survivor", "sim-2", corev1.RestartPolicyAlways, nil), corev1.PodRunning)
		setStopped(t, cs, "sim-2", true)
		waitStill(t, cs, "sim-2")
		// What the node lifecycle controller does to a lost node's pods.
		pod = markPodNotReady(t, cs, pod)
		setStopped(t, cs, "sim-2", false)
		eventually(t, 10*time.Second, "pod Ready again", func() (bool, error) {
			p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && podReady(p), err
		})
	})

	t.Run("readiness taken away from a live node's pod is put back", func(t *testing.T) {
		pod := waitPhase(t, cs, createPod(t, cs, "steady", "sim-0", corev1.RestartPolicyAlways, nil), corev1.PodRunning)
		markPodNotReady(t, cs, pod)
		eventually(t, 10*time.Second, "pod Ready again", func() (bool, error) {
			p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && podReady(p), err
		})
	})

	t.Run("a spec update is observed", func(t *testing.T) {
		pod := waitPhase(t, cs, createPod(t, cs, "updated", "sim-0", corev1.RestartPolicyAlways, nil), corev1.PodRunning)
		pod.Spec.Containers[0].Image = "nginx:1.28"
		pod, err := pods.Update(ctx, pod, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "observedGeneration", func() (bool, error) {
			p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			return p.Generation > 1 && p.Status.ObservedGeneration == p.Generation && p.Status.ContainerStatuses[0].Image == "nginx:1.28" &&
				p.Status.ContainerStatuses[0].RestartCount == 1 && podReady(p), nil
		})
	})

	t.Run("extended resources patched into status survive heartbeats", func(t *testing.T) {
		patch := []byte(`{"status":{"capacity":{"example.com/fakecpu":"1k"}}}`)
		if _, err := cs.CoreV1().Nodes().Patch(ctx, "sim-1", types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
		// A condition changed behind the node's back makes it post its
		// whole status again.
		node, err := cs.CoreV1().Nodes().Get(ctx, "sim-1", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range node.Status.Conditions {
			if node.Status.Conditions[i].Type == corev1.NodeReady {
				node.Status.Conditions[i].Status = corev1.ConditionUnknown
			}
		}
		if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		var got *corev1.Node
		eventually(t, 10*time.Second, "node Ready again", func() (bool, error) {
			got, err = cs.CoreV1().Nodes().Get(ctx, "sim-1", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == corev1.NodeReady {
					return c.Status == corev1.ConditionTrue, nil
				}
			}
			return false, nil
		})
		want := resource.MustParse("1k")
		if q := got.Status.Capacity["example.com/fakecpu"]; q.Cmp(want) != 0 {
			t.Errorf("capacity example.com/fakecpu %s, want 1k", q.String())
		}
		if q := got.Status.Allocatable["example.com/fakecpu"]; q.Cmp(want) != 0 {
			t.Errorf("allocatable example.com/fakecpu %s, want 1k", q.String())
		}
		if q := got.Status.Allocatable["example.com/gpu"]; q.Value() != 4 {
			t.Errorf("the fleet's own extended resource: %s", q.String())
		}
	})

	t.Run("an image that cannot exist backs off", func(t *testing.T) {
		for name, mutate := range map[string]func(*corev1.Pod){
			"badimage": func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.k8s.io/invalid-image:invalid-tag" },
			"annotated": func(p *corev1.Pod) {
				p.Annotations = map[string]string{simnode.AnnotationImagePullError: "no such registry"}
			},
		} {
			t.Run(name, func(t *testing.T) {
				pod := newPod("pull-"+name, "sim-0", corev1.RestartPolicyAlways)
				mutate(pod)
				pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
				if err != nil {
					t.Fatal(err)
				}
				eventually(t, 10*time.Second, "ImagePullBackOff", func() (bool, error) {
					p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
					if err != nil || len(p.Status.ContainerStatuses) == 0 {
						return false, err
					}
					w := p.Status.ContainerStatuses[0].State.Waiting
					return w != nil && w.Reason == "ImagePullBackOff" && p.Status.Phase == corev1.PodPending && !podReady(p), nil
				})
			})
		}
	})

	t.Run("only Job pods complete", func(t *testing.T) {
		server := waitPhase(t, cs, createPod(t, cs, "sleeper", "sim-0", corev1.RestartPolicyNever, nil), corev1.PodRunning)
		job := newPod("job-owned", "sim-0", corev1.RestartPolicyNever)
		job.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "0a6a3c1e-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
		job, err := pods.Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitPhase(t, cs, job, corev1.PodSucceeded)
		// The Job's pod, created after it with the same run time, is done:
		// the other has had its chance to complete and must still run.
		if p, err := pods.Get(ctx, server.Name, metav1.GetOptions{}); err != nil || p.Status.Phase != corev1.PodRunning {
			t.Fatalf("a restartPolicy Never pod no Job controls: %v (%v)", p.Status.Phase, err)
		}
	})

	t.Run("a pod held by a finalizer goes once released", func(t *testing.T) {
		pod := newPod("held", "sim-1", corev1.RestartPolicyAlways)
		pod.Finalizers = []string{"example.com/hold"}
		pod, err := pods.Create(ctx, pod, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		waitPhase(t, cs, pod, corev1.PodRunning)
		if err := pods.Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](1)}); err != nil {
			t.Fatal(err)
		}
		// The node stops it and confirms; the finalizer keeps it.
		eventually(t, 30*time.Second, "deletion confirmed", func() (bool, error) {
			p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			return err == nil && p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0, err
		})
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := pods.Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitGone(t, cs, pod, 10*time.Second)
	})
}

func newPod(name, node string, policy corev1.RestartPolicy) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: policy,
			Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}, {Name: "log", Image: "busybox"}}},
	}
}

// markPodNotReady sets the pod's Ready condition False, as the node
// lifecycle controller does to the pods of a node it lost.
func markPodNotReady(t *testing.T, cs kubernetes.Interface, pod *corev1.Pod) *corev1.Pod {
	t.Helper()
	for {
		p, err := cs.CoreV1().Pods(pod.Namespace).Get(context.Background(), pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == corev1.PodReady {
				p.Status.Conditions[i].Status = corev1.ConditionFalse
				p.Status.Conditions[i].LastTransitionTime = metav1.Now()
			}
		}
		out, err := cs.CoreV1().Pods(pod.Namespace).UpdateStatus(context.Background(), p, metav1.UpdateOptions{})
		if err == nil {
			return out
		}
		if !strings.Contains(err.Error(), "modified") {
			t.Fatal(err)
		}
	}
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
