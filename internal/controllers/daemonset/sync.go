package daemonset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

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

// sync brings one DaemonSet's pods in line with its nodes: it claims its
// pods and revisions, finds (or writes) the current revision, runs the
// manage step and then (when that had nothing to do) the rolling update,
// trims the history and writes the status. It acts only when everything
// the previous sync asked for has been seen; it always recounts.
func (c *dsController) sync(ctx context.Context, key string) (controller.Result, error) {
	namespace, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return controller.Result{}, nil
	}
	ds, err := c.sets.DaemonSets(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.expectations.DeleteExpectations(key)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		c.log.Error("invalid selector", "daemonSet", key, "err", err)
		return controller.Result{}, nil
	}
	if selector.Empty() {
		c.recorder.Eventf(ds, corev1.EventTypeWarning, "SelectingAll", "This daemon set is selecting all pods. A non-empty selector is required.")
		return controller.Result{}, nil
	}
	if ds.DeletionTimestamp != nil {
		// The garbage collector removes its pods.
		return controller.Result{}, nil
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return controller.Result{}, err
	}
	needsSync := c.expectations.SatisfiedExpectations(key)

	revs, err := c.claimRevisions(ctx, ds, selector)
	if err != nil {
		return controller.Result{}, err
	}
	pods, err := c.claimPods(ctx, ds, selector)
	if err != nil {
		return controller.Result{}, err
	}
	cur, old, collisions, err := c.currentRevision(ctx, ds, revs, pods)
	if err != nil {
		return controller.Result{}, err
	}
	in := planInput{ds: ds, nodes: nodes, pods: byNode(pods), hash: hashOf(cur), now: c.clock.Now()}

	var runErr error
	var requeue time.Duration
	if needsSync {
		p := planManage(in)
		var wait time.Duration
		p.delete, wait = c.admitFailed(ds, p)
		requeue = wait
		if p.empty() && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
			// Replace old pods only on a settled set: the manage step's
			// own writes would otherwise be counted twice.
			p = planRollingUpdate(in)
		}
		runErr = c.run(ctx, key, ds, in.hash, p)
	}
	truncErr := c.truncate(ctx, ds, old, pods)
	st, availIn := countStatus(in)
	st.CollisionCount = ds.Status.CollisionCount
	if collisions > 0 || ds.Status.CollisionCount != nil {
		st.CollisionCount = ptr.To(collisions)
	}
	statusErr := c.writeStatus(ctx, ds, st)
	if err := utilerrors.NewAggregate([]error{runErr, truncErr, statusErr}); err != nil {
		return controller.Result{}, err
	}
	if availIn > 0 && (requeue == 0 || availIn < requeue) {
		requeue = availIn
	}
	return controller.Result{RequeueAfter: requeue}, nil
}

// admitFailed lets through the deletes of failed pods whose node is out
// of back-off, with an event; the rest wait (the returned delay).
func (c *dsController) admitFailed(ds *appsv1.DaemonSet, p dsPlan) ([]*corev1.Pod, time.Duration) {
	del := p.delete
	var wait time.Duration
	now := c.clock.Now()
	c.failed.GC()
	for _, pod := range p.failed {
		bk := keyOf(ds) + "/" + targetNode(pod)
		if c.failed.IsInBackOffSinceUpdate(bk, now) {
			if d := c.failed.Get(bk); wait == 0 || d < wait {
				wait = d
			}
			continue
		}
		c.failed.Next(bk, now)
		c.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedDaemonPod", "Found failed daemon pod %s/%s on node %s, will try to kill it", pod.Namespace, pod.Name, targetNode(pod))
		del = append(del, pod)
	}
	return del, wait
}

func hashOf(rev *appsv1.ControllerRevision) string {
	if h := rev.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
		return h
	}
	return rev.Name
}

// byNode groups pods by the node they are for, leaving out terminal pods
// being deleted.
func byNode(pods []*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil && (p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded) {
			continue
		}
		n := targetNode(p)
		out[n] = append(out[n], p)
	}
	return out
}

