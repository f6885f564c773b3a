package replicaset_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controllers/replicaset"
)

// startManager runs the controllers of this package (the RC one only if
// the server serves RCs) as the manager does, as an API client with cfg's
// credentials. stop cancels it and waits until it has returned (also done
// at the end of the test).
func startManager(t *testing.T, cfg *rest.Config, descriptors ...controller.Descriptor) (stop func()) {
	t.Helper()
	if len(descriptors) == 0 {
		descriptors = []controller.Descriptor{replicaset.Descriptor}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if served(t, cs, "v1", "replicationcontrollers") {
			descriptors = append(descriptors, replicaset.RCDescriptor)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- controller.RunManager(ctx, controller.ManagerConfig{RestConfig: cfg, Descriptors: descriptors})
	}()
	stop = sync.OnceFunc(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("RunManager: %v", err)
		}
	})
	t.Cleanup(stop)
	return stop
}

// binder stands in for the scheduler: it binds every unscheduled pod to
// the simulated nodes in turn, which then run it. Paused, it leaves new
// pods Pending.
type binder struct {
	client kubernetes.Interface
	nodes  []string
	lister corelisters.PodLister

	mu     sync.Mutex
	paused bool
	next   int
}

func startBinder(t *testing.T, client kubernetes.Interface, nodes int) *binder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &binder{client: client}
	for i := 0; i < nodes; i++ {
		b.nodes = append(b.nodes, fmt.Sprintf("sim-%d", i))
	}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName="
	}))
	inf := f.Core().V1().Pods()
	b.lister = inf.Lister()
	inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { b.bind(ctx, obj.(*corev1.Pod)) },
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	return b
}

func (b *binder) bind(ctx context.Context, pod *corev1.Pod) {
	b.mu.Lock()
	if b.paused || pod.DeletionTimestamp != nil || pod.Spec.NodeName != "" {
		b.mu.Unlock()
		return
	}
	node := b.nodes[b.next%len(b.nodes)]
	b.next++
	b.mu.Unlock()
	_ = b.client.CoreV1().Pods(pod.Namespace).Bind(ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
}

func (b *binder) pause() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.paused = true
}

func (b *binder) resume(ctx context.Context) {
	b.mu.Lock()
	b.paused = false
	b.mu.Unlock()
	pods, _ := b.lister.List(labels.Everything())
	for _, p := range pods {
		b.bind(ctx, p)
	}
}

// podWatch follows a namespace's pods and remembers the most active
// (non-terminating, non-terminal) pods ever seen at once: the proof that
// a controller never overshot.
type podWatch struct {
	mu     sync.Mutex
	active map[string]bool
	max    int
	lister corelisters.PodLister

	// when active pods first reach threshold, reached is closed.
	threshold int
	reached   chan struct{}
}

// notifyAt returns a channel closed once n pods are active at once.
func (w *podWatch) notifyAt(n int) <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.threshold, w.reached = n, make(chan struct{})
	return w.reached
}

func watchPods(t *testing.T, client kubernetes.Interface, ns string) *podWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w := &podWatch{active: map[string]bool{}}
	f := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods()
	w.lister = inf.Lister()
	update := func(obj interface{}) {
		p, ok := obj.(*corev1.Pod)
		if !ok {
			if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				p, _ = tomb.Obj.(*corev1.Pod)
			}
		}
		if p == nil {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		w.active[p.Name] = podActive(p)
		n := 0
		for _, a := range w.active {
			if a {
				n++
			}
		}
		w.max = max(w.max, n)
		if w.reached != nil && n >= w.threshold {
			close(w.reached)
			w.reached = nil
		}
	}
	inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    update,
		UpdateFunc: func(_, n interface{}) { update(n) },
		DeleteFunc: func(obj interface{}) {
			if p, ok := obj.(*corev1.Pod); ok {
				w.mu.Lock()
				w.active[p.Name] = false
				w.mu.Unlock()
			}
		},
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() { cancel(); f.Shutdown() })
	return w
}

func (w *podWatch) maxActive() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.max
}

func (w *podWatch) resetMax() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.max = 0
	for _, a := range w.active {
		if a {
			w.max++
		}
	}
}

func createNamespace(t *testing.T, client kubernetes.Interface, name string) string {
	t.Helper()
	_, err := client.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return name
}

func newRS(name string, n int32) *appsv1.ReplicaSet {
	sel := map[string]string{"app": name}
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name, "tier": "web"}},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "c", Image: "registry.example/web:1"}},
					TerminationGracePeriodSeconds: ptr.To(int64(1)),
				},
			},
		},
	}
}

// eventually polls cond every 50 ms until it holds or timeout passes;
// cond's message says what it saw last.
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

// ownedPods lists the active pods in ns controlled by uid.
func ownedPods(t *testing.T, client kubernetes.Interface, ns string, uid types.UID) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid && podActive(&p) {
			out = append(out, p)
		}
	}
	return out
}

// waitRS waits until the ReplicaSet's status satisfies cond.
func waitRS(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration, cond func(*appsv1.ReplicaSet) bool) *appsv1.ReplicaSet {
	t.Helper()
	var rs *appsv1.ReplicaSet
	eventually(t, timeout, func() (bool, string) {
		var err error
		rs, err = client.AppsV1().ReplicaSets(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(rs), fmt.Sprintf("spec.replicas %d generation %d status %+v terminating %d", *rs.Spec.Replicas, rs.Generation, rs.Status, ptr.Deref(rs.Status.TerminatingReplicas, -1))
	})
	return rs
}

// settled: the status reports n replicas, all ready, for the current
// generation.
func settled(n int32) func(*appsv1.ReplicaSet) bool {
	return func(rs *appsv1.ReplicaSet) bool {
		return rs.Status.ObservedGeneration == rs.Generation && rs.Status.Replicas == n && rs.Status.ReadyReplicas == n
	}
}

func scaleRS(t *testing.T, client kubernetes.Interface, ns, name string, n int32) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":{"replicas":%d}}`, n)
	if _, err := client.AppsV1().ReplicaSets(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// served reports whether the API server serves resource in groupVersion.
func served(t *testing.T, client kubernetes.Interface, groupVersion, resource string) bool {
	t.Helper()
	list, err := client.Discovery().ServerResourcesForGroupVersion(groupVersion)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true
		}
	}
	return false
}

// podActive: the pod counts as a replica (not terminating, not finished).
func podActive(p *corev1.Pod) bool {
	return p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}
