package daemonset

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Workers is the number of DaemonSets synced at once, upstream's
// --concurrent-daemonset-syncs default.
const Workers = 2

// BurstReplicas caps the pods one sync creates or deletes.
const BurstReplicas = 250

// Component is the controller's name in the events it records.
const Component = "daemonset-controller"

// Failed pods on a node are deleted at most this often, doubling from
// the first delay, so a kubelet that keeps rejecting the pod is not
// fought in a hot loop.
const (
	failedBackoffInitial = time.Second
	failedBackoffMax     = 15 * time.Minute
)

// Descriptor is the DaemonSet controller ("daemonset" in --controllers).
var Descriptor = controller.Descriptor{
	Name: "daemonset",
	New: func(ctx context.Context, cx *controller.Context) ([]controller.Runnable, error) {
		c, err := newController(cx)
		if err != nil {
			return nil, err
		}
		return []controller.Runnable{c.queue}, nil
	},
}

// dsController keeps one pod of every DaemonSet on each node that should
// run it.
type dsController struct {
	client       kubernetes.Interface
	sets         appslisters.DaemonSetLister
	nodes        corelisters.NodeLister
	pods         cache.Indexer // by controller.ControllerUIDIndex
	revisions    cache.Indexer // by controller.ControllerUIDIndex
	expectations *controller.Expectations
	failed       *flowcontrol.Backoff // per "namespace/ds/node"
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	log          *slog.Logger
	queue        *controller.Controller
}

func newController(cx *controller.Context) (*dsController, error) {
	dsInf := cx.Informers.Apps().V1().DaemonSets()
	nodeInf := cx.Informers.Core().V1().Nodes()
	podInf := cx.Informers.Core().V1().Pods().Informer()
	revInf := cx.Informers.Apps().V1().ControllerRevisions().Informer()
	for _, inf := range []cache.SharedIndexInformer{podInf, revInf} {
		if err := controller.AddControllerUIDIndex(inf); err != nil {
			return nil, fmt.Errorf("daemonset: index: %w", err)
		}
	}
	clk := cx.ClockOrReal()
	c := &dsController{
		client:       cx.Client,
		sets:         dsInf.Lister(),
		nodes:        nodeInf.Lister(),
		pods:         podInf.GetIndexer(),
		revisions:    revInf.GetIndexer(),
		expectations: controller.NewExpectations(clk),
		failed:       flowcontrol.NewBackOffWithJitter(failedBackoffInitial, failedBackoffMax, 0),
		recorder:     cx.Recorder(Component),
		clock:        clk,
		log:          cx.Logger("daemonset"),
	}
	c.failed.Clock = clk
	c.queue = controller.New("daemonset", Workers, controller.ReconcilerFunc(c.sync))
	c.queue.HasSynced = []cache.InformerSynced{dsInf.Informer().HasSynced, nodeInf.Informer().HasSynced, podInf.HasSynced, revInf.HasSynced}

	// A set deleted, or deleted and created again, starts clean.
	if _, err := dsInf.Informer().AddEventHandler(c.queue.ForgettingHandler(c.expectations.DeleteExpectations)); err != nil {
		return nil, err
	}
	if _, err := podInf.AddEventHandler(c.podEvents().Handler()); err != nil {
		return nil, err
	}
	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addNode,
		UpdateFunc: c.updateNode,
		DeleteFunc: func(interface{}) { c.enqueueAll() },
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *dsController) enqueueAll() {
	sets, err := c.sets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range sets {
		c.queue.EnqueueKey(keyOf(ds))
	}
}

// A new node gets the pods of the sets that should run there.
func (c *dsController) addNode(obj interface{}) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return
	}
	sets, err := c.sets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range sets {
		if run, _ := shouldRun(node, ds); run {
			c.queue.EnqueueKey(keyOf(ds))
		}
	}
}

// A changed node matters to the sets whose answer for it changed; most
// node updates are status heartbeats and change nothing.
func (c *dsController) updateNode(old, cur interface{}) {
	o, ok1 := old.(*corev1.Node)
	n, ok2 := cur.(*corev1.Node)
	if !ok1 || !ok2 {
		return
	}
	if reflect.DeepEqual(o.Labels, n.Labels) && reflect.DeepEqual(o.Spec.Taints, n.Spec.Taints) {
		return
	}
	sets, err := c.sets.List(labels.Everything())
	if err != nil {
		return
	}
	for _, ds := range sets {
		oldRun, oldCont := shouldRun(o, ds)
		newRun, newCont := shouldRun(n, ds)
		if oldRun != newRun || oldCont != newCont {
			c.queue.EnqueueKey(keyOf(ds))
		}
	}
}

// podEvents routes pod events to the DaemonSet controlling them (see
// controller.Dependents, which keeps the expectations).
func (c *dsController) podEvents() *controller.Dependents[*appsv1.DaemonSet, *corev1.Pod] {
	return &controller.Dependents[*appsv1.DaemonSet, *corev1.Pod]{
		OwnerKind: dsKind.Kind,
		GetOwner: func(namespace, name string) (*appsv1.DaemonSet, error) {
			return c.sets.DaemonSets(namespace).Get(name)
		},
		Adopters: func(pod *corev1.Pod) []*appsv1.DaemonSet {
			sets, err := c.sets.GetPodDaemonSets(pod)
			if err != nil {
				return nil // none selects pod
			}
			return sets
		},
		Enqueue:      c.queue.EnqueueKey,
		Expectations: c.expectations,
		Updated: func(key string, ds *appsv1.DaemonSet, oldPod, curPod *corev1.Pod, _ bool) {
			c.queue.EnqueueKey(key)
			if !isReady(oldPod) && isReady(curPod) && ds.Spec.MinReadySeconds > 0 {
				c.queue.EnqueueAfter(key, time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
			}
		},
	}
}

func keyOf(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
