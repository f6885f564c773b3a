package deployment

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/kubernetes"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Descriptor registers the controller with the controller manager.
var Descriptor = controller.Descriptor{
	Name: "deployment",
	New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
		c, err := New(cx, Config{})
		if err != nil {
			return nil, err
		}
		return []controller.Runnable{c}, nil
	},
}

// Config tunes the controller; zero values take the defaults.
type Config struct {
	// Workers is how many deployments sync at once (upstream's
	// --concurrent-deployment-syncs); default 5.
	Workers int
}

// Reconciler syncs one deployment per call; see the package doc.
type Reconciler struct {
	client    kubernetes.Interface
	dLister   appslisters.DeploymentLister
	rsLister  appslisters.ReplicaSetLister
	podLister corelisters.PodLister
	recorder  record.EventRecorder
	clock     clock.PassiveClock
	log       *slog.Logger
	queue     *controller.Controller
	// replicaSets routes replica-set events to their deployments.
	replicaSets *controller.Dependents[*appsv1.Deployment, *appsv1.ReplicaSet]
}

// New builds the controller from the shared informers and registers its
// event handlers (deployments, replica sets, pods). The caller starts
// the informer factory and runs the returned controller.
func New(cx *controller.Context, cfg Config) (*controller.Controller, error) {
	if cfg.Workers <= 0 {
		cfg.Workers = 5
	}
	clk := cx.ClockOrReal()
	dInf := cx.Informers.Apps().V1().Deployments()
	rsInf := cx.Informers.Apps().V1().ReplicaSets()
	podInf := cx.Informers.Core().V1().Pods()
	r := &Reconciler{
		client:    cx.Client,
		dLister:   dInf.Lister(),
		rsLister:  rsInf.Lister(),
		podLister: podInf.Lister(),
		clock:     clk,
		log:       cx.Logger("deployment"),
	}
	if cx.Recorder != nil {
		r.recorder = cx.Recorder("deployment-controller")
	} else {
		r.recorder = &record.FakeRecorder{}
	}
	c := controller.New("deployment", cfg.Workers, r)
	r.queue = c

	if _, err := dInf.Informer().AddEventHandler(c.Handler()); err != nil {
		return nil, err
	}
	r.replicaSets = r.rsEvents()
	if _, err := rsInf.Informer().AddEventHandler(r.replicaSets.Handler()); err != nil {
		return nil, err
	}
	if _, err := podInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: r.updatePod,
		DeleteFunc: r.deletePod,
	}); err != nil {
		return nil, err
	}
	c.HasSynced = append(c.HasSynced, dInf.Informer().HasSynced, rsInf.Informer().HasSynced, podInf.Informer().HasSynced)
	return c, nil
}

// Reconcile syncs the deployment named by key.
func (r *Reconciler) Reconcile(ctx context.Context, key string) (controller.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	d, err := r.dLister.Deployments(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	in := Input{Deployment: d, Now: r.clock.Now()}
	// An empty selector would claim every replica set in the namespace;
	// Compute only reports it.
	if d.Spec.Selector != nil && len(d.Spec.Selector.MatchLabels)+len(d.Spec.Selector.MatchExpressions) > 0 {
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return controller.Result{}, fmt.Errorf("deployment %s has invalid label selector: %w", key, err)
		}
		if in.ReplicaSets, err = r.claimReplicaSets(ctx, d, sel); err != nil {
			return controller.Result{}, err
		}
		if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
			if in.Pods, err = r.podLister.Pods(ns).List(sel); err != nil {
				return controller.Result{}, err
			}
		}
	}
	plan := Compute(in)
	if err := r.apply(ctx, d, plan); err != nil {
		return controller.Result{}, err
	}
	return controller.Result{RequeueAfter: plan.RequeueAfter}, nil
}

