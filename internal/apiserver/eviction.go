package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/auth"
)

// Eviction: POST pods/{name}/eviction, the polite delete `kubectl drain`
// uses. Before a pod that counts for a PodDisruptionBudget goes, the
// budget's status.disruptionsAllowed is decremented with compare-and-swap
// and the pod is recorded in status.disruptedPods, so that two evictions
// racing for the last allowed disruption cannot both win; a budget that
// allows none answers 429 and the client retries later. Then the pod is
// marked with the DisruptionTarget condition and deleted gracefully, with
// the request's DeleteOptions.

const (
	// evictionMaxDisruptedPods bounds status.disruptedPods: past it the
	// disruption controller has fallen far behind the evictions the
	// server approved, and more are refused until it catches up.
	evictionMaxDisruptedPods = 2000
	// evictionRetries bounds the rounds of an eviction that keeps losing
	// races against writes of the pod.
	evictionRetries    = 20
	evictionRetryDelay = 500 * time.Millisecond
)

var (
	evictionGVK         = policyv1.SchemeGroupVersion.WithKind("Eviction")
	evictionV1beta1GVK  = policyv1beta1.SchemeGroupVersion.WithKind("Eviction")
	evictionPDBResource = schema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}
)

// evictionTooManyRequests is the 429 for a budget whose state the server
// cannot use yet (or which changed under us): the client retries.
func evictionTooManyRequests(pdbName string, retryAfter int) *apierrors.StatusError {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", retryAfter)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdbName)})
	return err
}

// evictionIgnoresBudget reports whether a pod may go without asking its
// budget: it already finished, never started, or is already going.
func evictionIgnoresBudget(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed ||
		pod.Status.Phase == corev1.PodPending || pod.DeletionTimestamp != nil
}

// evictionPinsVersion reports whether deleting the pod must be pinned to
// the version the decision was made on: a pod that may still become ready
// could otherwise start counting for a budget in between.
func evictionPinsVersion(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.DeletionTimestamp == nil
}

func evictionPodReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// evictionSkipsBudget reports whether an unready pod may go without
// spending one of its budget's disruptions: it does not count as healthy,
// so deleting it takes nothing from the budget when the policy says so,
// or when the budget is met without it.
func evictionSkipsBudget(pod *corev1.Pod, pdb *policyv1.PodDisruptionBudget) bool {
	if evictionPodReady(pod) {
		return false
	}
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p != nil && *p == policyv1.AlwaysAllow {
		return true
	}
	return pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
}

// evictionSpend takes one disruption from pdb for the pod, or says why it
// cannot: the pure core of the budget check. It changes pdb in place.
func evictionSpend(pdb *policyv1.PodDisruptionBudget, podName string, now time.Time) error {
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return evictionTooManyRequests(pdb.Name, 10)
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return apierrors.NewForbidden(evictionPDBResource, pdb.Name, errors.New("pdb disruptions allowed is negative"))
	}
	if len(pdb.Status.DisruptedPods) > evictionMaxDisruptedPods {
		return apierrors.NewForbidden(evictionPDBResource, pdb.Name, errors.New("DisruptedPods map too big - too many evictions not confirmed by PDB controller"))
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
			Message: fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)})
		return err
	}
	pdb.Status.DisruptionsAllowed--
	if pdb.Status.DisruptionsAllowed == 0 {
		apimeta.SetStatusCondition(&pdb.Status.Conditions, metav1.Condition{Type: policyv1.DisruptionAllowedCondition,
			Status: metav1.ConditionFalse, Reason: policyv1.InsufficientPodsReason, ObservedGeneration: pdb.Status.ObservedGeneration})
	}
	if pdb.Status.DisruptedPods == nil {
		pdb.Status.DisruptedPods = map[string]metav1.Time{}
	}
	// The disruption controller stops counting the pod as available from
	// now, and forgets the entry if the pod is not gone in a while.
	pdb.Status.DisruptedPods[podName] = metav1.NewTime(now)
	return nil
}

