// Package pvcprotection is the PVC protection controller: it keeps a
// PersistentVolumeClaim that a pod uses from being removed while the pod
// may still have it mounted, as kube-controller-manager's
// "pvc-protection" controller (persistentvolumeclaim-protection-controller)
// does.
//
// The protection is a finalizer, kubernetes.io/pvc-protection. The
// StorageObjectInUseProtection admission plugin puts it on every new
// claim; this controller adds it to claims that lack it (made before the
// plugin was on) and, once a claim is being deleted, removes it as soon
// as no pod uses the claim, which lets the API server finish the
// deletion. Until then `kubectl get pvc` shows the claim Terminating.
//
// Which pods use a claim is plan's and podUsesClaim's business (use.go):
// pods bound to a node whose volumes name the claim, or whose generic
// ephemeral volume made it. A pod that has finished still holds its
// claim until the pod object is deleted, as upstream.
//
// # Acting on stale caches
//
// The informers may lag: a pod created a moment ago may not be in the
// cache yet. Keeping a claim on a stale "in use" costs nothing (the pod's
// deletion brings the claim back), but removing the finalizer on a stale
// "unused" would delete storage under a running pod. So when the cache
// says a claim is unused, the reconciler lists the namespace's pods from
// the API server and asks again before it removes the finalizer.
//
// The controller is level-based: it reconciles claims, not events. Claim
// events enqueue claims that need something; pod events enqueue the
// claims the pod names that are being deleted. A controller started
// after claims were deleted (or restarted half way) finds them in its
// first list and finishes the work.
//
// Usage, through the controller manager:
//
//	runnables, err := pvcprotection.Descriptor.New(ctx, cx)
package pvcprotection

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Name is upstream's --controllers name for this controller.
const Name = "pvc-protection"

// Workers is how many claims are reconciled at once; upstream runs one.
const Workers = 1

// Descriptor registers the controller under upstream's name.
var Descriptor = controller.Descriptor{Name: Name, New: newController}

// claimIndex indexes pods by the "namespace/name" keys of the claims
// their volumes name (claimKeys), so finding a claim's users in the cache
// does not scan the namespace.
const claimIndex = "pvcprotection.claim"

type reconciler struct {
	client kubernetes.Interface
	claims corelisters.PersistentVolumeClaimLister
	pods   cache.Indexer
	log    *slog.Logger
}

func newController(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
	claimInf := cx.Informers.Core().V1().PersistentVolumeClaims()
	podInf := cx.Informers.Core().V1().Pods()
	if err := addClaimIndex(podInf.Informer()); err != nil {
		return nil, fmt.Errorf("%s: %w", Name, err)
	}
	r := &reconciler{
		client: cx.Client,
		claims: claimInf.Lister(),
		pods:   podInf.Informer().GetIndexer(),
		log:    cx.Logger(Name),
	}
	c := controller.New("pvcprotection", Workers, r)

	enqueueClaim := func(obj interface{}) {
		if claim, ok := obj.(*corev1.PersistentVolumeClaim); ok && (needsFinalizer(claim) || deletionCandidate(claim)) {
			c.Enqueue(claim)
		}
	}
	if _, err := claimInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueClaim,
		UpdateFunc: func(_, n interface{}) { enqueueClaim(n) },
	}); err != nil {
		return nil, err
	}
	// A pod changing or going may free the claims it names. Only claims
	// being deleted can need anything because of a pod, so the others
	// are not queued on every pod status update.
	enqueuePod := func(obj interface{}) {
		pod, ok := controller.ObjectOf[*corev1.Pod](obj)
		if !ok {
			return
		}
		for _, key := range claimKeys(pod) {
			ns, name, _ := cache.SplitMetaNamespaceKey(key)
			if claim, err := r.claims.PersistentVolumeClaims(ns).Get(name); err == nil && deletionCandidate(claim) {
				c.EnqueueKey(key)
			}
		}
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: enqueuePod,
		// Both: an update may stand for a missed delete and re-create
		// under the same name, whose old pod named other claims.
		UpdateFunc: func(o, n interface{}) { enqueuePod(o); enqueuePod(n) },
		DeleteFunc: enqueuePod,
	}); err != nil {
		return nil, err
	}
	c.HasSynced = []cache.InformerSynced{claimInf.Informer().HasSynced, podInf.Informer().HasSynced}
	return []controller.Runnable{c}, nil
}

// Reconcile adds or removes the finalizer of the claim named key
// ("namespace/name").
func (r *reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	claim, err := r.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	switch plan(claim, r.cachedUsers(key)) {
	case actAdd:
		return controller.Result{}, r.setFinalizers(ctx, claim, append(slices.Clone(claim.Finalizers), Finalizer))
	case actRemove:
		// The cache may not have seen a pod that uses the claim yet:
		// ask the API server before letting the storage go.
		pods, err := r.client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return controller.Result{}, fmt.Errorf("live list of pods in %s: %w", ns, err)
		}
		live := make([]*corev1.Pod, len(pods.Items))
		for i := range pods.Items {
			live[i] = &pods.Items[i]
		}
		if plan(claim, live) != actRemove {
			r.log.Debug("claim in use by a pod not yet in the cache; kept", "pvc", key)
			return controller.Result{}, nil
		}
		without := slices.DeleteFunc(slices.Clone(claim.Finalizers), func(f string) bool { return f == Finalizer })
		return controller.Result{}, r.setFinalizers(ctx, claim, without)
	}
	if claim.DeletionTimestamp != nil {
		r.log.Debug("claim in use; kept until its pods are gone", "pvc", key)
	}
	return controller.Result{}, nil
}

// cachedUsers are the pods in the informer whose volumes name the claim
// key; plan decides which of them really use it.
func (r *reconciler) cachedUsers(key string) []*corev1.Pod {
	objs, err := r.pods.ByIndex(claimIndex, key)
	if err != nil {
		return nil
	}
	pods := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			pods = append(pods, p)
		}
	}
	return pods
}

// setFinalizers writes claim's finalizers with an update, so a claim
// changed since the cache saw it is a conflict (retried from a fresh
// copy) rather than a lost write.
func (r *reconciler) setFinalizers(ctx context.Context, claim *corev1.PersistentVolumeClaim, finalizers []string) error {
	c := claim.DeepCopy()
	c.Finalizers = finalizers
	_, err := r.client.CoreV1().PersistentVolumeClaims(c.Namespace).Update(ctx, c, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("update finalizers of claim %s/%s: %w", c.Namespace, c.Name, err)
	}
	r.log.Debug("claim finalizers updated", "pvc", c.Namespace+"/"+c.Name, "finalizers", finalizers)
	return nil
}

// addClaimIndex adds claimIndex to the shared pod informer; it is ours
// alone, but a second build of the controller on the same informer must
// not fail.
func addClaimIndex(inf cache.SharedIndexInformer) error {
	if _, ok := inf.GetIndexer().GetIndexers()[claimIndex]; ok {
		return nil
	}
	return inf.AddIndexers(cache.Indexers{claimIndex: func(obj any) ([]string, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			return claimKeys(p), nil
		}
		return nil, nil
	}})
}
