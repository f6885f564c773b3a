package statefulset_test

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/controller"
)

// startManager runs the given controllers as the manager does, until the
// test ends.
func startManager(t *testing.T, cfg *rest.Config, descriptors ...controller.Descriptor) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.RunManager(ctx, controller.ManagerConfig{RestConfig: cfg, Descriptors: descriptors})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunManager: %v", err)
		}
	})
}

// startBinder stands in for the scheduler: it binds every unscheduled
// pod to the simulated nodes in turn, which then run it.
func startBinder(t *testing.T, client kubernetes.Interface, nodes int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var mu sync.Mutex
	next := 0
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName="
	}))
	inf := f.Core().V1().Pods().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			pod := obj.(*corev1.Pod)
			if pod.DeletionTimestamp != nil || pod.Spec.NodeName != "" {
				return
			}
			mu.Lock()
			node := fmt.Sprintf("sim-%d", next%nodes)
			next++
			mu.Unlock()
			_ = client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
				ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
				Target:     corev1.ObjectReference{Kind: "Node", Name: node},
			}, metav1.CreateOptions{})
		},
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
}

// podLog records, in watch order, what happens to a namespace's pods:
// "web-0 created", "web-0 ready", "web-0 terminating", "web-0 gone".
type podLog struct {
	mu      sync.Mutex
	entries []string
}

func watchPods(t *testing.T, client kubernetes.Interface, ns string) *podLog {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := &podLog{}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) {
			p := obj.(*corev1.Pod)
			l.add(p.Name + " created")
			if ready(p) {
				l.add(p.Name + " ready")
			}
		},
		UpdateFunc: func(o, n interface{}) {
			op, np := o.(*corev1.Pod), n.(*corev1.Pod)
			if !ready(op) && ready(np) {
				l.add(np.Name + " ready")
			}
			if op.DeletionTimestamp == nil && np.DeletionTimestamp != nil {
				l.add(np.Name + " terminating")
			}
		},
		DeleteFunc: func(obj interface{}) {
			if p, ok := obj.(*corev1.Pod); ok {
				l.add(p.Name + " gone")
			}
		},
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	return l
}

func (l *podLog) add(e string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = append(l.entries, e)
}

func (l *podLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.entries)
}

// reset forgets what was logged so far.
func (l *podLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.entries = nil
}

// assertOrder fails unless each entry of want appears in the log, in
// this order.
func (l *podLog) assertOrder(t *testing.T, want ...string) {
	t.Helper()
	log := l.snapshot()
	at := -1
	for _, w := range want {
		i := slices.Index(log[at+1:], w)
		if i < 0 {
			t.Fatalf("%q not found in order %v in the log:\n%s", w, want, strings.Join(log, "\n"))
		}
		at += 1 + i
	}
}

func ready(p *corev1.Pod) bool {
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

func createNamespace(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

// newSet is an OrderedReady set "web" with a claim template "data".
func newSet(replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": "web"}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: "nginx",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "web", Image: "registry.example/web:1"}},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
				},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
				},
			}},
		},
	}
}

// eventually polls cond every 50 ms until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		ok, msg := cond()
		last = msg
		return ok, nil
	})
	if err != nil {
		t.Fatalf("condition not met in %v: %s", timeout, last)
	}
}

func waitSet(t *testing.T, client kubernetes.Interface, ns string, timeout time.Duration, cond func(*appsv1.StatefulSet) bool) *appsv1.StatefulSet {
	t.Helper()
	var set *appsv1.StatefulSet
	eventually(t, timeout, func() (bool, string) {
		var err error
		set, err = client.AppsV1().StatefulSets(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(set), fmt.Sprintf("generation %d status %+v", set.Generation, set.Status)
	})
	return set
}

// rolledOut: the status reports n ready pods at one revision for the
// current generation.
func rolledOut(n int32) func(*appsv1.StatefulSet) bool {
	return func(s *appsv1.StatefulSet) bool {
		st := s.Status
		return st.ObservedGeneration == s.Generation && st.Replicas == n && st.ReadyReplicas == n && st.UpdatedReplicas == n &&
			st.CurrentRevision == st.UpdateRevision && st.CurrentRevision != ""
	}
}

func patchSet(t *testing.T, client kubernetes.Interface, ns, patch string) {
	t.Helper()
	if _, err := client.AppsV1().StatefulSets(ns).Patch(context.Background(), "web", "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

// podsByName lists ns's pods that are not terminating.
func podsByName(t *testing.T, client kubernetes.Interface, ns string) map[string]corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]corev1.Pod{}
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			out[p.Name] = p
		}
	}
	return out
}

func claimNames(t *testing.T, client kubernetes.Interface, ns string) []string {
	t.Helper()
	list, err := client.CoreV1().PersistentVolumeClaims(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range list.Items {
		if c.DeletionTimestamp == nil {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}

// kubectl runs the real kubectl against the cluster.
func kubectl(t *testing.T, kubeconfig string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "/usr/bin/kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	return string(out), err
}