// evictionRead decodes the body (policy/v1 or v1beta1) and merges the
// request's dryRun into its DeleteOptions.
func (h *resourceHandler) evictionRead(r *http.Request, name string) (*policyv1.Eviction, error) {
	data, err := readBody(r)
	if err != nil {
		return nil, err
	}
	dec := h.s.codecs.decoderFor(contentType(r), false)
	if dec == nil {
		return nil, unsupportedMediaType()
	}
	obj, gvk, err := dec.Decode(data, &evictionGVK, nil)
	if err != nil {
		return nil, decodeError(err, evictionGVK.Kind, gvk, data)
	}
	var ev *policyv1.Eviction
	switch o := obj.(type) {
	case *policyv1.Eviction:
		ev = o
	case *policyv1beta1.Eviction:
		ev = &policyv1.Eviction{ObjectMeta: o.ObjectMeta, DeleteOptions: o.DeleteOptions}
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", gvk.Kind, evictionGVK.Kind))
	}
	if ev.Name != name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	dry := r.URL.Query()["dryRun"]
	if ev.DeleteOptions == nil {
		ev.DeleteOptions = &metav1.DeleteOptions{}
	}
	switch {
	case len(ev.DeleteOptions.DryRun) == 0:
		ev.DeleteOptions.DryRun = dry
	case len(dry) > 0 && !reflect.DeepEqual(dry, ev.DeleteOptions.DryRun):
		return nil, apierrors.NewInternalError(fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", dry, ev.DeleteOptions.DryRun))
	}
	for _, v := range ev.DeleteOptions.DryRun {
		if v != metav1.DryRunAll {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("Invalid dry run value: %q, supported values are: [All]", v))
		}
	}
	if g := ev.DeleteOptions.GracePeriodSeconds; g != nil && *g < 0 {
		ev.DeleteOptions.GracePeriodSeconds = new(int64(0))
	}
	if g := ev.DeleteOptions.GracePeriodSeconds; g != nil && *g > maxGracePeriodSeconds {
		ev.DeleteOptions.GracePeriodSeconds = new(int64(maxGracePeriodSeconds))
	}
	return ev, nil
}

// evict serves POST pods/{name}/eviction.
func (h *resourceHandler) evict(w http.ResponseWriter, r *http.Request, namespace, name string) {
	ev, err := h.evictionRead(r, name)
	if err == nil {
		err = h.evictionRun(r.Context(), namespace, name, ev.DeleteOptions, requestUser(r))
	}
	var st *metav1.Status
	switch {
	case err == evictionManyBudgets:
		// Upstream answers with a Failure status of its own making, code
		// 500, rather than with an error.
		st = evictionManyBudgets.ErrStatus.DeepCopy()
	case err != nil:
		h.s.writeError(w, r, err)
		return
	default:
		st = &metav1.Status{Status: metav1.StatusSuccess, Code: http.StatusCreated}
	}
	st.Kind, st.APIVersion = "Status", "v1"
	h.s.writeObject(w, r, target{media: negotiatedMedia(r)}, int(st.Code), nil, st)
}

// evictionManyBudgets is upstream's answer for a pod more than one budget
// covers: which one to spend would be a guess.
var evictionManyBudgets = &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
	Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."}}

// evictionRun runs one eviction: the budget check, then the deletion.
func (h *resourceHandler) evictionRun(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions, user *auth.User) error {
	pinned := opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil
	var pod *corev1.Pod
	for attempt := 0; ; attempt++ {
		obj, _, err := h.getStored(ctx, namespace, name)
		if err != nil {
			return err
		}
		pod = obj.(*corev1.Pod)
		// A precondition the pod already fails would fail the delete:
		// refuse before spending a disruption on it.
		if err := evictionCheckPreconditions(h.gr, pod, opts.Preconditions); err != nil {
			return err
		}
		if !evictionIgnoresBudget(pod) {
			break
		}
		del := opts
		if evictionPinsVersion(pod) && !pinned {
			del = evictionPinned(opts, pod.ResourceVersion)
		}
		err = h.evictionMarkAndDelete(ctx, namespace, name, del, user)
		if apierrors.IsConflict(err) && !pinned && attempt < evictionRetries {
			if err := evictionSleep(ctx, evictionRetryDelay); err != nil {
				return err
			}
			continue
		}
		return err
	}

	pdbs, err := h.s.evictionBudgets(ctx, pod)
	if err != nil {
		return err
	}
	if len(pdbs) > 1 {
		return evictionManyBudgets
	}
	del := opts
	pdbName := ""
	skipped := false
	if len(pdbs) == 1 {
		pdb := pdbs[0]
		pdbName = pdb.Name
		if evictionSkipsBudget(pod, pdb) {
			// Pin the delete to the pod as judged: if it became ready
			// meanwhile, it counts again and the client must retry.
			skipped = true
			del = evictionPinned(opts, pod.ResourceVersion)
		} else if err := h.s.evictionSpendBudget(ctx, pdb, pod.Name, len(opts.DryRun) > 0, user); err != nil {
			return err
		}
	}
	err = h.evictionMarkAndDelete(ctx, namespace, name, del, user)
	if apierrors.IsConflict(err) && skipped && !pinned {
		return evictionTooManyRequests(pdbName, 10)
	}
	return err
}

