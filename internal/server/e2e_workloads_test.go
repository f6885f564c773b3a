package server

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// The whole control plane as a user meets it: API server, scheduler,
// controllers and simulated nodes in one server, driven by the real
// kubectl.
func TestClusterWorkloadsWithKubectl(t *testing.T) {
	srv, rc := startTestServer(t, Config{SimulatedNodes: 3, Controllers: []string{"*"}})
	select {
	case <-srv.SimNodes.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("simulated nodes did not register")
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	k := kubectlFor(t, srv.Kubeconfig)
	ctx := context.Background()

	t.Run("a deployment rolls out, updates with maxSurge=1 maxUnavailable=0, rolls back", func(t *testing.T) {
		k.run(t, deploymentYAML("web", "nginx:1.26", 3), "apply", "-f", "-")
		out := k.ok(t, "rollout", "status", "deploy/web", "--timeout=60s")
		if !strings.Contains(out, `deployment "web" successfully rolled out`) {
			t.Fatalf("rollout status printed %q", out)
		}
		// Watch every pod change during the update: never fewer than 3
		// available, never more than 4 pods that are not terminating.
		watcher := startPodBoundsWatch(t, cs, "default", "app=web")
		k.ok(t, "set", "image", "deploy/web", "nginx=nginx:1.27")
		k.ok(t, "rollout", "status", "deploy/web", "--timeout=60s")
		minReady, maxPods := watcher.stop()
		if minReady < 3 || maxPods > 4 {
			t.Errorf("during the rollout: min ready %d (want ≥ 3), max pods %d (want ≤ 4)", minReady, maxPods)
		}
		hist := k.ok(t, "rollout", "history", "deploy/web")
		if !strings.Contains(hist, "1 ") || !strings.Contains(hist, "2 ") {
			t.Errorf("rollout history:\n%s", hist)
		}
		k.ok(t, "rollout", "undo", "deploy/web")
		k.ok(t, "rollout", "status", "deploy/web", "--timeout=60s")
		d, err := cs.AppsV1().Deployments("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "nginx:1.26" {
			t.Errorf("after undo the image is %s", img)
		}
		if d.Annotations["deployment.kubernetes.io/revision"] != "3" {
			t.Errorf("revision after undo %q, want 3", d.Annotations["deployment.kubernetes.io/revision"])
		}
		// Scaling and pause/resume.
		k.ok(t, "scale", "deploy/web", "--replicas=6")
		k.ok(t, "rollout", "status", "deploy/web", "--timeout=60s")
		k.ok(t, "rollout", "pause", "deploy/web")
		k.ok(t, "set", "image", "deploy/web", "nginx=nginx:1.28")
		controllertest.Consistently(t, 500*time.Millisecond, func() (bool, string) {
			rss, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err.Error()
			}
			for _, rs := range rss.Items {
				if rs.Spec.Template.Spec.Containers[0].Image == "nginx:1.28" {
					return false, "paused deployment created replica set " + rs.Name
				}
			}
			return true, ""
		})
		k.ok(t, "rollout", "resume", "deploy/web")
		k.ok(t, "rollout", "status", "deploy/web", "--timeout=60s")
		pods, _ := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		running := 0
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil && p.Spec.Containers[0].Image == "nginx:1.28" {
				running++
			}
		}
		if running != 6 {
			t.Errorf("%d running pods of the resumed rollout, want 6", running)
		}
	})

	t.Run("a service gets endpoints of its ready pods", func(t *testing.T) {
		k.ok(t, "expose", "deploy/web", "--port=80")
		eventually(t, 20*time.Second, "6 endpoints", func() (bool, error) {
			ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "web", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil {
				return false, err
			}
			n := 0
			for _, s := range ep.Subsets {
				n += len(s.Addresses)
			}
			return n == 6, nil
		})
	})

	t.Run("every namespace gets a default service account and the root CA", func(t *testing.T) {
		k.ok(t, "create", "namespace", "team-a")
		eventually(t, 10*time.Second, "default SA and kube-root-ca.crt", func() (bool, error) {
			_, err1 := cs.CoreV1().ServiceAccounts("team-a").Get(ctx, "default", metav1.GetOptions{})
			_, err2 := cs.CoreV1().ConfigMaps("team-a").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
			return err1 == nil && err2 == nil, nil
		})
	})

	t.Run("deleting a namespace removes everything in it, then the namespace", func(t *testing.T) {
		k.ok(t, "-n", "team-a", "create", "deployment", "x", "--image=x", "--replicas=4")
		k.ok(t, "-n", "team-a", "rollout", "status", "deploy/x", "--timeout=60s")
		k.ok(t, "-n", "team-a", "create", "configmap", "c", "--from-literal=a=b")
		k.ok(t, "delete", "namespace", "team-a", "--timeout=60s")
		if _, err := cs.CoreV1().Namespaces().Get(ctx, "team-a", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Fatalf("namespace still there after kubectl delete returned: %v", err)
		}
	})

	t.Run("deleting a deployment deletes its replica sets and pods", func(t *testing.T) {
		k.ok(t, "delete", "deploy/web")
		eventually(t, 30*time.Second, "web pods gone", func() (bool, error) {
			pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			if err != nil {
				return false, err
			}
			rss, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
			return len(pods.Items) == 0 && len(rss.Items) == 0, err
		})
	})
}

