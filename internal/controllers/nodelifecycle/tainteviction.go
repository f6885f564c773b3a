package nodelifecycle

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Reasons and messages of the eviction, as upstream.
const (
	reasonTaintEviction     = "TaintManagerEviction"
	reasonDeletionByTaint   = "DeletionByTaintManager"
	messageDeletionByTaint  = "Taint manager: deleting due to NoExecute taint"
	eventMarkingForDeletion = "Marking for deletion Pod %s"
	eventCancellingDeletion = "Cancelling deletion of Pod %s"
)

// taintEvictor deletes pods from nodes with NoExecute taints they do not
// tolerate (or no longer do). It is a work queue of pod keys: node taint
// changes enqueue the node's pods, pod changes enqueue the pod, and a pod
// whose tolerationSeconds are running comes back when they run out.
type taintEvictor struct {
	client   kubernetes.Interface
	pods     corelisters.PodLister
	podIndex cache.Indexer
	nodes    corelisters.NodeLister
	clock    clock.Clock
	log      *slog.Logger
	recorder record.EventRecorder
	ctrl     *controller.Controller

	mu sync.Mutex
	// seen is when this process first saw each NoExecute taint of each
	// node: the fine-grained start of a taint whose timeAdded is stored
	// to the second (see taintStart).
	seen map[string]map[taintID]time.Time
	// scheduled are the pods with an eviction pending, and when.
	scheduled map[string]time.Time
}

// taintID names a taint on a node: the API allows one per key and effect.
type taintID struct {
	key    string
	effect corev1.TaintEffect
}

func newTaintEvictor(cx *controller.Context, workers int) (*controller.Controller, error) {
	podInf := cx.Informers.Core().V1().Pods()
	nodeInf := cx.Informers.Core().V1().Nodes()
	if err := addPodNodeIndex(podInf.Informer()); err != nil {
		return nil, fmt.Errorf("pod index: %w", err)
	}
	e := &taintEvictor{
		client:    cx.Client,
		pods:      podInf.Lister(),
		podIndex:  podInf.Informer().GetIndexer(),
		nodes:     nodeInf.Lister(),
		clock:     cx.ClockOrReal(),
		log:       cx.Logger(TaintEvictionName),
		recorder:  cx.Recorder(TaintEvictionName),
		seen:      map[string]map[taintID]time.Time{},
		scheduled: map[string]time.Time{},
	}
	e.ctrl = controller.New(TaintEvictionName, workers, e)
	e.ctrl.HasSynced = []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced}

	if _, err := nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { e.nodeChanged(nil, obj) },
		UpdateFunc: e.nodeChanged,
		DeleteFunc: func(obj any) { e.nodeChanged(obj, nil) },
	}); err != nil {
		return nil, fmt.Errorf("node handler: %w", err)
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if p, ok := obj.(*corev1.Pod); ok && e.nodeHasNoExecute(p.Spec.NodeName) {
				e.ctrl.Enqueue(p)
			}
		},
		UpdateFunc: func(o, n any) {
			op, ok1 := o.(*corev1.Pod)
			np, ok2 := n.(*corev1.Pod)
			if ok1 && ok2 && op.Spec.NodeName == np.Spec.NodeName && reflect.DeepEqual(op.Spec.Tolerations, np.Spec.Tolerations) {
				return
			}
			e.ctrl.Enqueue(n)
		},
		// A deleted pod cancels its pending eviction.
		DeleteFunc: e.ctrl.Enqueue,
	}); err != nil {
		return nil, fmt.Errorf("pod handler: %w", err)
	}
	return e.ctrl, nil
}

// nodeChanged records when NoExecute taints were first seen and, when
// a node's NoExecute taints changed, enqueues its pods.
func (e *taintEvictor) nodeChanged(oldObj, newObj any) {
	oldNode, _ := controller.ObjectOf[*corev1.Node](oldObj)
	newNode, _ := newObj.(*corev1.Node)
	var name string
	var oldTaints, newTaints []corev1.Taint
	if oldNode != nil {
		name, oldTaints = oldNode.Name, noExecuteTaints(oldNode.Spec.Taints)
	}
	if newNode != nil {
		name, newTaints = newNode.Name, noExecuteTaints(newNode.Spec.Taints)
	}
	if name == "" {
		return
	}
	e.observeTaints(name, newTaints, e.clock.Now())
	if oldNode != nil && newNode != nil && reflect.DeepEqual(oldTaints, newTaints) {
		return
	}
	if oldNode == nil && len(newTaints) == 0 {
		return // a new node without NoExecute taints: nothing to evict
	}
	for _, p := range podsOnNode(e.podIndex, name) {
		e.ctrl.Enqueue(p)
	}
}

