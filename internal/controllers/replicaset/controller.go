package replicaset

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// BurstReplicas caps the pods one sync creates or deletes, as upstream's
// controller does; a larger change takes several syncs, each waiting to
// see the previous one's pods.
const BurstReplicas = 500

// Workers is the number of ReplicaSets (or RCs) synced at once, upstream's
// --concurrent-replicaset-syncs default.
const Workers = 5

const controllerUIDIndex = controller.ControllerUIDIndex

// StatusBatchPeriod is how long a pod event that can only change a
// ReplicaSet's status (a pod bound, Running, ready; a creation seen while
// others are still awaited) waits before it syncs the ReplicaSet, so the
// events of many pods share one sync and one status write. Thousands of
// pods changing at once would otherwise each recount every pod and write
// the status (and wake the Deployment above) once per pod. Events that
// can call for creating or deleting pods (a pod gone, terminating,
// terminal, relabelled, or the last awaited creation seen) sync at once.
const StatusBatchPeriod = 200 * time.Millisecond

// Descriptor is the ReplicaSet controller ("replicaset" in --controllers).
var Descriptor = controller.Descriptor{
	Name: "replicaset",
	New: func(ctx context.Context, cx *controller.Context) ([]controller.Runnable, error) {
		inf := cx.Informers.Apps().V1().ReplicaSets()
		k := &rsKind{client: cx.Client, inf: inf.Informer(), lister: inf.Lister()}
		c, err := newController(cx, k, "replicaset", "replicaset-controller", BurstReplicas)
		if err != nil {
			return nil, err
		}
		return []controller.Runnable{c.queue}, nil
	},
}

// RCDescriptor is the ReplicationController controller
// ("replicationcontroller" in --controllers): the same controller over
// the older API type.
var RCDescriptor = controller.Descriptor{
	Name: "replicationcontroller",
	New: func(ctx context.Context, cx *controller.Context) ([]controller.Runnable, error) {
		inf := cx.Informers.Core().V1().ReplicationControllers()
		k := &rcKind{client: cx.Client, inf: inf.Informer(), lister: inf.Lister()}
		c, err := newController(cx, k, "replicationmanager", "replication-controller", BurstReplicas)
		if err != nil {
			return nil, err
		}
		return []controller.Runnable{c.queue}, nil
	},
}

// rsController keeps the pods of each ReplicaSet (or RC) at its
// spec.replicas. Its state beyond the informers' caches is only the
// expectations, so a restarted controller starts from what the API shows.
type rsController struct {
	name         string // event source, e.g. "replicaset-controller"
	kind         workloadKind
	client       kubernetes.Interface
	pods         cache.Indexer // by controllerUIDIndex
	podRouter    *controller.Dependents[*appsv1.ReplicaSet, *corev1.Pod]
	expectations *controller.Expectations
	recorder     record.EventRecorder
	clock        clock.PassiveClock
	log          *slog.Logger
	burst        int
	queue        *controller.Controller
	// batch spaces out the syncs asked for by status-only events.
	batch *statusBatcher
	// warm remembers, per key, the slow-start batch size that last
	// succeeded in full (see slowStart).
	warm *slowStartMemory
	// memos remember each pod's label answers between syncs.
	memos *labelMemos
	// written is the last status write of each key, newer than the
	// cache until the write's own event arrives.
	written *writtenStatus
}

func newController(cx *controller.Context, k workloadKind, queueName, component string, burst int) (*rsController, error) {
	podInf := cx.Informers.Core().V1().Pods().Informer()
	if err := controller.AddControllerUIDIndex(podInf); err != nil {
		return nil, fmt.Errorf("pod index: %w", err)
	}
	if err := controller.AddControllerUIDIndex(k.informer()); err != nil {
		return nil, fmt.Errorf("%s index: %w", k.gvk().Kind, err)
	}
	clk := cx.ClockOrReal()
	c := &rsController{
		name:         component,
		kind:         k,
		client:       cx.Client,
		pods:         podInf.GetIndexer(),
		expectations: controller.NewExpectations(clk),
		recorder:     cx.Recorder(component),
		clock:        clk,
		log:          cx.Logger(queueName),
		burst:        burst,
		warm:         newSlowStartMemory(),
		memos:        newLabelMemos(),
		written:      newWrittenStatus(),
	}
	c.queue = controller.New(queueName, Workers, controller.ReconcilerFunc(c.batchedSync))
	c.batch = newStatusBatcher(StatusBatchPeriod, clk.Now, c.queue.EnqueueAfter)
	c.queue.HasSynced = []cache.InformerSynced{podInf.HasSynced, k.informer().HasSynced}

	if _, err := k.informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    c.queue.Enqueue,
		UpdateFunc: c.updateOwner,
		DeleteFunc: c.deleteOwner,
	}); err != nil {
		return nil, err
	}
	c.podRouter = c.podEvents()
	if _, err := podInf.AddEventHandler(c.podRouter.Handler()); err != nil {
		return nil, err
	}
	return c, nil
}

