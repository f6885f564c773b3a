package disruption

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Descriptor is the disruption controller ("disruption" in --controllers).
var Descriptor = controller.Descriptor{Name: "disruption", New: newController}

// eventSource is the component upstream's disruption controller writes
// its events as.
const eventSource = "controllermanager"

type disruptionController struct {
	client   kubernetes.Interface
	pdbs     policylisters.PodDisruptionBudgetLister
	pods     corelisters.PodLister
	scales   *scales
	recorder record.EventRecorder
	clock    clock.PassiveClock
	log      *slog.Logger

	budgets *controller.Controller // keys: budgets
	stale   *controller.Controller // keys: pods with a stale DisruptionTarget
}

func newController(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
	pdbInf := cx.Informers.Policy().V1().PodDisruptionBudgets()
	podInf := cx.Informers.Core().V1().Pods()
	rsInf := cx.Informers.Apps().V1().ReplicaSets()
	depInf := cx.Informers.Apps().V1().Deployments()
	ssInf := cx.Informers.Apps().V1().StatefulSets()
	rcInf := cx.Informers.Core().V1().ReplicationControllers()

	dc := &disruptionController{
		client: cx.Client,
		pdbs:   pdbInf.Lister(),
		pods:   podInf.Lister(),
		scales: &scales{
			replicaSets:  rsInf.Lister(),
			deployments:  depInf.Lister(),
			statefulSets: ssInf.Lister(),
			rcs:          rcInf.Lister(),
			dynamic:      cx.Dynamic,
			discovery:    cx.Client.Discovery(),
			mapper:       restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cx.Client.Discovery())),
		},
		recorder: cx.Recorder(eventSource),
		clock:    cx.ClockOrReal(),
		log:      cx.Logger("disruption"),
	}
	dc.budgets = controller.New("disruption", 1, controller.ReconcilerFunc(dc.syncBudget))
	dc.stale = controller.New("stale_pod_disruption", 1, controller.ReconcilerFunc(dc.syncStalePod))

	if _, err := pdbInf.Informer().AddEventHandler(dc.budgets.Handler()); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj interface{}) { dc.podChanged(nil, obj.(*corev1.Pod)) },
		UpdateFunc: func(old, cur interface{}) {
			dc.podChanged(old.(*corev1.Pod), cur.(*corev1.Pod))
		},
		DeleteFunc: func(obj interface{}) {
			if pod, ok := controller.ObjectOf[*corev1.Pod](obj); ok {
				dc.enqueueBudgetsOf(pod, false)
			}
		},
	}); err != nil {
		return nil, err
	}
	// Upstream reads the workloads only when a pod changes. A workload
	// scaled with no pod change yet (or scaled to match what already
	// runs) would leave expectedPods stale, so a change of replicas
	// requeues the namespace's budgets that depend on scales.
	for _, inf := range []cache.SharedIndexInformer{rsInf.Informer(), depInf.Informer(), ssInf.Informer(), rcInf.Informer()} {
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: dc.workloadChanged,
			UpdateFunc: func(old, cur interface{}) {
				if workloadReplicas(old) != workloadReplicas(cur) {
					dc.workloadChanged(cur)
				}
			},
			DeleteFunc: dc.workloadChanged,
		}); err != nil {
			return nil, err
		}
	}
	synced := []cache.InformerSynced{
		pdbInf.Informer().HasSynced, podInf.Informer().HasSynced, rsInf.Informer().HasSynced,
		depInf.Informer().HasSynced, ssInf.Informer().HasSynced, rcInf.Informer().HasSynced,
	}
	dc.budgets.HasSynced = synced
	dc.stale.HasSynced = []cache.InformerSynced{podInf.Informer().HasSynced}
	return []controller.Runnable{dc.budgets, dc.stale}, nil
}

// podChanged queues the budgets of a new or changed pod (those its old
// labels matched too, in case it left one), and the pod itself when it
// carries a DisruptionTarget condition that will go stale.
func (dc *disruptionController) podChanged(old, pod *corev1.Pod) {
	labelsChanged := old == nil || !labels.Equals(old.Labels, pod.Labels)
	dc.enqueueBudgetsOf(pod, labelsChanged)
	if old != nil && labelsChanged {
		dc.enqueueBudgetsOf(old, false)
	}
	if has, wait := staleDisruption(pod, dc.clock.Now()); has {
		key, err := cache.MetaNamespaceKeyFunc(pod)
		if err == nil {
			dc.stale.EnqueueAfter(key, wait)
		}
	}
}

// enqueueBudgetsOf queues every budget whose selector matches pod.
// Upstream queues only the first; queueing all keeps each one's status
// right. A pod under several budgets cannot be evicted (the eviction
// subresource refuses it), so warn gets it an event saying so.
func (dc *disruptionController) enqueueBudgetsOf(pod *corev1.Pod, warn bool) {
	pdbs, err := dc.pdbs.GetPodPodDisruptionBudgets(pod)
	if err != nil {
		return // none matches
	}
	names := make([]string, 0, len(pdbs))
	for _, pdb := range pdbs {
		dc.budgets.Enqueue(pdb)
		names = append(names, pdb.Name)
	}
	if warn && len(pdbs) > 1 {
		slices.Sort(names)
		dc.recorder.Eventf(pod, corev1.EventTypeWarning, "MultiplePodDisruptionBudgets",
			"Pod %q/%q matches multiple PodDisruptionBudgets: %s.", pod.Namespace, pod.Name, strings.Join(names, ", "))
	}
}