func deploymentYAML(name, image string, replicas int) string {
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
spec:
  replicas: %[3]d
  strategy:
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  selector:
    matchLabels: {app: %[1]s}
  template:
    metadata:
      labels: {app: %[1]s}
    spec:
      containers:
      - name: nginx
        image: %[2]s
`, name, image, replicas)
}

// podBoundsWatch follows pods of a selector and records the fewest ready
// pods and the most pods not being deleted, seen at any point.
type podBoundsWatch struct {
	w        watch.Interface
	done     chan struct{}
	mu       sync.Mutex
	minReady int
	maxPods  int
}

func startPodBoundsWatch(t *testing.T, cs kubernetes.Interface, ns, selector string) *podBoundsWatch {
	t.Helper()
	w, err := cs.CoreV1().Pods(ns).Watch(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	b := &podBoundsWatch{w: w, done: make(chan struct{}), minReady: 1 << 30}
	go func() {
		defer close(b.done)
		pods := map[string]*corev1.Pod{}
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				delete(pods, p.Name)
			} else {
				pods[p.Name] = p
			}
			ready, live := 0, 0
			for _, p := range pods {
				if p.DeletionTimestamp != nil {
					continue
				}
				live++
				for _, c := range p.Status.Conditions {
					if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
						ready++
					}
				}
			}
			b.mu.Lock()
			// The initial events arrive one by one: count the minimum
			// only once the starting pods are all there.
			if len(pods) >= 3 {
				b.minReady = min(b.minReady, ready)
			}
			b.maxPods = max(b.maxPods, live)
			b.mu.Unlock()
		}
	}()
	return b
}

func (b *podBoundsWatch) stop() (minReady, maxPods int) {
	b.w.Stop()
	<-b.done
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.minReady, b.maxPods
}

// A node that stops (its machine "dies") goes NotReady after the grace
// period, is tainted, and its pods are evicted and recreated elsewhere.
func TestClusterNodeFailure(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a node grace period")
	}
	srv, rc := startTestServer(t, Config{SimulatedNodes: 3, Controllers: []string{"*"}, NodeMonitorGracePeriod: 15 * time.Second})
	select {
	case <-srv.SimNodes.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("simulated nodes did not register")
	}
	cs := kubernetes.NewForConfigOrDie(rc)
	k := kubectlFor(t, srv.Kubeconfig)
	ctx := context.Background()
	manifest := strings.Replace(deploymentYAML("resilient", "nginx", 3), "      containers:", `      tolerations:
      - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
      - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 1}
      containers:`, 1)
	k.run(t, manifest, "apply", "-f", "-")
	k.ok(t, "rollout", "status", "deploy/resilient", "--timeout=60s")
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=resilient"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods: %v", err)
	}
	victim := pods.Items[0].Spec.NodeName
	k.ok(t, "annotate", "node", victim, "simnode.rudder.dev/stopped=true")

	eventually(t, 60*time.Second, victim+" NotReady and tainted unreachable", func() (bool, error) {
		n, err := cs.CoreV1().Nodes().Get(ctx, victim, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		tainted := false
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute {
				tainted = true
			}
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return tainted && c.Status == corev1.ConditionUnknown, nil
			}
		}
		return false, nil
	})
	out := k.ok(t, "get", "node", victim)
	if !strings.Contains(out, "NotReady") {
		t.Errorf("kubectl get node shows:\n%s", out)
	}
	eventually(t, 60*time.Second, "3 running pods away from "+victim, func() (bool, error) {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=resilient"})
		if err != nil {
			return false, err
		}
		running := 0
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				if p.Spec.NodeName == victim {
					return false, nil
				}
				running++
			}
		}
		return running == 3, nil
	})
}

// /metrics carries the scheduler's and the controllers' metrics beside the
// API server's, and the process's own.
func TestClusterMetrics(t *testing.T) {
	srv, rc := startTestServer(t, Config{SimulatedNodes: 1, Controllers: []string{"*"}})
	<-srv.SimNodes.Ready()
	cs := kubernetes.NewForConfigOrDie(rc)
	k := kubectlFor(t, srv.Kubeconfig)
	k.ok(t, "create", "deployment", "m", "--image=x")
	k.ok(t, "rollout", "status", "deploy/m", "--timeout=60s")
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"scheduler_schedule_attempts_total", "rudder_controller_reconcile_duration_seconds", "workqueue_depth", "apiserver_request_total",
		"go_goroutines", "go_memstats_heap_inuse_bytes", "process_resident_memory_bytes", "process_cpu_seconds_total"} {
		if !strings.Contains(string(body), name) {
			t.Errorf("/metrics has no %s", name)
		}
	}
}
