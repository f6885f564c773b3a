package registry

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// This file validates the parts of a Job that describe outcomes: the pod
// failure and success policies, the index-list strings they and the status
// use, and the status itself.

const (
	maxPodFailurePolicyRules      = 20
	maxPodFailurePolicyExitCodes  = 255
	maxPodFailurePolicyConditions = 20
	maxSuccessPolicyRules         = 20
	maxSuccessPolicyIndexesLength = 64 * 1024
)

var (
	podFailurePolicyActions = []batchv1.PodFailurePolicyAction{
		batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionIgnore,
	}
	podFailurePolicyOperators = []batchv1.PodFailurePolicyOnExitCodesOperator{
		batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyOnExitCodesOpNotIn,
	}
	conditionStatuses = []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionTrue, corev1.ConditionUnknown}
)

func validatePodFailurePolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.PodFailurePolicy.Rules
	if len(rules) > maxPodFailurePolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxPodFailurePolicyRules))
	}
	containers := map[string]bool{}
	for _, c := range spec.Template.Spec.Containers {
		containers[c.Name] = true
	}
	for _, c := range spec.Template.Spec.InitContainers {
		containers[c.Name] = true
	}
	for i := range rules {
		allErrs = append(allErrs, validatePodFailurePolicyRule(spec, &rules[i], rulesPath.Index(i), containers)...)
	}
	return allErrs
}

