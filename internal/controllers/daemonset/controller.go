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
	clk := clock.WithTicker(clock.RealClock{})
	if cx.Clock != nil {
		clk = cx.Clock
	}
	log := cx.Log
	if log == nil {
		log = slog.Default()
	}
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
		log:          log.With("controller", "daemonset"),
	}
	c.failed.Clock = clk
	c.queue = controller.New("daemonset", Workers, controller.ReconcilerFunc(c.sync))
	c.queue.HasSynced = []cache.InformerSynced{dsInf.Informer().HasSynced, nodeInf.Informer().HasSynced, podInf.HasSynced, revInf.HasSynced}

	if _, err := dsInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.queue.Enqueue,
		UpdateFunc: c.updateSet,
		DeleteFunc: c.deleteSet,
	}); err != nil {
		return nil, err
	}
	if _, err := podInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.addPod,
		UpdateFunc: c.updatePod,
		DeleteFunc: c.deletePod,
	}); err != nil {
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

func (c *dsController) updateSet(old, cur interface{}) {
	o, ok1 := old.(*appsv1.DaemonSet)
	n, ok2 := cur.(*appsv1.DaemonSet)
	if ok1 && ok2 && o.UID != n.UID {
		c.expectations.DeleteExpectations(keyOf(o))
	}
	c.queue.Enqueue(cur)
}

func (c *dsController) deleteSet(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.expectations.DeleteExpectations(key)
	c.queue.EnqueueKey(key)
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

// resolve returns the key of the set ref names, if it is in the cache
// with ref's UID.
func (c *dsController) resolve(namespace string, ref *metav1.OwnerReference) (*appsv1.DaemonSet, string) {
	if ref.Kind != dsKind.Kind || ref.APIVersion != dsKind.GroupVersion().String() {
		return nil, ""
	}
	ds, err := c.sets.DaemonSets(namespace).Get(ref.Name)
	if err != nil || ds.UID != ref.UID {
		return nil, ""
	}
	return ds, keyOf(ds)
}

func (c *dsController) addPod(obj interface{}) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if pod.DeletionTimestamp != nil {
		c.deletePod(pod)
		return
	}
	if ref := metav1.GetControllerOfNoCopy(pod); ref != nil {
		if _, key := c.resolve(pod.Namespace, ref); key != "" {
			c.expectations.CreationObserved(key)
			c.queue.EnqueueKey(key)
		}
		return
	}
	if sets, err := c.sets.GetPodDaemonSets(pod); err == nil {
		for _, ds := range sets {
			c.queue.EnqueueKey(keyOf(ds))
		}
	}
}

func (c *dsController) updatePod(old, cur interface{}) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	if curPod.DeletionTimestamp != nil {
		c.deletePod(curPod)
		return
	}
	curRef := metav1.GetControllerOfNoCopy(curPod)
	oldRef := metav1.GetControllerOfNoCopy(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if _, key := c.resolve(oldPod.Namespace, oldRef); key != "" {
			c.queue.EnqueueKey(key)
		}
	}
	if curRef != nil {
		ds, key := c.resolve(curPod.Namespace, curRef)
		if key == "" {
			return
		}
		c.queue.EnqueueKey(key)
		if !isReady(oldPod) && isReady(curPod) && ds.Spec.MinReadySeconds > 0 {
			c.queue.EnqueueAfter(key, time.Duration(ds.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(oldPod.Labels, curPod.Labels) {
		if sets, err := c.sets.GetPodDaemonSets(curPod); err == nil {
			for _, ds := range sets {
				c.queue.EnqueueKey(keyOf(ds))
			}
		}
	}
}

func (c *dsController) deletePod(obj interface{}) {
	pod, ok := controller.ObjectOf[*corev1.Pod](obj)
	if !ok {
		return
	}
	ref := metav1.GetControllerOfNoCopy(pod)
	if ref == nil {
		return
	}
	if _, key := c.resolve(pod.Namespace, ref); key != "" {
		c.expectations.DeletionObserved(key, podKey(pod))
		c.queue.EnqueueKey(key)
	}
}

func keyOf(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
