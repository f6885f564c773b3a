package statefulset

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/controller"
	"github.com/rudder-dev/rudder/internal/controllers/history"
)

// sync brings one set towards its spec: it claims its pods and
// revisions, finds (or writes) its current and update revisions, runs
// the plan, writes the status and trims the history. It acts only when
// everything the previous sync asked for has been seen in the cache; it
// always recounts the status.
func (c *ssController) sync(ctx context.Context, key string) (controller.Result, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	set, err := c.sets.StatefulSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.DeleteExpectations(key)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		// Validation forbids both; retrying cannot help.
		c.log.Error("invalid selector", "statefulSet", key, "err", err)
		return controller.Result{}, nil
	}
	needsSync := c.expectations.SatisfiedExpectations(key)

	revs, err := c.claimRevisions(ctx, set, selector)
	if err != nil {
		return controller.Result{}, err
	}
	pods, err := c.claimPods(ctx, set, selector)
	if err != nil {
		return controller.Result{}, err
	}
	history.Sort(revs)
	current, update, collisions, err := c.setRevisions(ctx, set, revs)
	if err != nil {
		return controller.Result{}, err
	}
	in := planInput{
		set:            set,
		collisionCount: collisions,
		pods:           pods,
		claims:         c.claimsOf(set, pods),
		now:            c.clock.Now(),
		statusOnly:     !needsSync,
	}
	if in.current, err = templateRevision(current); err != nil {
		return controller.Result{}, err
	}
	if in.update, err = templateRevision(update); err != nil {
		return controller.Result{}, err
	}
	p := planSync(in)
	if p.waiting != "" {
		c.log.Debug("statefulset waiting", "statefulSet", key, "why", p.waiting)
	}
	runErr := c.run(ctx, key, set, monotonicOf(set), p)
	statusErr := c.writeStatus(ctx, set, p.status)
	// Live revisions: the two in use by the set and every pod's.
	live := map[string]bool{current.Name: true, update.Name: true}
	for _, pod := range pods {
		live[revisionOf(pod)] = true
	}
	truncErr := c.truncate(ctx, set, revs, live)
	if err := utilerrors.NewAggregate([]error{runErr, statusErr, truncErr}); err != nil {
		return controller.Result{}, err
	}
	return controller.Result{RequeueAfter: p.requeue}, nil
}

func monotonicOf(set *appsv1.StatefulSet) bool {
	return set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement
}

// templateRevision decodes a revision's template for the plan.
func templateRevision(r *appsv1.ControllerRevision) (revision, error) {
	t, err := history.Template(r)
	if err != nil {
		return revision{}, err
	}
	return revision{name: r.Name, template: t}, nil
}

