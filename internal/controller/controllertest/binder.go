package controllertest

import (
	"cmp"
	"context"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Binder stands in for the scheduler in tests of workload controllers:
// it binds each pending pod (one without spec.nodeName) through the
// pods/binding subresource, as the scheduler does, and the simulated
// node it names then runs the pod. It is not a scheduler: it ignores
// resources, taints and every affinity but the one below, so placement
// is predictable.
//
// A pod whose required node affinity has a matchFields term
// "metadata.name In [node]" (as DaemonSet pods are made) goes to that
// node; any other goes to the next Ready node, in name order, round
// robin. A pod that arrives while no node is Ready waits until one is.
type Binder struct {
	ctx    context.Context // ends with the test
	client kubernetes.Interface
	pods   corelisters.PodLister
	nodes  corelisters.NodeLister

	mu     sync.Mutex
	paused bool
	next   int
	// tried are the pods a binding was sent for, so that a pod seen by
	// both the event handler and a sweep is bound once; a pod leaves it
	// when it leaves the pending set (bound or deleted).
	tried map[types.UID]bool
}

// StartBinder starts a Binder with client's credentials (which must
// allow pods/binding) and returns once it has seen every pending pod
// and node. It stops when the test ends.
func StartBinder(t testing.TB, client kubernetes.Interface) *Binder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &Binder{ctx: ctx, client: client, tried: map[types.UID]bool{}}
	all := informers.NewSharedInformerFactory(client, 0)
	pending := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName="
	}))
	podInf := pending.Core().V1().Pods()
	nodeInf := all.Core().V1().Nodes()
	b.pods, b.nodes = podInf.Lister(), nodeInf.Lister()
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if pod, ok := obj.(*corev1.Pod); ok {
				b.bind(pod)
			}
		},
		DeleteFunc: func(obj any) {
			if pod, ok := controller.ObjectOf[*corev1.Pod](obj); ok {
				b.mu.Lock()
				delete(b.tried, pod.UID)
				b.mu.Unlock()
			}
		},
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	// A node turning Ready may be what waiting pods need.
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { b.sweep() },
		UpdateFunc: func(_, _ any) { b.sweep() },
	}); err != nil {
		cancel()
		t.Fatal(err)
	}
	all.Start(ctx.Done())
	pending.Start(ctx.Done())
	all.WaitForCacheSync(ctx.Done())
	pending.WaitForCacheSync(ctx.Done())
	t.Cleanup(func() {
		cancel()
		all.Shutdown()
		pending.Shutdown()
	})
	return b
}

// Pause leaves new pods pending until Resume, for tests of what a
// controller does with pods that are not running yet.
func (b *Binder) Pause() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.paused = true
}

// Resume binds the pods that arrived while paused and every new one.
func (b *Binder) Resume() {
	b.mu.Lock()
	b.paused = false
	b.mu.Unlock()
	b.sweep()
}

// sweep tries every pending pod again: those that came while paused or
// while no node was Ready.
func (b *Binder) sweep() {
	pods, _ := b.pods.List(labels.Everything())
	// Oldest first, so round robin follows creation order as it does
	// for pods bound as they arrive.
	slices.SortFunc(pods, func(x, y *corev1.Pod) int {
		if c := x.CreationTimestamp.Compare(y.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(x.Namespace+"/"+x.Name, y.Namespace+"/"+y.Name)
	})
	for _, p := range pods {
		b.bind(p)
	}
}

func (b *Binder) bind(pod *corev1.Pod) {
	if pod.DeletionTimestamp != nil || pod.Spec.NodeName != "" {
		return
	}
	b.mu.Lock()
	if b.paused || b.tried[pod.UID] {
		b.mu.Unlock()
		return
	}
	node := RequiredNodeName(pod)
	if node == "" {
		node = b.nextReadyNode()
	}
	if node == "" {
		b.mu.Unlock()
		return
	}
	b.tried[pod.UID] = true
	b.mu.Unlock()
	err := b.client.CoreV1().Pods(pod.Namespace).Bind(b.ctx, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	}, metav1.CreateOptions{})
	if err != nil {
		// Most often the pod was deleted meanwhile; otherwise the next
		// sweep (a node update, Resume) tries again.
		b.mu.Lock()
		delete(b.tried, pod.UID)
		b.mu.Unlock()
	}
}

// nextReadyNode is the Ready node whose turn it is, or "" when none is
// Ready. b.mu is held.
func (b *Binder) nextReadyNode() string {
	nodes, _ := b.nodes.List(labels.Everything())
	var ready []string
	for _, n := range nodes {
		if nodeReady(n) {
			ready = append(ready, n.Name)
		}
	}
	if len(ready) == 0 {
		return ""
	}
	slices.Sort(ready)
	node := ready[b.next%len(ready)]
	b.next++
	return node
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// RequiredNodeName is the node a pod's required node affinity names
// with a matchFields term "metadata.name In [node]", as the DaemonSet
// controller pins its pods, or "" when it names none.
func RequiredNodeName(pod *corev1.Pod) string {
	a := pod.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == "metadata.name" && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
