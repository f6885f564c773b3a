package controllertest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// probe is a controller that lists ConfigMaps when it starts and runs
// until its context ends, recording both.
type probe struct {
	seen    atomic.Int32 // ConfigMaps in the cache when it started, +1
	running atomic.Bool
	exited  atomic.Bool
}

func (p *probe) descriptor() controller.Descriptor {
	return controller.Descriptor{Name: "probe", New: func(ctx context.Context, cx *controller.Context) ([]controller.Runnable, error) {
		lister := cx.Informers.Core().V1().ConfigMaps().Lister()
		return []controller.Runnable{controller.RunnableFunc(func(ctx context.Context) error {
			cms, _ := lister.ConfigMaps("probe").List(labels.Everything())
			p.seen.Store(int32(len(cms)) + 1)
			p.running.Store(true)
			<-ctx.Done()
			p.exited.Store(true)
			return nil
		})}, nil
	}}
}

func TestWithCluster(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
	cs := c.Client
	ctx := context.Background()

	t.Run("Run starts informers before the controller and stop waits for it", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "probe")
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, run := range []struct {
			name string
			run  func(testing.TB, controller.Descriptor) func()
		}{
			{"Run", func(t testing.TB, d controller.Descriptor) func() { return controllertest.Run(t, c.Config, d) }},
			{"RunContext", func(t testing.TB, d controller.Descriptor) func() {
				return controllertest.RunContext(t, controllertest.NewContext(t, c.Config), d)
			}},
			{"RunManager", func(t testing.TB, d controller.Descriptor) func() { return controllertest.RunManager(t, c.Config, d) }},
		} {
			t.Run(run.name, func(t *testing.T) {
				p := &probe{}
				stop := run.run(t, p.descriptor())
				controllertest.Eventually(t, 10*time.Second, func() (bool, string) { return p.running.Load(), "probe not running" })
				if got := p.seen.Load() - 1; got != 1 {
					t.Errorf("probe started with %d ConfigMaps in its cache, want the 1 that exists", got)
				}
				stop()
				if !p.exited.Load() {
					t.Error("stop returned before the controller did")
				}
				stop() // a second call is harmless
			})
		}
	})

	t.Run("Run fails the test when a controller cannot be built", func(t *testing.T) {
		broken := controller.Descriptor{Name: "broken", New: func(context.Context, *controller.Context) ([]controller.Runnable, error) {
			return nil, errors.New("no such resource")
		}}
		if got, want := failure(t, func(tb testing.TB) { controllertest.Run(tb, c.Config, broken) }), "build broken: no such resource"; got != want {
			t.Errorf("failure %q, want %q", got, want)
		}
	})

	t.Run("Binder", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "binder")
		b := controllertest.StartBinder(t, cs)
		create := func(name string, mut ...func(*corev1.Pod)) {
			t.Helper()
			controllertest.CreatePod(t, cs, controllertest.WebPod(ns, name, "", 0, mut...))
		}
		waitNode := func(name, want string) {
			t.Helper()
			controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return p.Spec.NodeName == want, fmt.Sprintf("%s on %q, want %q", name, p.Spec.NodeName, want)
			})
		}
		pin := func(node string) func(*corev1.Pod) {
			return func(p *corev1.Pod) {
				p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
					NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}},
				}}}
			}
		}

		t.Run("round robin over the Ready nodes", func(t *testing.T) {
			for i := range 3 {
				create(fmt.Sprintf("p%d", i))
				waitNode(fmt.Sprintf("p%d", i), fmt.Sprintf("sim-%d", i))
			}
		})
		t.Run("a pod pinned by node affinity goes to its node, out of turn", func(t *testing.T) {
			create("pinned", pin("sim-2"))
			waitNode("pinned", "sim-2")
			create("p3")
			waitNode("p3", "sim-0")
		})
		t.Run("paused, pods wait; resumed, they are bound", func(t *testing.T) {
			b.Pause()
			create("waiting")
			controllertest.Consistently(t, 300*time.Millisecond, func() (bool, string) {
				p, err := cs.CoreV1().Pods(ns).Get(ctx, "waiting", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return p.Spec.NodeName == "", "bound to " + p.Spec.NodeName + " while paused"
			})
			b.Resume()
			waitNode("waiting", "sim-1")
		})
	})

	t.Run("PodWatch", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "watched")
		w := controllertest.WatchPods(t, cs, ns, nil)
		two := w.NotifyAt(2)
		for _, name := range []string{"a", "b"} {
			controllertest.CreatePod(t, cs, controllertest.WebPod(ns, name, "sim-0", 8080, controllertest.HoldDeletion))
		}
		select {
		case <-two:
		case <-time.After(10 * time.Second):
			t.Fatal("NotifyAt(2) not closed with 2 pods active")
		}
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			log := strings.Join(w.Log(), ", ")
			return strings.Contains(log, "a ready") && strings.Contains(log, "b ready"), log
		})
		if err := cs.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			return strings.Contains(strings.Join(w.Log(), ","), "a terminating"), fmt.Sprint(w.Log())
		})
		controllertest.ReleaseDeletion(t, cs, ns, "a")
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			return strings.Contains(strings.Join(w.Log(), ","), "a gone"), fmt.Sprint(w.Log())
		})
		w.AssertOrder(t, "a created", "a ready", "a terminating", "a gone")
		if m := w.MaxActive(); m != 2 {
			t.Errorf("MaxActive %d, want 2", m)
		}
		w.ResetLog()
		if log := w.Log(); len(log) != 0 {
			t.Errorf("log after ResetLog: %v", log)
		}
		if got := failure(t, func(tb testing.TB) { w.AssertOrder(tb, "b gone") }); !strings.Contains(got, `"b gone" not found`) {
			t.Errorf("AssertOrder of a missing entry failed with %q", got)
		}
	})

	t.Run("SetPodReady", func(t *testing.T) {
		ns := controllertest.CreateNamespace(t, cs, "ready")
		controllertest.CreatePod(t, cs, controllertest.WebPod(ns, "p", "sim-1", 0))
		for _, ready := range []bool{false, true} {
			controllertest.SetPodReady(t, cs, ns, "p", ready)
			if got := readyStatus(t, cs, ns, "p"); got != map[bool]corev1.ConditionStatus{true: corev1.ConditionTrue, false: corev1.ConditionFalse}[ready] {
				t.Errorf("after SetPodReady(%v): Ready=%s", ready, got)
			}
		}
	})

	t.Run("Kubectl", func(t *testing.T) {
		if got := controllertest.KubectlOutput(t, c.Server.Kubeconfig, "get", "namespace", "default", "-o", "name"); got != "namespace/default\n" {
			t.Errorf("kubectl get namespace printed %q", got)
		}
		res := controllertest.Kubectl(t, c.Server.Kubeconfig, "get", "configmap", "nosuch")
		if res.Code == 0 || !strings.Contains(res.Stderr, `"nosuch" not found`) {
			t.Errorf("kubectl get of a missing object: code %d, stderr %q", res.Code, res.Stderr)
		}
	})
}

func readyStatus(t *testing.T, cs kubernetes.Interface, ns, name string) corev1.ConditionStatus {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status
		}
	}
	return ""
}