// observeTaints keeps seen to the node's current NoExecute taints, new
// ones stamped with now.
func (e *taintEvictor) observeTaints(node string, taints []corev1.Taint, now time.Time) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(taints) == 0 {
		delete(e.seen, node)
		return
	}
	old := e.seen[node]
	cur := make(map[taintID]time.Time, len(taints))
	for _, t := range taints {
		id := taintID{t.Key, t.Effect}
		if at, ok := old[id]; ok {
			cur[id] = at
		} else {
			cur[id] = now
		}
	}
	e.seen[node] = cur
}

func (e *taintEvictor) seenAt(node string, t *corev1.Taint) time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.seen[node][taintID{t.Key, t.Effect}]
}

func (e *taintEvictor) nodeHasNoExecute(name string) bool {
	if name == "" {
		return false
	}
	n, err := e.nodes.Get(name)
	return err == nil && len(noExecuteTaints(n.Spec.Taints)) > 0
}

// Reconcile decides one pod: evict it now, come back when its
// tolerationSeconds run out, or leave it (cancelling a pending eviction).
func (e *taintEvictor) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	pod, err := e.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		e.cancel(key, &corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name})
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if pod.DeletionTimestamp != nil {
		// Already on its way out; nothing to announce.
		e.forget(key)
		return controller.Result{}, nil
	}
	var taints []corev1.Taint
	if pod.Spec.NodeName != "" {
		if node, err := e.nodes.Get(pod.Spec.NodeName); err == nil {
			taints = noExecuteTaints(node.Spec.Taints)
		}
	}
	now := e.clock.Now()
	at, evict := evictionDeadline(taints, pod.Spec.Tolerations, func(t *corev1.Taint) time.Time {
		return taintStart(t, e.seenAt(pod.Spec.NodeName, t), now)
	})
	if !evict {
		e.cancel(key, pod)
		return controller.Result{}, nil
	}
	if at.After(now) {
		e.mu.Lock()
		e.scheduled[key] = at
		e.mu.Unlock()
		return controller.Result{RequeueAfter: at.Sub(now)}, nil
	}
	e.forget(key)
	e.log.Info("evicting pod from tainted node", "pod", key, "node", pod.Spec.NodeName)
	e.recorder.Eventf(pod, corev1.EventTypeNormal, reasonTaintEviction, eventMarkingForDeletion, key)
	if err := e.evict(ctx, pod, now); err != nil {
		return controller.Result{}, err
	}
	podDeletionsTotal.Inc()
	return controller.Result{}, nil
}

// evict marks pod with the DisruptionTarget condition, so its owner can
// tell why it went, then deletes it gracefully. A pod gone or replaced
// by a new one of the same name is not an error.
func (e *taintEvictor) evict(ctx context.Context, pod *corev1.Pod, now time.Time) error {
	if !hasPodCondition(pod, corev1.DisruptionTarget, corev1.ConditionTrue) {
		err := patchPodCondition(ctx, e.client, pod, corev1.PodCondition{
			Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: reasonDeletionByTaint, Message: messageDeletionByTaint,
			LastTransitionTime: metav1.NewTime(now),
		})
		if err != nil {
			return err
		}
	}
	err := e.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err)
}

// cancel drops a pending eviction, saying so on the pod.
func (e *taintEvictor) cancel(key string, obj runtime.Object) {
	e.mu.Lock()
	_, ok := e.scheduled[key]
	delete(e.scheduled, key)
	e.mu.Unlock()
	if ok {
		e.recorder.Eventf(obj, corev1.EventTypeNormal, reasonTaintEviction, eventCancellingDeletion, key)
	}
}

func (e *taintEvictor) forget(key string) {
	e.mu.Lock()
	delete(e.scheduled, key)
	e.mu.Unlock()
}

func hasPodCondition(pod *corev1.Pod, typ corev1.PodConditionType, status corev1.ConditionStatus) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c.Status == status
		}
	}
	return false
}