// evictionBudgets returns the budgets in the pod's namespace whose selector
// matches it. An empty or invalid selector matches nothing.
func (s *Server) evictionBudgets(ctx context.Context, pod *corev1.Pod) ([]*policyv1.PodDisruptionBudget, error) {
	ph := s.handlers[policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")]
	if ph == nil {
		return nil, nil
	}
	if _, err := ph.cache.freshRevision(ctx); err != nil {
		return nil, toStatusError(err, ph.gr, "")
	}
	items, _ := ph.cache.list(ph.prefix(pod.Namespace), nil)
	var out []*policyv1.PodDisruptionBudget
	for _, o := range items {
		pdb := o.obj.(*policyv1.PodDisruptionBudget)
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		out = append(out, pdb)
	}
	return out, nil
}

// evictionSpendBudget takes one disruption from the budget with compare-and-swap
// on its status, re-reading it after each lost race.
func (s *Server) evictionSpendBudget(ctx context.Context, pdb *policyv1.PodDisruptionBudget, podName string, isDry bool, user *auth.User) error {
	ph := s.handlers[policyv1.SchemeGroupVersion.WithResource("poddisruptionbudgets")]
	req := updateRequest{namespace: pdb.Namespace, name: pdb.Name, subresource: "status", user: user, dryRun: isDry,
		mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
			next := cur.(*policyv1.PodDisruptionBudget)
			if err := evictionSpend(next, podName, s.now()); err != nil {
				return nil, false, err
			}
			return next, false, nil
		},
	}
	_, _, err := ph.guaranteedUpdate(ctx, req)
	if apierrors.IsConflict(err) {
		return apierrors.NewTimeoutError(fmt.Sprintf("couldn't update PodDisruptionBudget %q due to conflicts", pdb.Name), 10)
	}
	return err
}

// evictionMarkAndDelete records why the pod goes (the DisruptionTarget condition,
// for its controller and for `kubectl describe`), then deletes it.
func (h *resourceHandler) evictionMarkAndDelete(ctx context.Context, namespace, name string, opts *metav1.DeleteOptions, user *auth.User) error {
	if len(opts.DryRun) == 0 {
		req := updateRequest{namespace: namespace, name: name, subresource: "status", user: user,
			mutate: func(cur runtime.Object) (runtime.Object, bool, error) {
				pod := cur.(*corev1.Pod)
				if err := evictionCheckPreconditions(h.gr, pod, opts.Preconditions); err != nil {
					return nil, false, err
				}
				evictionSetCondition(pod, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
					Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}, h.s.now())
				return pod, false, nil
			},
		}
		out, _, err := h.guaranteedUpdate(ctx, req)
		if err != nil {
			return err
		}
		if opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil {
			// The version the caller pinned is the one we just replaced.
			opts = evictionPinned(opts, objectMeta(out).GetResourceVersion())
		}
	}
	_, _, err := h.deleteObject(ctx, namespace, name, opts, user)
	return err
}

// evictionCheckPreconditions checks the caller's preconditions against
// the pod as the delete will.
func evictionCheckPreconditions(gr schema.GroupResource, pod *corev1.Pod, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	if p.UID != nil && *p.UID != "" && *p.UID != pod.UID {
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *p.UID, pod.UID))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != "" && *p.ResourceVersion != pod.ResourceVersion {
		return apierrors.NewConflict(gr, pod.Name, fmt.Errorf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *p.ResourceVersion, pod.ResourceVersion))
	}
	return nil
}

// evictionSetCondition sets a condition, moving its transition time only when
// its status changes.
func evictionSetCondition(pod *corev1.Pod, c corev1.PodCondition, now time.Time) {
	c.LastProbeTime = metav1.Time{}
	for i := range pod.Status.Conditions {
		old := &pod.Status.Conditions[i]
		if old.Type != c.Type {
			continue
		}
		c.LastTransitionTime = old.LastTransitionTime
		if old.Status != c.Status {
			c.LastTransitionTime = metav1.NewTime(now)
		}
		*old = c
		return
	}
	c.LastTransitionTime = metav1.NewTime(now)
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

func evictionPinned(opts *metav1.DeleteOptions, rv string) *metav1.DeleteOptions {
	out := opts.DeepCopy()
	if out.Preconditions == nil {
		out.Preconditions = &metav1.Preconditions{}
	}
	out.Preconditions.ResourceVersion = &rv
	return out
}

func evictionSleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