// Every update is synced, not only spec changes: a sync that failed to
// create pods is retried by the next resync even if nothing changed. A
// write of the status alone (most often this controller's own) is
// synced after the batch period, so status writes do not chain into
// back-to-back recounts of every pod.
func (c *rsController) updateOwner(old, cur interface{}) {
	o, err1 := metaOf(old)
	n, err2 := metaOf(cur)
	if err1 != nil || err2 != nil {
		c.queue.Enqueue(cur)
		return
	}
	if o.GetUID() != n.GetUID() {
		// Deleted and created again between two events: the old one's
		// expectations must go.
		c.deleteOwner(cache.DeletedFinalStateUnknown{Key: keyOf(o), Obj: old})
	}
	if statusOnlyUpdate(o, n) {
		c.enqueueStatus(keyOf(n))
		return
	}
	c.queue.Enqueue(cur)
}

// statusOnlyUpdate: cur differs from old (not a resync) in nothing a
// sync acts on — same object, generation (the spec), labels, owners and
// deletion state.
func statusOnlyUpdate(old, cur metav1.Object) bool {
	return old.GetResourceVersion() != cur.GetResourceVersion() &&
		old.GetUID() == cur.GetUID() &&
		old.GetGeneration() == cur.GetGeneration() &&
		old.GetDeletionTimestamp().Equal(cur.GetDeletionTimestamp()) &&
		reflect.DeepEqual(old.GetLabels(), cur.GetLabels()) &&
		reflect.DeepEqual(old.GetOwnerReferences(), cur.GetOwnerReferences())
}

func (c *rsController) deleteOwner(obj interface{}) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	// A ReplicaSet created again with the same name starts clean.
	c.expectations.DeleteExpectations(key)
	c.warm.forget(key)
	c.batch.forget(key)
	c.memos.forget(key)
	c.written.forget(key)
	c.queue.EnqueueKey(key)
}

// podEvents routes pod events to the ReplicaSet controlling them (see
// controller.Dependents), which keeps the expectations; the hooks choose
// between an immediate and a batched, status-only sync.
func (c *rsController) podEvents() *controller.Dependents[*appsv1.ReplicaSet, *corev1.Pod] {
	return &controller.Dependents[*appsv1.ReplicaSet, *corev1.Pod]{
		OwnerKind: c.kind.gvk().Kind,
		GetOwner: func(namespace, name string) (*appsv1.ReplicaSet, error) {
			rs, _, err := c.kind.get(namespace, name)
			return rs, err
		},
		Adopters:     c.kind.selecting,
		Enqueue:      c.queue.EnqueueKey,
		Expectations: c.expectations,
		Created: func(key string, _ *appsv1.ReplicaSet, _ *corev1.Pod) {
			// Only the last awaited creation lets the next sync act;
			// the others change the counts alone.
			if c.expectations.SatisfiedExpectations(key) {
				c.queue.EnqueueKey(key)
			} else {
				c.enqueueStatus(key)
			}
		},
		Updated: func(key string, rs *appsv1.ReplicaSet, oldPod, curPod *corev1.Pod, moved bool) {
			if moved || isActive(oldPod) != isActive(curPod) {
				c.queue.EnqueueKey(key) // adopted, relabelled or terminal: may act
			} else {
				c.enqueueStatus(key) // bound, started, ready: counts only
			}
			// A pod that just became ready becomes available
			// minReadySeconds later, with no event to say so: look
			// again then (plus a second for the API's whole-second
			// timestamps).
			if !isReady(oldPod) && isReady(curPod) && rs.Spec.MinReadySeconds > 0 {
				c.queue.EnqueueAfter(key, time.Duration(rs.Spec.MinReadySeconds)*time.Second+time.Second)
			}
		},
		// A graceful deletion that also changed labels wakes the old
		// owner too.
		DeleteOldOnRelabel: true,
	}
}

