package statefulset

import (
	"context"
	"fmt"
	"log/slog"
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
	clk := cx.ClockOrReal()
	c := &ssController{
		client:       cx.Client,
		sets:         setInf.Lister(),
		pods:         podInf.GetIndexer(),
		revisions:    revInf.GetIndexer(),
		claims:       claimInf.Lister(),
		expectations: controller.NewExpectations(clk),
		recorder:     cx.Recorder(Component),
		clock:        clk,
		log:          cx.Logger("statefulset"),
	}
	c.queue = controller.New("statefulset", Workers, controller.ReconcilerFunc(c.sync))
	c.queue.HasSynced = []cache.InformerSynced{setInf.Informer().HasSynced, podInf.HasSynced, revInf.HasSynced, claimInf.Informer().HasSynced}

	// A set deleted, or deleted and created again, starts clean.
	if _, err := setInf.Informer().AddEventHandler(c.queue.ForgettingHandler(c.expectations.DeleteExpectations)); err != nil {
		return nil, err
	}
	if _, err := podInf.AddEventHandler(c.podEvents().Handler()); err != nil {
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

// podEvents routes pod events to the set controlling them (see
// controller.Dependents, which keeps the expectations).
func (c *ssController) podEvents() *controller.Dependents[*appsv1.StatefulSet, *corev1.Pod] {
	return &controller.Dependents[*appsv1.StatefulSet, *corev1.Pod]{
		OwnerKind: setKind.Kind,
		GetOwner: func(namespace, name string) (*appsv1.StatefulSet, error) {
			return c.sets.StatefulSets(namespace).Get(name)
		},
		Adopters:     c.selecting,
		Enqueue:      c.queue.EnqueueKey,
		Expectations: c.expectations,
		Updated: func(key string, set *appsv1.StatefulSet, oldPod, curPod *corev1.Pod, _ bool) {
			c.queue.EnqueueKey(key)
			// Becoming available minReadySeconds after becoming ready
			// has no event of its own: look again then.
			if !isRunningAndReady(oldPod) && isRunningAndReady(curPod) && set.Spec.MinReadySeconds > 0 {
				c.queue.EnqueueAfter(key, time.Duration(set.Spec.MinReadySeconds)*time.Second+time.Second)
			}
		},
		DeleteOldOnRelabel: true,
	}
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

// deleteClaim wakes the set the claim's name says it belongs to
// ("<template>-<set>-<ordinal>"): a pod may be waiting for it to go.
func (c *ssController) deleteClaim(obj interface{}) {
	claim, ok := controller.ObjectOf[*corev1.PersistentVolumeClaim](obj)
	if !ok {
		return
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