// candidates returns the objects of idx controlled by uid plus the
// orphans of namespace.
func candidates[T any](idx cache.Indexer, namespace string, uid types.UID) ([]T, error) {
	var out []T
	for _, k := range []string{string(uid), controller.OrphanIndexKey(namespace)} {
		objs, err := idx.ByIndex(controller.ControllerUIDIndex, k)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if t, ok := o.(T); ok {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

func (c *ssController) claimPods(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*corev1.Pod, error) {
	cands, err := candidates[*corev1.Pod](c.pods, set.Namespace, set.UID)
	if err != nil {
		return nil, err
	}
	var inNS []*corev1.Pod
	for _, p := range cands {
		if p.Namespace == set.Namespace {
			inNS = append(inNS, p)
		}
	}
	plan := history.PlanClaims(set, selector, inNS, func(p *corev1.Pod) bool { return isMember(set, p) })
	return history.Claim(ctx, set, setKind, plan, func(ctx context.Context, p *corev1.Pod, patch []byte) error {
		_, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}, c.canAdopt(set))
}

func (c *ssController) claimRevisions(ctx context.Context, set *appsv1.StatefulSet, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	cands, err := candidates[*appsv1.ControllerRevision](c.revisions, set.Namespace, set.UID)
	if err != nil {
		return nil, err
	}
	var inNS []*appsv1.ControllerRevision
	for _, r := range cands {
		if r.Namespace == set.Namespace {
			inNS = append(inNS, r)
		}
	}
	plan := history.PlanClaims(set, selector, inNS, nil)
	return history.Claim(ctx, set, setKind, plan, func(ctx context.Context, r *appsv1.ControllerRevision, patch []byte) error {
		_, err := c.client.AppsV1().ControllerRevisions(r.Namespace).Patch(ctx, r.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}, c.canAdopt(set))
}

// canAdopt re-reads the set: adopting for a set the cache does not yet
// show deleted would leave the adopted object behind.
func (c *ssController) canAdopt(set *appsv1.StatefulSet) func(context.Context) error {
	return func(ctx context.Context) error {
		fresh, err := c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if fresh.UID != set.UID {
			return fmt.Errorf("original StatefulSet %s/%s is gone: got uid %s, wanted %s", set.Namespace, set.Name, fresh.UID, set.UID)
		}
		if fresh.DeletionTimestamp != nil {
			return fmt.Errorf("%s/%s has just been deleted at %v", set.Namespace, set.Name, fresh.DeletionTimestamp)
		}
		return nil
	}
}

// claimsOf looks up, in the cache, the claims the set's pods (existing
// and to be created) would use.
func (c *ssController) claimsOf(set *appsv1.StatefulSet, pods []*corev1.Pod) map[string]*corev1.PersistentVolumeClaim {
	out := map[string]*corev1.PersistentVolumeClaim{}
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		return out
	}
	ordinals := map[int]bool{}
	for o := startOrdinal(set); o < startOrdinal(set)+replicasOf(set); o++ {
		ordinals[o] = true
	}
	for _, p := range pods {
		ordinals[ordinalOf(p)] = true
	}
	lister := c.claims.PersistentVolumeClaims(set.Namespace)
	for o := range ordinals {
		for _, t := range set.Spec.VolumeClaimTemplates {
			name := claimName(set, t.Name, o)
			if pvc, err := lister.Get(name); err == nil {
				out[name] = pvc
			}
		}
	}
	return out
}

// setRevisions returns the set's current and update revisions, as
// upstream finds them: the update revision records the set's template
// now. If the newest revision already does, that is it; if an older one
// does (a rollback), it is renumbered to be the newest; otherwise a new
// revision is written. The current revision is the one status names, or
// the update revision for a set that has none yet.
func (c *ssController) setRevisions(ctx context.Context, set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision) (current, update *appsv1.ControllerRevision, collisions int32, err error) {
	collisions = ptr.Deref(set.Status.CollisionCount, 0)
	data, err := history.TemplatePatch(&set.Spec.Template)
	if err != nil {
		return nil, nil, collisions, err
	}
	want := history.New(set, setKind, set.Spec.Template.Labels, history.HashLabel, data, history.Next(revs), &collisions)
	if len(set.Annotations) > 0 {
		want.Annotations = map[string]string{}
		for k, v := range set.Annotations {
			want.Annotations[k] = v
		}
	}
	equal := history.FindEqual(revs, want)
	switch {
	case len(equal) > 0 && equal[len(equal)-1] == revs[len(revs)-1]:
		update = revs[len(revs)-1]
	case len(equal) > 0:
		update, err = history.SetRevision(ctx, c.client, equal[len(equal)-1], want.Revision)
	default:
		update, err = history.Create(ctx, c.client, want, history.HashLabel, &collisions)
	}
	if err != nil {
		return nil, nil, collisions, err
	}
	for _, r := range revs {
		if r.Name == set.Status.CurrentRevision {
			current = r
			break
		}
	}
	if current == nil {
		current = update
	}
	return current, update, collisions, nil
}

// truncate deletes the oldest revisions no pod uses beyond
// revisionHistoryLimit.
func (c *ssController) truncate(ctx context.Context, set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision, live map[string]bool) error {
	limit := int(ptr.Deref(set.Spec.RevisionHistoryLimit, 10))
	var errs []error
	for _, r := range history.ToDelete(revs, func(r *appsv1.ControllerRevision) bool { return live[r.Name] }, limit) {
		err := c.client.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &r.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeStatus writes st unless nothing changed, retrying once on a fresh
// copy after a conflict.
func (c *ssController) writeStatus(ctx context.Context, set *appsv1.StatefulSet, st appsv1.StatefulSetStatus) error {
	st.Conditions = set.Status.Conditions
	if equality.Semantic.DeepEqual(set.Status, st) {
		return nil
	}
	cp := set.DeepCopy()
	cp.Status = st
	_, err := c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err == nil || apierrors.IsNotFound(err) || !apierrors.IsConflict(err) {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	fresh, err := c.client.AppsV1().StatefulSets(set.Namespace).Get(ctx, set.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if fresh.UID != set.UID {
		return nil
	}
	st.Conditions = fresh.Status.Conditions
	fresh.Status = st
	_, err = c.client.AppsV1().StatefulSets(set.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
	return err
}
