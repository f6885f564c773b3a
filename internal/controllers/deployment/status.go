package deployment

import (
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Condition reasons, as upstream writes them (kubectl and dashboards
// match on these strings).
const (
	ReasonReplicaSetUpdated      = "ReplicaSetUpdated"
	ReasonFailedRSCreate         = "ReplicaSetCreateError"
	ReasonNewReplicaSetCreated   = "NewReplicaSetCreated"
	ReasonFoundNewReplicaSet     = "FoundNewReplicaSet"
	ReasonNewReplicaSetAvailable = "NewReplicaSetAvailable"
	ReasonProgressDeadline       = "ProgressDeadlineExceeded"
	ReasonPaused                 = "DeploymentPaused"
	ReasonResumed                = "DeploymentResumed"
	ReasonMinimumAvailable       = "MinimumReplicasAvailable"
	ReasonMinimumUnavailable     = "MinimumReplicasUnavailable"
)

// resolveFenceposts turns maxSurge and maxUnavailable into counts for
// desired replicas: surge rounds up, unavailable rounds down, and when
// both come to 0 one replica may be unavailable, else nothing could move.
func resolveFenceposts(surge, unavailable *intstr.IntOrString, desired int32) (int32, int32) {
	s := scaledValue(surge, desired, true)
	u := scaledValue(unavailable, desired, false)
	if s == 0 && u == 0 {
		u = 1
	}
	return s, u
}

// scaledValue resolves an int-or-percent; an invalid value (which
// validation rejects) counts as 0.
func scaledValue(v *intstr.IntOrString, total int32, roundUp bool) int32 {
	zero := intstr.FromInt32(0)
	n, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(v, zero), int(total), roundUp)
	if err != nil || n < 0 {
		return 0
	}
	return int32(n)
}

func isRollingUpdate(d *appsv1.Deployment) bool {
	return d.Spec.Strategy.Type == appsv1.RollingUpdateDeploymentStrategyType
}

func rollingParams(d *appsv1.Deployment) (surge, unavailable *intstr.IntOrString) {
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil {
		return ru.MaxSurge, ru.MaxUnavailable
	}
	return nil, nil
}

// maxSurge is how many pods above spec.replicas a rollout may run.
func maxSurge(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) {
		return 0
	}
	s, u := rollingParams(d)
	surge, _ := resolveFenceposts(s, u, *d.Spec.Replicas)
	return surge
}

// maxUnavailable is how many of spec.replicas may be unavailable; 0 for
// Recreate (whose Available condition thus needs every replica).
func maxUnavailable(d *appsv1.Deployment) int32 {
	if !isRollingUpdate(d) || *d.Spec.Replicas == 0 {
		return 0
	}
	s, u := rollingParams(d)
	_, unavailable := resolveFenceposts(s, u, *d.Spec.Replicas)
	return min(unavailable, *d.Spec.Replicas)
}

func hasProgressDeadline(d *appsv1.Deployment) bool {
	return d.Spec.ProgressDeadlineSeconds != nil && *d.Spec.ProgressDeadlineSeconds != math.MaxInt32
}

func hasRevisionHistoryLimit(d *appsv1.Deployment) bool {
	return d.Spec.RevisionHistoryLimit != nil && *d.Spec.RevisionHistoryLimit != math.MaxInt32
}

func newCondition(t appsv1.DeploymentConditionType, s corev1.ConditionStatus, reason, msg string, now metav1.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: t, Status: s, Reason: reason, Message: msg, LastUpdateTime: now, LastTransitionTime: now}
}

func getCondition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