// run carries out a plan: creations in slow-start batches, deletions at
// once, at most BurstReplicas of each, with expectations recorded first.
func (c *dsController) run(ctx context.Context, key string, ds *appsv1.DaemonSet, hash string, p dsPlan) error {
	create := p.create[:min(len(p.create), BurstReplicas)]
	del := p.delete[:min(len(p.delete), BurstReplicas)]
	if len(create)+len(del) == 0 {
		return nil
	}
	keys := make([]string, len(del))
	for i, pod := range del {
		keys[i] = podKey(pod)
	}
	c.expectations.ExpectCreations(key, 0)
	c.expectations.RaiseExpectations(key, len(create), keys)

	var errs []error
	if len(create) > 0 {
		tmpl := podTemplate(ds, hash)
		done := 0
		for batch := 1; done < len(create); batch *= 2 {
			n := min(batch, len(create)-done)
			batchErrs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { batchErrs[i] = c.createPod(ctx, ds, tmpl, create[done+i]) })
			}
			wg.Wait()
			failed := 0
			for _, err := range batchErrs {
				if err != nil {
					failed++
					errs = append(errs, err)
				}
			}
			done += n
			if failed > 0 {
				// Those that failed and those never tried will not be seen.
				c.expectations.LowerExpectations(key, failed+len(create)-done, nil)
				break
			}
		}
	}
	delErrs := make([]error, len(del))
	var wg sync.WaitGroup
	for i, pod := range del {
		wg.Go(func() {
			if err := c.deletePodNow(ctx, ds, pod); err != nil {
				c.expectations.DeletionObserved(key, podKey(pod))
				if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
					delErrs[i] = err
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(append(errs, delErrs...)...)
}

func (c *dsController) createPod(ctx context.Context, ds *appsv1.DaemonSet, tmpl *corev1.PodTemplateSpec, node string) error {
	pod := podForNode(ds, tmpl, node)
	created, err := c.client.CoreV1().Pods(ds.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		c.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedCreate", "Error creating: %v", err)
		return err
	}
	c.log.Debug("created pod", "daemonSet", keyOf(ds), "pod", created.Name, "node", node)
	c.recorder.Eventf(ds, corev1.EventTypeNormal, "SuccessfulCreate", "Created pod: %v", created.Name)
	return nil
}

// deletePodNow deletes pod if it is still the pod the plan saw.
func (c *dsController) deletePodNow(ctx context.Context, ds *appsv1.DaemonSet, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	switch {
	case err == nil:
		c.recorder.Eventf(ds, corev1.EventTypeNormal, "SuccessfulDelete", "Deleted pod: %v", pod.Name)
	case !apierrors.IsNotFound(err) && !apierrors.IsConflict(err):
		c.recorder.Eventf(ds, corev1.EventTypeWarning, "FailedDelete", "Error deleting: %v", err)
	}
	return err
}

// currentRevision finds the revision recording ds's template, writing it
// when there is none; the others are returned as old. Duplicates of the
// current revision (two managers raced) are merged into the newest: its
// pods are relabelled, the others deleted. The current revision gets the
// highest number.
func (c *dsController) currentRevision(ctx context.Context, ds *appsv1.DaemonSet, revs []*appsv1.ControllerRevision, pods []*corev1.Pod) (cur *appsv1.ControllerRevision, old []*appsv1.ControllerRevision, collisions int32, err error) {
	collisions = ptr.Deref(ds.Status.CollisionCount, 0)
	data, err := history.TemplatePatch(&ds.Spec.Template)
	if err != nil {
		return nil, nil, collisions, err
	}
	history.Sort(revs)
	want := history.New(ds, dsKind, ds.Spec.Template.Labels, appsv1.DefaultDaemonSetUniqueLabelKey, data, 0, &collisions)
	want.Annotations = copyMap(ds.Annotations)
	var same []*appsv1.ControllerRevision
	for _, r := range revs {
		if history.Equal(r, want) {
			same = append(same, r)
		} else {
			old = append(old, r)
		}
	}
	next := history.Next(old)
	if len(same) == 0 {
		want.Revision = next
		cur, err = history.Create(ctx, c.client, want, appsv1.DefaultDaemonSetUniqueLabelKey, &collisions)
	} else {
		cur = same[len(same)-1]
		for _, dup := range same[:len(same)-1] {
			if err := c.mergeDuplicate(ctx, dup, cur, pods); err != nil {
				return nil, nil, collisions, err
			}
		}
		if cur.Revision < next {
			cur, err = history.SetRevision(ctx, c.client, cur, next)
		}
	}
	if err != nil {
		return nil, nil, collisions, err
	}
	return cur, old, collisions, nil
}

func (c *dsController) mergeDuplicate(ctx context.Context, dup, keep *appsv1.ControllerRevision, pods []*corev1.Pod) error {
	for _, p := range pods {
		if p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != hashOf(dup) {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"labels": map[string]string{appsv1.DefaultDaemonSetUniqueLabelKey: hashOf(keep)},
			"uid":    p.UID,
		}})
		if _, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	err := c.client.AppsV1().ControllerRevisions(dup.Namespace).Delete(ctx, dup.Name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// truncate deletes the oldest old revisions no pod runs beyond
// revisionHistoryLimit.
func (c *dsController) truncate(ctx context.Context, ds *appsv1.DaemonSet, old []*appsv1.ControllerRevision, pods []*corev1.Pod) error {
	live := map[string]bool{}
	for _, p := range pods {
		if h := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
			live[h] = true
		}
	}
	limit := int(ptr.Deref(ds.Spec.RevisionHistoryLimit, 10))
	var errs []error
	for _, r := range history.ToDelete(old, func(r *appsv1.ControllerRevision) bool { return live[hashOf(r)] }, limit) {
		err := c.client.AppsV1().ControllerRevisions(r.Namespace).Delete(ctx, r.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &r.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (c *dsController) writeStatus(ctx context.Context, ds *appsv1.DaemonSet, st appsv1.DaemonSetStatus) error {
	st.Conditions = ds.Status.Conditions
	if equality.Semantic.DeepEqual(ds.Status, st) {
		return nil
	}
	cp := ds.DeepCopy()
	cp.Status = st
	_, err := c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, cp, metav1.UpdateOptions{})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	if !apierrors.IsConflict(err) {
		return err
	}
	fresh, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if fresh.UID != ds.UID {
		return nil
	}
	st.Conditions = fresh.Status.Conditions
	fresh.Status = st
	_, err = c.client.AppsV1().DaemonSets(ds.Namespace).UpdateStatus(ctx, fresh, metav1.UpdateOptions{})
	return err
}

// candidates returns the objects of idx controlled by uid plus the
// orphans of namespace.
func candidates[T metav1.Object](idx cache.Indexer, namespace string, uid types.UID) ([]T, error) {
	var out []T
	for _, k := range []string{string(uid), controller.OrphanIndexKey(namespace)} {
		objs, err := idx.ByIndex(controller.ControllerUIDIndex, k)
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if t, ok := o.(T); ok && t.GetNamespace() == namespace {
				out = append(out, t)
			}
		}
	}
	return out, nil
}

func (c *dsController) claimPods(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) ([]*corev1.Pod, error) {
	cands, err := candidates[*corev1.Pod](c.pods, ds.Namespace, ds.UID)
	if err != nil {
		return nil, err
	}
	plan := history.PlanClaims(ds, selector, cands, nil)
	return history.Claim(ctx, ds, dsKind, plan, func(ctx context.Context, p *corev1.Pod, patch []byte) error {
		_, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}, c.canAdopt(ds))
}

func (c *dsController) claimRevisions(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	cands, err := candidates[*appsv1.ControllerRevision](c.revisions, ds.Namespace, ds.UID)
	if err != nil {
		return nil, err
	}
	plan := history.PlanClaims(ds, selector, cands, nil)
	return history.Claim(ctx, ds, dsKind, plan, func(ctx context.Context, r *appsv1.ControllerRevision, patch []byte) error {
		_, err := c.client.AppsV1().ControllerRevisions(r.Namespace).Patch(ctx, r.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		return err
	}, c.canAdopt(ds))
}

func (c *dsController) canAdopt(ds *appsv1.DaemonSet) func(context.Context) error {
	return func(ctx context.Context) error {
		fresh, err := c.client.AppsV1().DaemonSets(ds.Namespace).Get(ctx, ds.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if fresh.UID != ds.UID {
			return fmt.Errorf("original DaemonSet %s/%s is gone: got uid %s, wanted %s", ds.Namespace, ds.Name, fresh.UID, ds.UID)
		}
		if fresh.DeletionTimestamp != nil {
			return fmt.Errorf("%s/%s has just been deleted at %v", ds.Namespace, ds.Name, fresh.DeletionTimestamp)
		}
		return nil
	}
}