// apply carries a plan out, stopping at the first failed write.
func (r *Reconciler) apply(ctx context.Context, d *appsv1.Deployment, plan Plan) error {
	for _, w := range plan.Writes {
		rsc := r.client.AppsV1().ReplicaSets(d.Namespace)
		var err error
		if w.Create {
			_, err = rsc.Create(ctx, w.ReplicaSet, metav1.CreateOptions{})
			if err != nil {
				return r.createFailed(ctx, d, w.ReplicaSet, err)
			}
		} else if _, err = rsc.Update(ctx, w.ReplicaSet, metav1.UpdateOptions{}); err != nil {
			return err
		}
		r.record(d, w.Events)
	}
	for _, rs := range plan.Deletes {
		uid := rs.UID
		err := r.client.AppsV1().ReplicaSets(rs.Namespace).Delete(ctx, rs.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if plan.Status != nil || plan.Revision != "" {
		if err := r.writeStatus(ctx, d, plan.Status, plan.Revision); err != nil {
			return err
		}
	}
	r.record(d, plan.Events)
	return nil
}

func (r *Reconciler) record(d *appsv1.Deployment, events []Event) {
	for _, e := range events {
		r.recorder.Event(d, e.Type, e.Reason, e.Message)
	}
}

// writeStatus writes the status and, with it, the revision annotation.
// Upstream's API server keeps metadata (but labels) from a deployment
// /status write, so one write carries both; an API server that keeps
// only the status gets the annotation by a patch of the deployment
// instead (which bumps the generation, observed on the next sync).
func (r *Reconciler) writeStatus(ctx context.Context, d *appsv1.Deployment, st *appsv1.DeploymentStatus, rev string) error {
	nd := d.DeepCopy()
	if st != nil {
		nd.Status = *st
	}
	if rev != "" {
		if nd.Annotations == nil {
			nd.Annotations = map[string]string{}
		}
		nd.Annotations[RevisionAnnotation] = rev
	}
	dc := r.client.AppsV1().Deployments(d.Namespace)
	out, err := dc.UpdateStatus(ctx, nd, metav1.UpdateOptions{})
	if err != nil {
		return err
	}
	if rev == "" || out.Annotations[RevisionAnnotation] == rev {
		return nil
	}
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{RevisionAnnotation: rev},
		"uid":         d.UID,
	}})
	_, err = dc.Patch(ctx, d.Name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// createFailed handles a failed create of the new replica set. The name
// taken by a replica set that is not this template's means a hash
// collision: bump status.collisionCount so the next sync picks another
// name. Other failures are reported in the Progressing condition and an
// event, as upstream does.
func (r *Reconciler) createFailed(ctx context.Context, d *appsv1.Deployment, want *appsv1.ReplicaSet, err error) error {
	if apierrors.IsAlreadyExists(err) {
		rs, gerr := r.rsLister.ReplicaSets(want.Namespace).Get(want.Name)
		if gerr != nil {
			rs, gerr = r.client.AppsV1().ReplicaSets(want.Namespace).Get(ctx, want.Name, metav1.GetOptions{})
		}
		if gerr != nil {
			return gerr
		}
		if ref := metav1.GetControllerOfNoCopy(rs); ref != nil && ref.UID == d.UID && equalIgnoreHash(&d.Spec.Template, &rs.Spec.Template) {
			// Ours, just not in the informer yet: its add event syncs us again.
			return nil
		}
		nd := d.DeepCopy()
		var cc int32
		if nd.Status.CollisionCount != nil {
			cc = *nd.Status.CollisionCount
		}
		nd.Status.CollisionCount = new(cc + 1)
		if _, uerr := r.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, nd, metav1.UpdateOptions{}); uerr == nil {
			r.log.Info("hash collision, bumped collisionCount", "deployment", nsName(d), "replicaSet", want.Name, "collisionCount", cc+1)
		}
		return fmt.Errorf("replica set %s/%s exists with another template: %w", want.Namespace, want.Name, err)
	}
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return err
	}
	msg := fmt.Sprintf("Failed to create new replica set %q: %v", want.Name, err)
	if hasProgressDeadline(d) {
		nd := d.DeepCopy()
		setCondition(&nd.Status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionFalse, ReasonFailedRSCreate, msg, metav1.NewTime(r.clock.Now())))
		_, _ = r.client.AppsV1().Deployments(d.Namespace).UpdateStatus(ctx, nd, metav1.UpdateOptions{})
	}
	r.recorder.Event(d, corev1.EventTypeWarning, ReasonFailedRSCreate, msg)
	return err
}