// setCondition adds or replaces a condition. Same status and reason:
// nothing changes (not even lastUpdateTime). Same status: the transition
// time is kept.
func setCondition(s *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(s, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	removeCondition(s, c.Type)
	s.Conditions = append(s.Conditions, c)
}

func removeCondition(s *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	var out []appsv1.DeploymentCondition
	for _, c := range s.Conditions {
		if c.Type != t {
			out = append(out, c)
		}
	}
	s.Conditions = out
}

// calculateStatus sums the replica sets into a status and sets the
// Available condition; other conditions are carried over.
func calculateStatus(d *appsv1.Deployment, all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet, now metav1.Time) appsv1.DeploymentStatus {
	available := availableReplicas(all)
	unavailable := max(specReplicas(all)-available, 0)
	var updated int32
	if newRS != nil {
		updated = newRS.Status.Replicas
	}
	st := appsv1.DeploymentStatus{
		ObservedGeneration:  d.Generation,
		Replicas:            statusReplicas(all),
		UpdatedReplicas:     updated,
		ReadyReplicas:       readyReplicas(all),
		AvailableReplicas:   available,
		UnavailableReplicas: unavailable,
		TerminatingReplicas: terminatingReplicas(all),
		CollisionCount:      d.Status.CollisionCount,
		Conditions:          append([]appsv1.DeploymentCondition(nil), d.Status.Conditions...),
	}
	if available >= *d.Spec.Replicas-maxUnavailable(d) {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, ReasonMinimumAvailable, "Deployment has minimum availability.", now))
	} else {
		setCondition(&st, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, ReasonMinimumUnavailable, "Deployment does not have minimum availability.", now))
	}
	return st
}

// deploymentComplete: every replica runs the new template and is
// available, and the spec was observed.
func deploymentComplete(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	r := *d.Spec.Replicas
	return s.UpdatedReplicas == r && s.Replicas == r && s.AvailableReplicas == r && s.ObservedGeneration >= d.Generation
}

// deploymentProgressing: compared with the last status, more pods run
// the new template, fewer run old ones, or more are ready or available.
func deploymentProgressing(d *appsv1.Deployment, s *appsv1.DeploymentStatus) bool {
	old := d.Status
	oldOld := old.Replicas - old.UpdatedReplicas
	newOld := s.Replicas - s.UpdatedReplicas
	return s.UpdatedReplicas > old.UpdatedReplicas || newOld < oldOld ||
		s.ReadyReplicas > old.ReadyReplicas || s.AvailableReplicas > old.AvailableReplicas
}

// deploymentTimedOut: the Progressing condition was last updated more
// than progressDeadlineSeconds ago (and does not record a finished
// rollout).
func deploymentTimedOut(d *appsv1.Deployment, s *appsv1.DeploymentStatus, now time.Time) bool {
	if !hasProgressDeadline(d) {
		return false
	}
	c := getCondition(s, appsv1.DeploymentProgressing)
	if c == nil || c.Reason == ReasonNewReplicaSetAvailable {
		return false
	}
	if c.Reason == ReasonProgressDeadline {
		return true
	}
	deadline := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second)
	return deadline.Before(now)
}

// replicaFailures promotes ReplicaFailure conditions of the replica sets
// (the new one's first) to the deployment.
func replicaFailures(all []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) []appsv1.DeploymentCondition {
	conv := func(rs *appsv1.ReplicaSet) []appsv1.DeploymentCondition {
		var out []appsv1.DeploymentCondition
		for _, c := range rs.Status.Conditions {
			if c.Type != appsv1.ReplicaSetReplicaFailure {
				continue
			}
			out = append(out, appsv1.DeploymentCondition{
				Type: appsv1.DeploymentConditionType(c.Type), Status: c.Status,
				LastTransitionTime: c.LastTransitionTime, LastUpdateTime: c.LastTransitionTime,
				Reason: c.Reason, Message: c.Message,
			})
		}
		return out
	}
	if newRS != nil {
		if out := conv(newRS); len(out) > 0 {
			return out
		}
	}
	var out []appsv1.DeploymentCondition
	for _, rs := range all {
		if rs != nil {
			out = append(out, conv(rs)...)
		}
	}
	return out
}

// requeueForDeadline is when the Progressing condition in s would time
// out, so the deployment is looked at again then even if nothing else
// happens; 0 when no deadline is pending.
func requeueForDeadline(d *appsv1.Deployment, s *appsv1.DeploymentStatus, now time.Time) time.Duration {
	c := getCondition(s, appsv1.DeploymentProgressing)
	if !hasProgressDeadline(d) || c == nil {
		return 0
	}
	if deploymentComplete(d, s) || c.Reason == ReasonProgressDeadline || c.Reason == ReasonNewReplicaSetAvailable {
		return 0
	}
	after := c.LastUpdateTime.Add(time.Duration(*d.Spec.ProgressDeadlineSeconds) * time.Second).Sub(now)
	if after < time.Second {
		// The deadline is a strict "before": look just after it.
		return max(after, 0) + 50*time.Millisecond
	}
	// Stored times keep whole seconds only; a second of slack makes sure
	// the deadline has passed when we look.
	return after + time.Second
}