// enqueueStatus syncs key for its counts: see StatusBatchPeriod.
func (c *rsController) enqueueStatus(key string) { c.batch.enqueue(key) }

// batchedSync is sync, marked for the status batcher.
func (c *rsController) batchedSync(ctx context.Context, key string) (controller.Result, error) {
	c.batch.begin(key)
	defer c.batch.end(key)
	return c.sync(ctx, key)
}

// sync brings one ReplicaSet's pods to spec.replicas and writes its
// status. It acts on replicas only when everything the previous sync
// asked for has been seen, so it never creates what it is still waiting
// to see; it always recounts the status.
func (c *rsController) sync(ctx context.Context, key string) (controller.Result, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	rs, orig, err := c.kind.get(namespace, name)
	if apierrors.IsNotFound(err) {
		c.expectations.DeleteExpectations(key)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	rs, orig = c.written.newest(key, rs, orig)
	needsSync := c.expectations.SatisfiedExpectations(key)
	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		// Validation forbids this; retrying cannot help.
		c.log.Error("invalid selector", "key", key, "err", err)
		return controller.Result{}, nil
	}

	// Candidates: the pods rs controls plus the orphans it might adopt,
	// from the index rather than the whole namespace.
	var candidates []*corev1.Pod
	for _, ik := range []string{string(rs.UID), controller.OrphanIndexKey(namespace)} {
		objs, err := c.pods.ByIndex(controllerUIDIndex, ik)
		if err != nil {
			return controller.Result{}, err
		}
		for _, o := range objs {
			if p, ok := o.(*corev1.Pod); ok && p.Namespace == namespace {
				candidates = append(candidates, p)
			}
		}
	}
	var active, terminating []*corev1.Pod
	for _, p := range candidates {
		switch {
		case isActive(p):
			active = append(active, p)
		case isTerminating(p) && metav1.IsControlledBy(p, rs) && selector.Matches(labelsOf(p)):
			terminating = append(terminating, p)
		}
	}
	memo := c.memos.get(key, rs, selector)
	active, err = c.claimPods(ctx, rs, memo.selected, active)
	if err != nil {
		return controller.Result{}, err
	}

	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = c.manageReplicas(ctx, key, rs, orig, active)
	}
	st, requeue := calculateStatusBy(rs, active, terminating, manageErr, c.clock.Now(), c.kind.hasTerminatingReplicas(), memo.fullyLabeled)
	memo.sweep(candidates)
	if err := c.writeStatus(ctx, rs, orig, st); err != nil {
		return controller.Result{}, err
	}
	// Ready pods become available with no event when minReadySeconds
	// pass: sync again then.
	return controller.Result{RequeueAfter: requeue}, manageErr
}

// writeStatus writes st unless nothing changed, retrying once on a fresh
// copy (a conflict with a spec update, most often). observedGeneration is
// the generation this sync acted on, even if the retry reads a newer one.
func (c *rsController) writeStatus(ctx context.Context, rs *appsv1.ReplicaSet, orig runtime.Object, st appsv1.ReplicaSetStatus) error {
	if statusCurrent(rs, st) {
		return nil
	}
	st.ObservedGeneration = rs.Generation
	out, outOrig, err := c.kind.writeStatus(ctx, orig, st)
	if err == nil {
		c.written.remember(keyOf(rs), rs.ResourceVersion, out, outOrig)
		return nil
	}
	c.written.forget(keyOf(rs))
	if apierrors.IsNotFound(err) {
		return nil
	}
	freshRS, fresh, gerr := c.kind.getFresh(ctx, rs.Namespace, rs.Name)
	if gerr != nil {
		if apierrors.IsNotFound(gerr) {
			return nil
		}
		return gerr
	}
	if freshRS.UID != rs.UID {
		return nil // deleted and created again: its own sync follows
	}
	_, _, err = c.kind.writeStatus(ctx, fresh, st)
	return err
}

func metaOf(obj interface{}) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("%T is not an object", obj)
	}
	return m, nil
}

func labelsOf(p *corev1.Pod) labels.Set { return labels.Set(p.Labels) }

func keyOf(m metav1.Object) string { return m.GetNamespace() + "/" + m.GetName() }
