// Package pvprotection is the PV protection controller: it keeps a
// PersistentVolume that is bound to a claim from being removed, as
// kube-controller-manager's "pv-protection" controller
// (persistentvolume-protection-controller) does.
//
// The protection is a finalizer, kubernetes.io/pv-protection. The
// StorageObjectInUseProtection admission plugin puts it on every new
// volume; this controller adds it to volumes that lack it (made before
// the plugin was on) and, once a volume is being deleted, removes it as
// soon as the volume is no longer bound, which lets the API server finish
// the deletion. Until then `kubectl get pv` shows the volume Terminating.
//
// A volume is bound while status.phase is Bound (the volume binder's
// word) and spec.claimRef names a claim. Upstream looks at the phase
// only, because its binder moves a volume without a claimRef to
// Available at once; rudder may run without a binder, and a volume
// marked Bound but naming no claim protects nothing, so it is released.
//
// The decision (plan) is pure; the reconciler reads the informer, asks
// it and writes. It is level-based: a controller started after volumes
// were deleted or released finds them in its first list.
//
// Usage, through the controller manager:
//
//	runnables, err := pvprotection.Descriptor.New(ctx, cx)
package pvprotection

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
const Name = "pv-protection"

// Finalizer is what the StorageObjectInUseProtection admission plugin
// puts on every new volume.
const Finalizer = "kubernetes.io/pv-protection"

// Workers is how many volumes are reconciled at once; upstream runs one.
const Workers = 1

// Descriptor registers the controller under upstream's name.
var Descriptor = controller.Descriptor{Name: Name, New: newController}

// action is what a volume needs from the controller.
type action int

const (
	actNone   action = iota
	actAdd           // live volume without the finalizer
	actRemove        // being deleted and no longer bound
)

func (a action) String() string {
	switch a {
	case actAdd:
		return "add finalizer"
	case actRemove:
		return "remove finalizer"
	}
	return "none"
}

// plan decides what pv needs.
func plan(pv *corev1.PersistentVolume) action {
	has := slices.Contains(pv.Finalizers, Finalizer)
	switch {
	case pv.DeletionTimestamp != nil && has && !bound(pv):
		return actRemove
	case pv.DeletionTimestamp == nil && !has:
		// A volume already being deleted cannot take a finalizer.
		return actAdd
	}
	return actNone
}

// bound reports whether a claim still holds pv.
func bound(pv *corev1.PersistentVolume) bool {
	return pv.Status.Phase == corev1.VolumeBound && pv.Spec.ClaimRef != nil
}

type reconciler struct {
	client kubernetes.Interface
	pvs    corelisters.PersistentVolumeLister
	log    *slog.Logger
}

func newController(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
	inf := cx.Informers.Core().V1().PersistentVolumes()
	r := &reconciler{client: cx.Client, pvs: inf.Lister(), log: cx.Logger(Name)}
	c := controller.New("pvprotection", Workers, r)
	enqueue := func(obj interface{}) {
		if pv, ok := obj.(*corev1.PersistentVolume); ok && plan(pv) != actNone {
			c.Enqueue(pv)
		}
	}
	if _, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, n interface{}) { enqueue(n) },
	}); err != nil {
		return nil, err
	}
	c.HasSynced = []cache.InformerSynced{inf.Informer().HasSynced}
	return []controller.Runnable{c}, nil
}

// Reconcile adds or removes the finalizer of the volume named key.
func (r *reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	pv, err := r.pvs.Get(key)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	var finalizers []string
	switch plan(pv) {
	case actAdd:
		finalizers = append(slices.Clone(pv.Finalizers), Finalizer)
	case actRemove:
		finalizers = slices.DeleteFunc(slices.Clone(pv.Finalizers), func(f string) bool { return f == Finalizer })
	default:
		return controller.Result{}, nil
	}
	// An update, not a patch: a volume bound again since the cache saw
	// it is a conflict, and the retry decides from the fresh copy.
	out := pv.DeepCopy()
	out.Finalizers = finalizers
	_, err = r.client.CoreV1().PersistentVolumes().Update(ctx, out, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, fmt.Errorf("update finalizers of volume %s: %w", key, err)
	}
	r.log.Debug("volume finalizers updated", "pv", key, "finalizers", finalizers)
	return controller.Result{}, nil
}
