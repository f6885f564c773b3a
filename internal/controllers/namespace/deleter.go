package namespace

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// finalizerEstimate is how long objects held only by finalizers are
// expected to take (upstream's guess for the garbage collector).
const finalizerEstimate = 15 * time.Second

// target is one resource to empty and how.
type target struct {
	gvr              schema.GroupVersionResource
	list             bool // supports list: can be emptied one by one and checked
	deleteCollection bool
}

// targets picks the resources that can be deleted from discovery's
// lists, sorted for a stable order. Group versions that do not parse are
// skipped and reported in the error.
func targets(lists []*metav1.APIResourceList) ([]target, error) {
	var out []target
	var errs []error
	seen := map[schema.GroupVersionResource]bool{}
	for _, l := range lists {
		if l == nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			errs = append(errs, fmt.Errorf("couldn't parse GroupVersion %q: %w", l.GroupVersion, err))
			continue
		}
		for _, r := range l.APIResources {
			if !slices.Contains(r.Verbs, "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			if seen[gvr] {
				continue
			}
			seen[gvr] = true
			out = append(out, target{gvr: gvr, list: slices.Contains(r.Verbs, "list"), deleteCollection: slices.Contains(r.Verbs, "deletecollection")})
		}
	}
	slices.SortFunc(out, func(a, b target) int {
		return cmp.Or(cmp.Compare(a.gvr.Group, b.gvr.Group), cmp.Compare(a.gvr.Version, b.gvr.Version),
			cmp.Compare(a.gvr.Resource, b.gvr.Resource))
	})
	return out, utilerrors.NewAggregate(errs)
}

// podEstimate is how long the namespace's pods may still take: the
// longest grace period among pods not yet terminal, or zero once that
// long has passed since the namespace's deletion.
func podEstimate(pods []corev1.Pod, deletedAt, now time.Time) time.Duration {
	var longest time.Duration
	for i := range pods {
		p := &pods[i]
		if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if g := p.Spec.TerminationGracePeriodSeconds; g != nil {
			longest = max(longest, time.Duration(*g)*time.Second)
		}
	}
	if now.Sub(deletedAt) >= longest {
		return 0
	}
	return longest
}

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

func isPods(t target) bool { return t.gvr == podsGVR }

// resourceResult is what emptying one resource left behind.
type resourceResult struct {
	estimate   time.Duration
	remaining  int
	finalizers map[string]int
}

// deleteContent makes one pass over ns's content: deletes everything it
// can, records what remains in ns's conditions, and returns how long the
// rest is expected to take (zero: nothing remains). An error means some
// content could not be dealt with; the namespace must not be finalized.
func (r *reconciler) deleteContent(ctx context.Context, ns *corev1.Namespace) (*corev1.Namespace, time.Duration, error) {
	var errs []error
	res := passResult{remaining: map[schema.GroupVersionResource]int{}, finalizers: map[string]int{}}
	lists, err := r.discover()
	if err != nil {
		// Partial discovery still names most resources: empty those now,
		// and refuse to finalize until discovery is whole again.
		res.discoveryErr = err
		errs = append(errs, err)
	}
	tgts, err := targets(lists)
	if err != nil {
		res.parseErr = err
		errs = append(errs, err)
	}
	// Pods go first, and everything else only once they are gone
	// (upstream's ordered namespace deletion, on by default since 1.33):
	// a pod still running keeps the ConfigMaps, Secrets and volumes it
	// uses until it has stopped.
	if i := slices.IndexFunc(tgts, isPods); i > 0 {
		tgts = append(append([]target{tgts[i]}, tgts[:i]...), tgts[i+1:]...)
	}
	var estimate time.Duration
	for _, t := range tgts {
		if !isPods(t) && res.remaining[podsGVR] > 0 {
			break // the pods' remaining time is the estimate
		}
		rr, err := r.deleteResource(ctx, t, ns)
		if err != nil {
			res.contentErrs = append(res.contentErrs, err)
			errs = append(errs, err)
		}
		estimate = max(estimate, rr.estimate)
		if rr.remaining > 0 {
			res.remaining[t.gvr] = rr.remaining
			for f, n := range rr.finalizers {
				res.finalizers[f] += n
			}
		}
	}
	// Always write the conditions when they change, so a problem that
	// cleared is shown cleared.
	next := ns.DeepCopy()
	if setConditions(&next.Status, res.problems(), metav1.NewTime(r.clock.Now())) {
		updated, err := r.client.CoreV1().Namespaces().UpdateStatus(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			r.log.Info("could not update namespace conditions", "namespace", ns.Name, "err", err)
		} else {
			ns = updated
		}
	}
	return ns, estimate, utilerrors.NewAggregate(errs)
}

// deleteResource empties one resource in ns and reports what is left.
func (r *reconciler) deleteResource(ctx context.Context, t target, ns *corev1.Namespace) (resourceResult, error) {
	var out resourceResult
	if t.gvr.Group == "" && t.gvr.Resource == "pods" {
		pods, err := r.client.CoreV1().Pods(ns.Name).List(ctx, metav1.ListOptions{})
		if err != nil {
			return out, fmt.Errorf("estimate pod termination in %s: %w", ns.Name, err)
		}
		out.estimate = podEstimate(pods.Items, ns.DeletionTimestamp.Time, r.clock.Now())
	}
	client := r.metadata.Resource(t.gvr).Namespace(ns.Name)
	// The garbage collector must not add the orphan finalizer: the
	// namespace would wait for it.
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}

	collected := false
	if t.deleteCollection {
		err := client.DeleteCollection(ctx, opts, metav1.ListOptions{})
		switch {
		case err == nil:
			collected = true
		case apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err):
			// Discovery promised more than the resource serves; fall back.
		default:
			return out, err
		}
	}
	if !t.list {
		// Nothing more can be done or checked.
		return out, nil
	}
	if !collected {
		items, err := client.List(ctx, metav1.ListOptions{})
		if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		for _, it := range items.Items {
			err := client.Delete(ctx, it.Name, opts)
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				return out, err
			}
		}
	}

	left, err := client.List(ctx, metav1.ListOptions{})
	if apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err) {
		return out, nil
	}
	if err != nil {
		return out, err
	}
	if len(left.Items) == 0 {
		out.estimate = 0
		return out, nil
	}
	out.remaining = len(left.Items)
	out.finalizers = map[string]int{}
	for _, it := range left.Items {
		for _, f := range it.Finalizers {
			out.finalizers[f]++
		}
	}
	switch {
	case out.estimate > 0:
		return out, nil
	case len(out.finalizers) > 0:
		// Finalizers are normal: give their owners time.
		out.estimate = finalizerEstimate
		return out, nil
	}
	// Deleted without finalizers or a grace period, yet still here.
	return out, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", ns.Name, t.gvr)
}

// errNamespaceReplaced stops a retry when the namespace was deleted and
// created again under the same name meanwhile.
var errNamespaceReplaced = errors.New("namespace uid has changed across retries")
