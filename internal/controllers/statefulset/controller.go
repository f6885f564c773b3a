package statefulset

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
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Workers is the number of sets synced at once, upstream's
// --concurrent-statefulset-syncs default.
const Workers = 5

// Component is the controller's name in the events it records.
const Component = "statefulset-controller"

// Descriptor is the StatefulSet controller ("statefulset" in
// --controllers).
var Descriptor = controller.Descriptor{
	Name: "statefulset",
	New: func(ctx context.Context, cx *controller.Context) ([]controller.Runnable, error) {
		c, err := newController(cx)
		if err != nil {
			return nil, err
		}
		return []controller.Runnable{c.queue}, nil
	},
}

// ssController keeps every StatefulSet's pods, claims and revisions as
// its spec says. Its only state beyond the informers' caches is the
// expectations, so a restarted controller starts from what the API shows.
type ssController struct {
	client       kubernetes.Interface
	sets         appslisters.StatefulSetLister
	pods         cache.Indexer // by controller.ControllerUIDIndex
	revisions    cache.Indexer // by controller.ControllerUIDIndex
	claims       corelisters.PersistentVolumeClaimLister
	expectations *controller.Expectations
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	log          *slog.Logger
	queue        *controller.Controller
}

func newController(cx *controller.Context) (*ssController, error) {
	setInf := cx.Informers.Apps().V1().StatefulSets()
	podInf := cx.Informers.Core().V1().Pods().Informer()
	revInf := cx.Informers.Apps().V1().ControllerRevisions().Informer()
	claimInf := cx.Informers.Core().V1().PersistentVolumeClaims()
	for _, inf := range []cache.SharedIndexInformer{podInf, revInf} {
		if err := controller.AddControllerUIDIndex(inf); err != nil {
			return nil, fmt.Errorf("statefulset: index: %w", err)
		}
	}
	clk := clock.PassiveClock(clock.RealClock{})
	if cx.Clock != nil {
		clk = cx.Clock
	}
	log := cx.Log
	if log == nil {
		log = slog.Default()
	}
	c := &ssController{
		client:       cx.Client,
		sets:         setInf.Lister(),
		pods:         podInf.GetIndexer(),
		revisions:    revInf.GetIndexer(),
		claims:       claimInf.Lister(),
		expectations: controller.NewExpectations(clk),
		recorder:     cx.Recorder(Component),
		clock:        clk,
		log:          log.With("controller", "statefulset"),
	}
	c.queue = controller.New("statefulset", Workers, controller.ReconcilerFunc(c.sync))
	c.queue.HasSynced = []cache.InformerSynced{setInf.Informer().HasSynced, podInf.HasSynced, revInf.HasSynced, claimInf.Informer().HasSynced}

	if _, err := setInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
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
	// A pod waits for a stale or terminating claim to go away: its
	// removal must wake the set.
	if _, err := claimInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		DeleteFunc: c.deleteClaim,
	}); err != nil {
		return nil, err
	}
	return c, nil
}

func (c *ssController) updateSet(old, cur interface{}) {
	o, ok1 := old.(*appsv1.StatefulSet)
	n, ok2 := cur.(*appsv1.StatefulSet)
	if ok1 && ok2 && o.UID != n.UID {
		// Deleted and created again between two events: the old one's
		// expectations must go.
		c.expectations.DeleteExpectations(keyOf(o))
	}
	c.queue.Enqueue(cur)
}

func (c *ssController) deleteSet(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	c.expectations.DeleteExpectations(key)
	c.queue.EnqueueKey(key)
}

// resolve returns the set ref names, if it is in the cache with ref's UID.
func (c *ssController) resolve(namespace string, ref *metav1.OwnerReference) (*appsv1.StatefulSet, string) {
	if ref.Kind != setKind.Kind || ref.APIVersion != setKind.GroupVersion().String() {
		return nil, ""
	}
	set, err := c.sets.StatefulSets(namespace).Get(ref.Name)
	if err != nil || set.UID != ref.UID {
		return nil, ""
	}
	return set, keyOf(set)
}

// selecting returns the sets whose selector matches pod and whose name
// pod's name carries: only they could adopt it.
func (c *ssController) selecting(pod *corev1.Pod) []*appsv1.StatefulSet {
	parent, ordinal := parentAndOrdinal(pod.Name)
	if ordinal < 0 {
		return nil
	}
	set, err := c.sets.StatefulSets(pod.Namespace).Get(parent)
	if err != nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
		return nil
	}
	return []*appsv1.StatefulSet{set}
}

func (c *ssController) addPod(obj interface{}) {
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
	for _, set := range c.selecting(pod) {
		c.queue.EnqueueKey(keyOf(set))
	}
}

func (c *ssController) updatePod(old, cur interface{}) {
	oldPod, ok1 := old.(*corev1.Pod)
	curPod, ok2 := cur.(*corev1.Pod)
	if !ok1 || !ok2 || oldPod.ResourceVersion == curPod.ResourceVersion {
		return
	}
	if curPod.DeletionTimestamp != nil {
		c.deletePod(curPod)
		if !reflect.DeepEqual(oldPod.Labels, curPod.Labels) {
			c.deletePod(oldPod)
		}
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
		set, key := c.resolve(curPod.Namespace, curRef)
		if key == "" {
			return
		}
		c.queue.EnqueueKey(key)
		// Becoming available minReadySeconds after becoming ready has
		// no event of its own: look again then.
		if !isRunningAndReady(oldPod) && isRunningAndReady(curPod) && set.Spec.MinReadySeconds > 0 {
			c.queue.EnqueueAfter(key, time.Duration(set.Spec.MinReadySeconds)*time.Second+time.Second)
		}
		return
	}
	if refChanged || !reflect.DeepEqual(oldPod.Labels, curPod.Labels) {
		for _, set := range c.selecting(curPod) {
			c.queue.EnqueueKey(keyOf(set))
		}
	}
}

func (c *ssController) deletePod(obj interface{}) {
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

// deleteClaim wakes the set the claim's name says it belongs to
// ("<template>-<set>-<ordinal>"): a pod may be waiting for it to go.
func (c *ssController) deleteClaim(obj interface{}) {
	claim, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		tomb, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			return
		}
		if claim, ok = tomb.Obj.(*corev1.PersistentVolumeClaim); !ok {
			return
		}
	}
	sets, err := c.sets.StatefulSets(claim.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, set := range sets {
		for _, t := range set.Spec.VolumeClaimTemplates {
			prefix := t.Name + "-" + set.Name + "-"
			if len(claim.Name) > len(prefix) && claim.Name[:len(prefix)] == prefix {
				c.queue.EnqueueKey(keyOf(set))
			}
		}
	}
}

func keyOf(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }
