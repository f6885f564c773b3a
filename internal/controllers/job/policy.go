package job

import (
	"fmt"
	"slices"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// failureVerdict is what spec.podFailurePolicy says about one failed pod.
type failureVerdict struct {
	// action is the matched rule's action; empty when no rule matched.
	action batchv1.PodFailurePolicyAction
	// counts: the failure counts towards backoffLimit (and
	// backoffLimitPerIndex). Only an Ignore rule makes it not count.
	counts bool
	// failJob is the job's failure message when a FailJob rule matched.
	failJob string
}

// matchPodFailurePolicy runs a failed pod through the policy's rules in
// order; the first rule that matches decides. A rule matches on exit
// codes (a terminated container, init containers after the others,
// exit code 0 never matching) or on pod conditions (type and status).
// With no policy, or no matching rule, the failure simply counts.
func matchPodFailurePolicy(policy *batchv1.PodFailurePolicy, pod *corev1.Pod) failureVerdict {
	if policy == nil {
		return failureVerdict{counts: true}
	}
	for i, rule := range policy.Rules {
		var failJob string
		switch {
		case rule.OnExitCodes != nil:
			cs := matchOnExitCodes(&pod.Status, rule.OnExitCodes)
			if cs == nil {
				continue
			}
			failJob = fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
				cs.Name, pod.Namespace, pod.Name, cs.State.Terminated.ExitCode, rule.Action, i)
		case rule.OnPodConditions != nil:
			c := matchOnPodConditions(&pod.Status, rule.OnPodConditions)
			if c == nil {
				continue
			}
			failJob = fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d",
				pod.Namespace, pod.Name, c.Type, rule.Action, i)
		default:
			continue
		}
		switch rule.Action {
		case batchv1.PodFailurePolicyActionIgnore:
			return failureVerdict{action: rule.Action}
		case batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex:
			return failureVerdict{action: rule.Action, counts: true}
		case batchv1.PodFailurePolicyActionFailJob:
			return failureVerdict{action: rule.Action, counts: true, failJob: failJob}
		}
		// An action this version does not know: as upstream, the rule
		// is passed over and the next one gets its chance.
	}
	return failureVerdict{counts: true}
}

func matchOnExitCodes(st *corev1.PodStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	if cs := matchingContainer(st.ContainerStatuses, req); cs != nil {
		return cs
	}
	return matchingContainer(st.InitContainerStatuses, req)
}

func matchingContainer(statuses []corev1.ContainerStatus, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for i := range statuses {
		cs := &statuses[i]
		term := cs.State.Terminated
		if term == nil || term.ExitCode == 0 {
			continue
		}
		if req.ContainerName != nil && *req.ContainerName != cs.Name {
			continue
		}
		in := slices.Contains(req.Values, term.ExitCode)
		if (req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && in) ||
			(req.Operator == batchv1.PodFailurePolicyOnExitCodesOpNotIn && !in) {
			return cs
		}
	}
	return nil
}

func matchOnPodConditions(st *corev1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		for _, p := range patterns {
			if c.Type == p.Type && c.Status == p.Status {
				return c
			}
		}
	}
	return nil
}

// matchSuccessPolicy reports whether an Indexed job's succeeded indexes
// meet one of spec.successPolicy's rules, and the message naming it. A
// rule with succeededIndexes needs all of them (or succeededCount of
// them); a rule with only succeededCount needs that many of any.
func matchSuccessPolicy(policy *batchv1.SuccessPolicy, completions int, succeeded intervals) (string, bool) {
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		met := false
		switch {
		case rule.SucceededIndexes != nil:
			required := parseIntervals(*rule.SucceededIndexes, completions)
			if len(required) == 0 {
				continue
			}
			have := overlap(required, succeeded)
			met = have == required.total() || (rule.SucceededCount != nil && have >= int(*rule.SucceededCount))
		case rule.SucceededCount != nil:
			met = succeeded.total() >= int(*rule.SucceededCount)
		}
		if met {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}

// overlap counts the indexes two lists share, walking both once.
func overlap(a, b intervals) int {
	n, i, j := 0, 0, 0
	for i < len(a) && j < len(b) {
		if o := min(a[i].last, b[j].last) - max(a[i].first, b[j].first) + 1; o > 0 {
			n += o
		}
		if a[i].last < b[j].last {
			i++
		} else {
			j++
		}
	}
	return n
}