func validatePodFailurePolicyRule(spec *batchv1.JobSpec, rule *batchv1.PodFailurePolicyRule, p *field.Path, containers map[string]bool) field.ErrorList {
	var allErrs field.ErrorList
	actionPath := p.Child("action")
	switch {
	case rule.Action == "":
		allErrs = append(allErrs, field.Required(actionPath, fmt.Sprintf("valid values: %q", podFailurePolicyActions)))
	case rule.Action == batchv1.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			allErrs = append(allErrs, field.Invalid(actionPath, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !slices.Contains(podFailurePolicyActions, rule.Action):
		allErrs = append(allErrs, field.NotSupported(actionPath, rule.Action, podFailurePolicyActions))
	}
	if rule.OnExitCodes != nil {
		allErrs = append(allErrs, validateOnExitCodes(rule.OnExitCodes, p.Child("onExitCodes"), containers)...)
	}
	if len(rule.OnPodConditions) > 0 {
		cp := p.Child("onPodConditions")
		if len(rule.OnPodConditions) > maxPodFailurePolicyConditions {
			allErrs = append(allErrs, field.TooMany(cp, len(rule.OnPodConditions), maxPodFailurePolicyConditions))
		}
		for j, pattern := range rule.OnPodConditions {
			pp := cp.Index(j)
			for _, msg := range utilvalidation.IsQualifiedName(string(pattern.Type)) {
				allErrs = append(allErrs, field.Invalid(pp.Child("type"), pattern.Type, msg))
			}
			switch {
			case pattern.Status == "":
				allErrs = append(allErrs, field.Required(pp.Child("status"), fmt.Sprintf("valid values: %q", conditionStatuses)))
			case !slices.Contains(conditionStatuses, pattern.Status):
				allErrs = append(allErrs, field.NotSupported(pp.Child("status"), pattern.Status, conditionStatuses))
			}
		}
	}
	switch {
	case rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0:
		allErrs = append(allErrs, field.Invalid(p, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	case rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0:
		allErrs = append(allErrs, field.Invalid(p, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return allErrs
}

func validateOnExitCodes(req *batchv1.PodFailurePolicyOnExitCodesRequirement, p *field.Path, containers map[string]bool) field.ErrorList {
	var allErrs field.ErrorList
	switch {
	case req.Operator == "":
		allErrs = append(allErrs, field.Required(p.Child("operator"), fmt.Sprintf("valid values: %q", podFailurePolicyOperators)))
	case !slices.Contains(podFailurePolicyOperators, req.Operator):
		allErrs = append(allErrs, field.NotSupported(p.Child("operator"), req.Operator, podFailurePolicyOperators))
	}
	if req.ContainerName != nil && !containers[*req.ContainerName] {
		allErrs = append(allErrs, field.Invalid(p.Child("containerName"), *req.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	vp := p.Child("values")
	switch {
	case len(req.Values) == 0:
		allErrs = append(allErrs, field.Invalid(vp, req.Values, "at least one value is required"))
	case len(req.Values) > maxPodFailurePolicyExitCodes:
		allErrs = append(allErrs, field.TooMany(vp, len(req.Values), maxPodFailurePolicyExitCodes))
	}
	seen := map[int32]bool{}
	ordered := true
	for i, v := range req.Values {
		if req.Operator == batchv1.PodFailurePolicyOnExitCodesOpIn && v == 0 {
			allErrs = append(allErrs, field.Invalid(vp.Index(i), v, "must not be 0 for the In operator"))
		}
		if seen[v] {
			allErrs = append(allErrs, field.Duplicate(vp.Index(i), v))
		}
		seen[v] = true
		if i > 0 && req.Values[i-1] > v {
			ordered = false
		}
	}
	if !ordered {
		allErrs = append(allErrs, field.Invalid(vp, req.Values, "must be ordered"))
	}
	return allErrs
}

func validateSuccessPolicy(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		allErrs = append(allErrs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRules))
	}
	completions := derefInt32(spec.Completions)
	for i, rule := range rules {
		p := rulesPath.Index(i)
		if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
			allErrs = append(allErrs, field.Required(p, "at least one of succeededCount or succeededIndexes must be specified"))
		}
		var total int32
		if rule.SucceededIndexes != nil {
			ip := p.Child("succeededIndexes")
			if len(*rule.SucceededIndexes) > maxSuccessPolicyIndexesLength {
				allErrs = append(allErrs, field.TooLong(ip, *rule.SucceededIndexes, maxSuccessPolicyIndexesLength))
			}
			var err error
			if total, err = countIndexes(*rule.SucceededIndexes, completions); err != nil {
				allErrs = append(allErrs, field.Invalid(ip, *rule.SucceededIndexes, "error parsing succeededIndexes: "+err.Error()))
			}
		}
		if rule.SucceededCount != nil {
			cp, n := p.Child("succeededCount"), *rule.SucceededCount
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(n), cp)...)
			if n > completions {
				allErrs = append(allErrs, field.Invalid(cp, n, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
			}
			if rule.SucceededIndexes != nil && n > total {
				allErrs = append(allErrs, field.Invalid(cp, n, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total)))
			}
		}
	}
	return allErrs
}

// indexInterval is one element of an index list such as "1,3-5,7".
type indexInterval struct{ first, last int32 }

// parseIndexInterval parses "N" or "N-M" with every index below completions.
func parseIndexInterval(s string, completions int32) (indexInterval, error) {
	parts := strings.Split(s, "-")
	if len(parts) > 2 {
		return indexInterval{}, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", s)
	}
	var bounds [2]int32
	for i, part := range parts {
		n, err := strconv.Atoi(part)
		if err != nil {
			return indexInterval{}, fmt.Errorf("cannot convert string to integer for index: %q", part)
		}
		if n >= int(completions) {
			return indexInterval{}, fmt.Errorf("too large index: %q", part)
		}
		bounds[i] = int32(n)
	}
	if len(parts) == 1 {
		return indexInterval{bounds[0], bounds[0]}, nil
	}
	if bounds[0] >= bounds[1] {
		return indexInterval{}, fmt.Errorf("non-increasing order, previous: %d, current: %d", bounds[0], bounds[1])
	}
	return indexInterval{bounds[0], bounds[1]}, nil
}

// countIndexes validates an index list (increasing, below completions) and
// returns how many indexes it names.
func countIndexes(list string, completions int32) (int32, error) {
	if list == "" {
		return 0, nil
	}
	var total int32
	var last *int32
	for _, s := range strings.Split(list, ",") {
		iv, err := parseIndexInterval(s, completions)
		if err != nil {
			return 0, err
		}
		if last != nil && *last >= iv.first {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", *last, iv.first)
		}
		total += iv.last - iv.first + 1
		last = &iv.last
	}
	return total, nil
}

// indexListsOverlap reports the first index present in both lists. Parts
// that do not parse are skipped: the format checks report them.
func indexListsOverlap(completed, failed string, completions int32) error {
	if completed == "" || failed == "" {
		return nil
	}
	parse := func(list string) []indexInterval {
		var out []indexInterval
		for _, s := range strings.Split(list, ",") {
			if iv, err := parseIndexInterval(s, completions); err == nil {
				out = append(out, iv)
			}
		}
		return out
	}
	cs, fs := parse(completed), parse(failed)
	for i, k := 0, 0; i < len(cs) && k < len(fs); {
		c, f := cs[i], fs[k]
		if c.first <= f.last && f.first <= c.last {
			return fmt.Errorf("failedIndexes and completedIndexes overlap at index: %d", max(c.first, f.first))
		}
		if c.first <= f.first {
			i++
		} else {
			k++
		}
	}
	return nil
}

func jobFinished(j *batchv1.Job) bool {
	return jobConditionHeld(j, batchv1.JobComplete) || jobConditionHeld(j, batchv1.JobFailed)
}

// jobConditionHeld reports any true condition of the type, as validation
// (unlike the printer) considers every entry.
func jobConditionHeld(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// validateJobStatusUpdate holds job status writes to the rules that let
// clients trust a job's outcome even when a controller other than the
// built-in one writes it (spec.managedBy): terminal states stay terminal,
// counters only grow, and times and conditions agree with each other. A
// rule about a field is enforced when that field changes, so a job whose
// status was already off can still be updated.
func validateJobStatusUpdate(obj, old runtime.Object) field.ErrorList {
	j, o := obj.(*batchv1.Job), old.(*batchv1.Job)
	p := field.NewPath("status")
	s, os := &j.Status, &o.Status
	cp := p.Child("conditions")

	allErrs := nonNegativeCounts(p, []namedCount{{"active", s.Active}, {"succeeded", s.Succeeded}, {"failed", s.Failed}})
	if s.Ready != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*s.Ready), p.Child("ready"))...)
	}
	if s.Terminating != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*s.Terminating), p.Child("terminating"))...)
	}
	allErrs = append(allErrs, validateUncounted(s.UncountedTerminatedPods, p.Child("uncountedTerminatedPods"))...)

	complete, failed := jobConditionHeld(j, batchv1.JobComplete), jobConditionHeld(j, batchv1.JobFailed)
	failureTarget, successMet := jobConditionHeld(j, batchv1.JobFailureTarget), jobConditionHeld(j, batchv1.JobSuccessCriteriaMet)
	finished := complete || failed
	completeChanged := complete != jobConditionHeld(o, batchv1.JobComplete)
	failedChanged := failed != jobConditionHeld(o, batchv1.JobFailed)
	finishedChanged := finished != jobFinished(o)
	startChanged := !equality.Semantic.DeepEqual(s.StartTime, os.StartTime)
	completionChanged := !equality.Semantic.DeepEqual(s.CompletionTime, os.CompletionTime)
	completedIdxChanged := s.CompletedIndexes != os.CompletedIndexes
	failedIdxChanged := !equality.Semantic.DeepEqual(s.FailedIndexes, os.FailedIndexes)

	if (completeChanged || failedChanged) && complete && failed {
		allErrs = append(allErrs, field.Invalid(cp, field.OmitValueType{}, "cannot set Complete=True and Failed=true conditions"))
	}
	if (completeChanged || failureTarget != jobConditionHeld(o, batchv1.JobFailureTarget)) && complete && failureTarget {
		allErrs = append(allErrs, field.Invalid(cp, field.OmitValueType{}, "cannot set Complete=True and FailureTarget=true conditions"))
	}
	if completeChanged || completionChanged {
		if s.CompletionTime != nil && !complete {
			allErrs = append(allErrs, field.Invalid(p.Child("completionTime"), s.CompletionTime, "cannot set completionTime when there is no Complete=True condition"))
		}
		if s.CompletionTime == nil && complete {
			allErrs = append(allErrs, field.Required(p.Child("completionTime"), "completionTime is required for Complete jobs"))
		}
	}
	if (startChanged || completionChanged) && s.StartTime != nil && s.CompletionTime != nil && s.CompletionTime.Before(s.StartTime) {
		allErrs = append(allErrs, field.Invalid(p.Child("completionTime"), s.CompletionTime, "completionTime cannot be set before startTime"))
	}
	if (finishedChanged || s.Active != os.Active) && finished && s.Active > 0 {
		allErrs = append(allErrs, field.Invalid(p.Child("active"), s.Active, "active>0 is invalid for finished job"))
	}
	if (finishedChanged || startChanged) && finished && s.StartTime == nil {
		allErrs = append(allErrs, field.Required(p.Child("startTime"), "startTime is required for finished job"))
	}
	if u := s.UncountedTerminatedPods; (finishedChanged || !equality.Semantic.DeepEqual(u, os.UncountedTerminatedPods)) && finished && u != nil && len(u.Failed)+len(u.Succeeded) > 0 {
		allErrs = append(allErrs, field.Invalid(p.Child("uncountedTerminatedPods"), u, "uncountedTerminatedPods needs to be empty for finished job"))
	}
	allErrs = append(allErrs, validateStatusIndexes(j, p, completedIdxChanged, failedIdxChanged)...)
	if successMet && failed {
		allErrs = append(allErrs, field.Invalid(cp, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True and Failed=true conditions"))
	}
	if successMet && failureTarget {
		allErrs = append(allErrs, field.Invalid(cp, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"))
	}
	if j.Spec.SuccessPolicy != nil && !successMet && complete {
		allErrs = append(allErrs, field.Invalid(cp, field.OmitValueType{}, "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"))
	}

	// Transitions from the stored status.
	for _, t := range []batchv1.JobConditionType{batchv1.JobFailed, batchv1.JobComplete, batchv1.JobFailureTarget} {
		if jobConditionHeld(o, t) && !jobConditionHeld(j, t) {
			allErrs = append(allErrs, field.Invalid(cp, field.OmitValueType{}, fmt.Sprintf("cannot disable the terminal %s=True condition", t)))
		}
	}
	if s.Failed < os.Failed {
		allErrs = append(allErrs, field.Invalid(p.Child("failed"), s.Failed, "cannot decrease the failed counter"))
	}
	// An elastic indexed job scaled down may lose succeeded indexes.
	elastic := isIndexedJob(&j.Spec) && equality.Semantic.DeepEqual(j.Spec.Completions, j.Spec.Parallelism)
	if !elastic && s.Succeeded < os.Succeeded {
		allErrs = append(allErrs, field.Invalid(p.Child("succeeded"), s.Succeeded, "cannot decrease the succeeded counter"))
	}
	if s.CompletionTime != nil && os.CompletionTime != nil && !s.CompletionTime.Equal(os.CompletionTime) {
		allErrs = append(allErrs, field.Invalid(p.Child("completionTime"), s.CompletionTime, "completionTime cannot be mutated"))
	}
	// A job being resumed (Suspended=True → not) restarts its clock in the
	// same write, as upstream allows since kubernetes#134769.
	resumed := jobConditionHeld(o, batchv1.JobSuspended) && !jobConditionHeld(j, batchv1.JobSuspended)
	if os.StartTime != nil && startChanged && (j.Spec.Suspend == nil || !*j.Spec.Suspend) && !resumed {
		allErrs = append(allErrs, field.Required(p.Child("startTime"), "startTime cannot be removed for unsuspended job"))
	}
	if jobConditionHeld(o, batchv1.JobSuccessCriteriaMet) && !successMet {
		allErrs = append(allErrs, field.Invalid(cp, field.OmitValueType{}, "cannot disable the SuccessCriteriaMet=True condition"))
	}
	if jobConditionHeld(o, batchv1.JobComplete) && !jobConditionHeld(o, batchv1.JobSuccessCriteriaMet) && successMet {
		allErrs = append(allErrs, field.Invalid(cp, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
	}
	return allErrs
}

func validateUncounted(u *batchv1.UncountedTerminatedPods, p *field.Path) field.ErrorList {
	if u == nil {
		return nil
	}
	var allErrs field.ErrorList
	seen := map[types.UID]bool{}
	for _, list := range []struct {
		name string
		uids []types.UID
	}{{"succeeded", u.Succeeded}, {"failed", u.Failed}} {
		for i, uid := range list.uids {
			ip := p.Child(list.name).Index(i)
			switch {
			case uid == "":
				allErrs = append(allErrs, field.Invalid(ip, uid, "must not be empty"))
			case seen[uid]:
				allErrs = append(allErrs, field.Duplicate(ip, uid))
			default:
				seen[uid] = true
			}
		}
	}
	return allErrs
}

// validateStatusIndexes checks the completed and failed index lists of an
// indexed job's status, when they change.
func validateStatusIndexes(j *batchv1.Job, p *field.Path, completedChanged, failedChanged bool) field.ErrorList {
	var allErrs field.ErrorList
	s := &j.Status
	if completedChanged {
		if j.Spec.Completions != nil {
			if _, err := countIndexes(s.CompletedIndexes, *j.Spec.Completions); err != nil {
				allErrs = append(allErrs, field.Invalid(p.Child("completedIndexes"), s.CompletedIndexes, "error parsing completedIndexes: "+err.Error()))
			}
		}
		if s.CompletedIndexes != "" && !isIndexedJob(&j.Spec) {
			allErrs = append(allErrs, field.Invalid(p.Child("completedIndexes"), s.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode"))
		}
	}
	if failedChanged {
		if j.Spec.Completions != nil && j.Spec.BackoffLimitPerIndex != nil && s.FailedIndexes != nil {
			if _, err := countIndexes(*s.FailedIndexes, *j.Spec.Completions); err != nil {
				allErrs = append(allErrs, field.Invalid(p.Child("failedIndexes"), s.FailedIndexes, "error parsing failedIndexes: "+err.Error()))
			}
		}
		if j.Spec.BackoffLimitPerIndex == nil && s.FailedIndexes != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("failedIndexes"), *s.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
		}
	}
	if (completedChanged || failedChanged) && j.Spec.Completions != nil && s.FailedIndexes != nil {
		if err := indexListsOverlap(s.CompletedIndexes, *s.FailedIndexes, *j.Spec.Completions); err != nil {
			allErrs = append(allErrs, field.Invalid(p.Child("failedIndexes"), *s.FailedIndexes, err.Error()))
		}
	}
	return allErrs
}