// workloadChanged queues the budgets of the workload's namespace whose
// numbers depend on controller scales.
func (dc *disruptionController) workloadChanged(obj interface{}) {
	m, ok := controller.ObjectOf[metav1.Object](obj)
	if !ok {
		return
	}
	pdbs, err := dc.pdbs.PodDisruptionBudgets(m.GetNamespace()).List(labels.Everything())
	if err != nil {
		return
	}
	for _, pdb := range pdbs {
		if usesScale(&pdb.Spec) {
			dc.budgets.Enqueue(pdb)
		}
	}
}

func usesScale(spec *policyv1.PodDisruptionBudgetSpec) bool {
	return spec.MaxUnavailable != nil || (spec.MinAvailable != nil && spec.MinAvailable.Type == intstr.String)
}

func workloadReplicas(obj interface{}) int32 {
	switch w := obj.(type) {
	case *appsv1.ReplicaSet:
		return replicas(w.Spec.Replicas)
	case *appsv1.Deployment:
		return replicas(w.Spec.Replicas)
	case *appsv1.StatefulSet:
		return replicas(w.Spec.Replicas)
	case *corev1.ReplicationController:
		return replicas(w.Spec.Replicas)
	}
	return -1
}

// syncBudget brings one budget's status up to date.
func (dc *disruptionController) syncBudget(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	pdb, err := dc.pdbs.PodDisruptionBudgets(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	res, err := dc.computeAndWrite(ctx, pdb)
	if err == nil || apierrors.IsConflict(err) {
		// A conflict means our copy is stale; the retry reads the new one.
		return res, err
	}
	dc.log.Error("sync failed", "pdb", key, "err", err)
	// Whatever went wrong, the budget must not go on allowing
	// evictions it can no longer vouch for.
	if st, changed := failSafeStatus(pdb, err); changed {
		if werr := dc.writeStatus(ctx, pdb, st); werr != nil {
			return controller.Result{}, fmt.Errorf("%w (and fail-safe status: %v)", err, werr)
		}
	}
	// Unlike upstream, which waits for the next event after a fail-safe
	// write, the budget is retried with back-off: most failures (an API
	// error reading a scale, a controller not yet in the cache) pass.
	return controller.Result{}, err
}

// computeAndWrite computes the budget's status from the caches and
// writes it if it changed. It returns when to look again for disruptions
// that will expire.
func (dc *disruptionController) computeAndWrite(ctx context.Context, pdb *policyv1.PodDisruptionBudget) (controller.Result, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		dc.recorder.Eventf(pdb, corev1.EventTypeWarning, "NoPods", "Failed to get pods: %v", err)
		return controller.Result{}, err
	}
	pods, err := dc.pods.Pods(pdb.Namespace).List(sel)
	if err != nil {
		dc.recorder.Eventf(pdb, corev1.EventTypeWarning, "NoPods", "Failed to get pods: %v", err)
		return controller.Result{}, err
	}
	if len(pods) == 0 {
		dc.recorder.Event(pdb, corev1.EventTypeNormal, "NoPods", "No matching pods found")
	}
	expected, desired, unmanaged, err := budgetCounts(&pdb.Spec, pods, dc.scales.finder(ctx))
	if err != nil {
		dc.recorder.Eventf(pdb, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Failed to calculate the number of expected pods: %v", err)
		return controller.Result{}, err
	}
	if len(unmanaged) > 0 {
		dc.recorder.Eventf(pdb, corev1.EventTypeWarning, "UnmanagedPods",
			"Pods selected by this PodDisruptionBudget (selector: %v) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.",
			pdb.Spec.Selector)
	}
	now := dc.clock.Now()
	disrupted, recheck, overdue := activeDisruptions(pdb, pods, now)
	for _, pod := range overdue {
		dc.recorder.Eventf(pod, corev1.EventTypeWarning, "NotDeleted", "Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)
	}
	st := desiredStatus(pdb, countHealthy(pods, disrupted, now), desired, expected, disrupted)
	if !statusCurrent(pdb, &st) {
		if err := dc.writeStatus(ctx, pdb, st); err != nil {
			return controller.Result{}, err
		}
	}
	if recheck.IsZero() {
		return controller.Result{}, nil
	}
	return controller.Result{RequeueAfter: recheck.Sub(now)}, nil
}

func (dc *disruptionController) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, st policyv1.PodDisruptionBudgetStatus) error {
	next := pdb.DeepCopy()
	next.Status = st
	_, err := dc.client.PolicyV1().PodDisruptionBudgets(pdb.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil // deleted meanwhile
	}
	return err
}

// syncStalePod resets a pod's DisruptionTarget condition to False once it
// has stood StalePodDisruptionTimeout without the pod being deleted.
func (dc *disruptionController) syncStalePod(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	pod, err := dc.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	now := dc.clock.Now()
	has, wait := staleDisruption(pod, now)
	if !has {
		return controller.Result{}, nil
	}
	if wait > 0 {
		return controller.Result{RequeueAfter: wait}, nil
	}
	next := pod.DeepCopy()
	for i := range next.Status.Conditions {
		if next.Status.Conditions[i].Type == corev1.DisruptionTarget {
			// The whole condition is replaced, as upstream does: the
			// reason and message of the abandoned disruption go with it.
			next.Status.Conditions[i] = corev1.PodCondition{
				Type:               corev1.DisruptionTarget,
				Status:             corev1.ConditionFalse,
				LastTransitionTime: metav1.NewTime(now),
			}
		}
	}
	_, err = dc.client.CoreV1().Pods(ns).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	dc.log.Info("reset stale DisruptionTarget condition to False", "pod", key)
	return controller.Result{}, nil
}
