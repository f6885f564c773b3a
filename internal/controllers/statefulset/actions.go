package statefulset

import (
	"context"
	"fmt"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// The I/O half: the writes a plan decided on, and the events that tell
// the user about them (reasons and messages as upstream's).

// maxBatch caps the writes a Parallel set sends at once.
const maxBatch = 500

// run carries out p's phases in order and stops at the first phase with
// a failure. Expectations are reset first (the sync only acts when the
// last record was met) and raised before each create and delete, so the
// next sync waits to see them.
func (c *ssController) run(ctx context.Context, key string, set *appsv1.StatefulSet, monotonic bool, p plan) error {
	steps := p.steps()
	if len(steps) == 0 {
		return nil
	}
	c.expectations.ExpectCreations(key, 0)
	for _, phase := range p.phases {
		if len(phase) == 0 {
			continue
		}
		if monotonic {
			for _, st := range phase {
				if err := c.do(ctx, key, set, st); err != nil {
					return err
				}
			}
			continue
		}
		if err := slowStart(phase, func(st step) error { return c.do(ctx, key, set, st) }); err != nil {
			return err
		}
	}
	return nil
}

// slowStart runs fn over steps in concurrent batches of 1, 2, 4, ... and
// stops after the first batch with a failure, so a set that cannot
// create pods makes one failing request per sync, not hundreds.
func slowStart(steps []step, fn func(step) error) error {
	done := 0
	for batch := 1; done < len(steps); batch = min(2*batch, maxBatch) {
		n := min(batch, len(steps)-done)
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() { errs[i] = fn(steps[done+i]) })
		}
		wg.Wait()
		done += n
		if err := utilerrors.NewAggregate(errs); err != nil {
			return err
		}
	}
	return nil
}

func (c *ssController) do(ctx context.Context, key string, set *appsv1.StatefulSet, st step) error {
	switch st.kind {
	case stepCreate:
		c.expectations.RaiseExpectations(key, 1, nil)
		if err := c.createPod(ctx, set, st); err != nil {
			c.expectations.LowerExpectations(key, 1, nil)
			return err
		}
	case stepDelete:
		c.expectations.RaiseExpectations(key, 0, []string{podKey(st.pod)})
		if err := c.deletePodNow(ctx, set, st.pod); err != nil {
			c.expectations.DeletionObserved(key, podKey(st.pod))
			if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				return err
			}
		}
	case stepFixIdentity:
		return c.fixIdentity(ctx, set, st.pod)
	case stepCreateClaims:
		return c.createClaims(ctx, set, st.pod, st.claims)
	case stepClaimOwners:
		return c.setClaimOwners(ctx, set, st.pod, st.claims)
	}
	return nil
}

// createPod creates the pod's missing claims, then the pod.
func (c *ssController) createPod(ctx context.Context, set *appsv1.StatefulSet, st step) error {
	if err := c.createClaims(ctx, set, st.pod, st.claims); err != nil {
		c.podEvent(set, st.pod, "create", err)
		return err
	}
	_, err := c.client.CoreV1().Pods(set.Namespace).Create(ctx, st.pod, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// The cache is behind: the next sync sees the pod.
		return err
	}
	if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return nil
	}
	c.podEvent(set, st.pod, "create", err)
	if err == nil {
		c.log.Debug("created pod", "statefulSet", keyOf(set), "pod", st.pod.Name, "why", st.why)
	}
	return err
}

func (c *ssController) createClaims(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, claims []*corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, claim := range claims {
		_, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Create(ctx, claim, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			continue
		}
		c.claimEvent(set, pod, claim, "create", err)
		if err != nil {
			errs = append(errs, fmt.Errorf("failed to create PVC %s: %w", claim.Name, err))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// deletePodNow deletes pod, only if it is still the pod the plan saw: a
// stale cache must never delete the replacement of the same name.
func (c *ssController) deletePodNow(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return err
	}
	c.podEvent(set, pod, "delete", err)
	return err
}

func (c *ssController) fixIdentity(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod) error {
	cp := pod.DeepCopy()
	setIdentity(set, cp)
	_, err := c.client.CoreV1().Pods(cp.Namespace).Update(ctx, cp, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone or changed: the next sync looks again.
		return nil
	}
	c.podEvent(set, pod, "update", err)
	return err
}

func (c *ssController) setClaimOwners(ctx context.Context, set *appsv1.StatefulSet, pod *corev1.Pod, claims []*corev1.PersistentVolumeClaim) error {
	var errs []error
	for _, claim := range claims {
		_, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Update(ctx, claim, metav1.UpdateOptions{})
		switch {
		case apierrors.IsNotFound(err):
		case apierrors.IsConflict(err):
			// Changed since the cache saw it: retry with a fresh copy.
			errs = append(errs, err)
		case err != nil:
			c.claimEvent(set, pod, claim, "update", err)
			errs = append(errs, err)
		default:
			c.log.Debug("claim owners set", "statefulSet", keyOf(set), "claim", claim.Name, "owners", len(claim.OwnerReferences))
		}
	}
	return utilerrors.NewAggregate(errs)
}

// podEvent records "create Pod web-0 in StatefulSet web successful", or
// the failure, as upstream words them.
func (c *ssController) podEvent(set *appsv1.StatefulSet, pod *corev1.Pod, verb string, err error) {
	if err == nil {
		c.recorder.Eventf(set, corev1.EventTypeNormal, "Successful"+title(verb),
			"%s Pod %s in StatefulSet %s successful", verb, pod.Name, set.Name)
		return
	}
	c.recorder.Eventf(set, corev1.EventTypeWarning, "Failed"+title(verb),
		"%s Pod %s in StatefulSet %s failed error: %s", verb, pod.Name, set.Name, err)
}

func (c *ssController) claimEvent(set *appsv1.StatefulSet, pod *corev1.Pod, claim *corev1.PersistentVolumeClaim, verb string, err error) {
	if err == nil {
		c.recorder.Eventf(set, corev1.EventTypeNormal, "Successful"+title(verb),
			"%s Claim %s Pod %s in StatefulSet %s success", verb, claim.Name, pod.Name, set.Name)
		return
	}
	c.recorder.Eventf(set, corev1.EventTypeWarning, "Failed"+title(verb),
		"%s Claim %s for Pod %s in StatefulSet %s failed error: %s", verb, claim.Name, pod.Name, set.Name, err)
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