func nsName(o metav1.Object) string { return o.GetNamespace() + "/" + o.GetName() }

// claimReplicaSets returns the replica sets the deployment controls:
// those it owns that its selector still matches, plus orphans the
// selector matches, which it adopts. Owned replica sets it no longer
// matches are released. Adoption first re-reads the deployment from the
// server, so a deployment deleted (or replaced by one of the same name)
// since the informer saw it adopts nothing.
func (r *Reconciler) claimReplicaSets(ctx context.Context, d *appsv1.Deployment, sel labels.Selector) ([]*appsv1.ReplicaSet, error) {
	all, err := r.rsLister.ReplicaSets(d.Namespace).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	canAdopt := sync.OnceValue(func() error {
		fresh, err := r.client.AppsV1().Deployments(d.Namespace).Get(ctx, d.Name, metav1.GetOptions{})
		switch {
		case err != nil:
			return err
		case fresh.UID != d.UID:
			return fmt.Errorf("original Deployment %s/%s is gone: got uid %s, wanted %s", d.Namespace, d.Name, fresh.UID, d.UID)
		case fresh.DeletionTimestamp != nil:
			return fmt.Errorf("%s/%s has just been deleted at %v", d.Namespace, d.Name, fresh.DeletionTimestamp)
		}
		return nil
	})
	var out []*appsv1.ReplicaSet
	var errs []error
	for _, rs := range all {
		got, err := r.claim(ctx, d, sel, rs, canAdopt)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if got != nil {
			out = append(out, got)
		}
	}
	return out, utilerrors.NewAggregate(errs)
}

func (r *Reconciler) claim(ctx context.Context, d *appsv1.Deployment, sel labels.Selector, rs *appsv1.ReplicaSet, canAdopt func() error) (*appsv1.ReplicaSet, error) {
	matches := sel.Matches(labels.Set(rs.Labels))
	if ref := metav1.GetControllerOfNoCopy(rs); ref != nil {
		switch {
		case ref.UID != d.UID:
			return nil, nil
		case matches:
			return rs, nil
		case d.DeletionTimestamp != nil:
			return nil, nil
		}
		var refs []metav1.OwnerReference
		for _, o := range rs.OwnerReferences {
			if o.UID != d.UID {
				refs = append(refs, o)
			}
		}
		if _, err := r.patchOwners(ctx, rs, refs); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("release replica set %s/%s: %w", rs.Namespace, rs.Name, err)
		}
		return nil, nil
	}
	if d.DeletionTimestamp != nil || !matches || rs.DeletionTimestamp != nil {
		return nil, nil
	}
	if err := canAdopt(); err != nil {
		return nil, fmt.Errorf("can't adopt replica set %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	refs := append(append([]metav1.OwnerReference(nil), rs.OwnerReferences...), *metav1.NewControllerRef(d, deploymentKind))
	adopted, err := r.patchOwners(ctx, rs, refs)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adopt replica set %s/%s: %w", rs.Namespace, rs.Name, err)
	}
	return adopted, nil
}

// patchOwners replaces the owner references, guarded by the
// resourceVersion and uid the decision was made on.
func (r *Reconciler) patchOwners(ctx context.Context, rs *appsv1.ReplicaSet, refs []metav1.OwnerReference) (*appsv1.ReplicaSet, error) {
	if refs == nil {
		refs = []metav1.OwnerReference{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
		"ownerReferences": refs,
		"uid":             rs.UID,
		"resourceVersion": rs.ResourceVersion,
	}})
	if err != nil {
		return nil, err
	}
	return r.client.AppsV1().ReplicaSets(rs.Namespace).Patch(ctx, rs.Name, types.MergePatchType, patch, metav1.PatchOptions{})
}
