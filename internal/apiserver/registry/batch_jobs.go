package registry

import (
	"fmt"
	"maps"
	"math"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The unprefixed labels the job controller has always put on its pods;
// Kubernetes still sets and checks them next to the batch.kubernetes.io ones.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// Indexed jobs' status spells out completed and failed indexes; these caps
// bound how long those strings can grow.
const (
	maxParallelismForIndexedJob   = 100000
	maxFailedIndexesForIndexedJob = 100000
	completionsSoftLimit          = 100000
	parallelismLimitForHighCompl  = 10000
	maxFailedIndexesForHighCompl  = 10000
)

const maxManagedByLength = 63

func defaultJob(obj runtime.Object) {
	j := obj.(*batchv1.Job)
	spec := &j.Spec
	// A job that says nothing about either runs one pod to completion.
	if spec.Completions == nil && spec.Parallelism == nil {
		spec.Completions = new(int32(1))
	}
	if spec.Parallelism == nil {
		spec.Parallelism = new(int32(1))
	}
	if spec.BackoffLimit == nil {
		if spec.BackoffLimitPerIndex != nil {
			// Per-index limits replace the global one rather than add to it.
			spec.BackoffLimit = new(int32(math.MaxInt32))
		} else {
			spec.BackoffLimit = new(int32(6))
		}
	}
	// The job takes its template's labels when it has none. Upstream shares
	// the very map, so the selector labels PrepareForCreate adds to the
	// template show up on the job too; sharing it here keeps that result.
	if j.Spec.Template.Labels != nil && len(j.Labels) == 0 {
		j.Labels = j.Spec.Template.Labels
	}
	if spec.CompletionMode == nil {
		spec.CompletionMode = new(batchv1.NonIndexedCompletion)
	}
	if spec.Suspend == nil {
		spec.Suspend = new(false)
	}
	if spec.PodReplacementPolicy == nil {
		// A pod failure policy must see pods fully terminated to judge them.
		if spec.PodFailurePolicy != nil {
			spec.PodReplacementPolicy = new(batchv1.Failed)
		} else {
			spec.PodReplacementPolicy = new(batchv1.TerminatingOrFailed)
		}
	}
	if spec.ManualSelector == nil {
		spec.ManualSelector = new(false)
	}
	defaultJobSpecTemplate(spec)
}

// defaultJobSpecTemplate holds the defaults a JobSpec gets wherever it sits,
// in a Job or in a CronJob's jobTemplate (which gets none of the Job's own).
func defaultJobSpecTemplate(spec *batchv1.JobSpec) {
	if spec.PodFailurePolicy != nil {
		for i := range spec.PodFailurePolicy.Rules {
			for k := range spec.PodFailurePolicy.Rules[i].OnPodConditions {
				if c := &spec.PodFailurePolicy.Rules[i].OnPodConditions[k]; c.Status == "" {
					c.Status = corev1.ConditionTrue
				}
			}
		}
	}
	DefaultPodSpec(&spec.Template.Spec)
}

// prepareJobCreate generates the selector unless the user chose one: a
// selector on the job's uid cannot match any other controller's pods. The
// uid is already set when this runs.
func prepareJobCreate(obj runtime.Object) {
	j := obj.(*batchv1.Job)
	if j.Spec.ManualSelector == nil || !*j.Spec.ManualSelector {
		generateJobSelector(j)
	}
	if len(j.Labels) == 0 && j.Spec.Template.Labels != nil {
		// Upstream fills these on every read of such a job; storing them
		// gives the same answer.
		j.Labels = maps.Clone(j.Spec.Template.Labels)
	}
	j.Status = batchv1.JobStatus{}
}

func generateJobSelector(j *batchv1.Job) {
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	// Labels the user already set are left alone; validation rejects them
	// if they conflict.
	for _, l := range []struct{ key, value string }{
		{legacyJobNameLabel, j.Name},
		{batchv1.JobNameLabel, j.Name},
		{legacyControllerUIDLabel, string(j.UID)},
		{batchv1.ControllerUidLabel, string(j.UID)},
	} {
		if _, ok := j.Spec.Template.Labels[l.key]; !ok {
			j.Spec.Template.Labels[l.key] = l.value
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
}

func validateJob(obj runtime.Object) field.ErrorList {
	return validateJobObject(obj.(*batchv1.Job), true)
}

// validateJobObject checks a job on create and update alike.
// requirePrefixedLabels is false only for jobs created before Kubernetes
// set the batch.kubernetes.io labels, so that they stay updatable.
func validateJobObject(j *batchv1.Job, requirePrefixedLabels bool) field.ErrorList {
	// Jobs share the replication controller's name rule: a DNS subdomain.
	allErrs := ValidateMeta(&j.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	allErrs = append(allErrs, validateGeneratedJobSelector(j, requirePrefixedLabels)...)
	allErrs = append(allErrs, validateJobSpecAndSelector(&j.Spec, field.NewPath("spec"))...)
	if isIndexedJob(&j.Spec) && j.Spec.Completions != nil && *j.Spec.Completions > 0 {
		// Indexed pods are named and hostnamed <job>-<index>; a job whose
		// last index would make an invalid hostname could never finish.
		host := fmt.Sprintf("%s-%d", j.Name, *j.Spec.Completions-1)
		if errs := utilvalidation.IsDNS1123Label(host); len(errs) > 0 {
			allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), j.Name, "will not able to create pod with invalid DNS label: "+host))
		}
	}
	return allErrs
}

// validateGeneratedJobSelector checks that a generated selector and the
// template labels it relies on are still what generation produced.
func validateGeneratedJobSelector(j *batchv1.Job, requirePrefixedLabels bool) field.ErrorList {
	if j.Spec.ManualSelector != nil && *j.Spec.ManualSelector || j.Spec.Selector == nil {
		return nil
	}
	var allErrs field.ErrorList
	if j.UID == "" {
		allErrs = append(allErrs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	tmplMeta := field.NewPath("spec", "template", "metadata")
	expected := map[string]string{legacyControllerUIDLabel: string(j.UID), legacyJobNameLabel: j.Name}
	allErrs = append(allErrs, validateHasLabel(j.Spec.Template.Labels, tmplMeta, legacyControllerUIDLabel, string(j.UID))...)
	allErrs = append(allErrs, validateHasLabel(j.Spec.Template.Labels, tmplMeta, legacyJobNameLabel, j.Name)...)
	if requirePrefixedLabels {
		allErrs = append(allErrs, validateHasLabel(j.Spec.Template.Labels, tmplMeta, batchv1.ControllerUidLabel, string(j.UID))...)
		allErrs = append(allErrs, validateHasLabel(j.Spec.Template.Labels, tmplMeta, batchv1.JobNameLabel, j.Name)...)
		expected[batchv1.ControllerUidLabel] = string(j.UID)
		expected[batchv1.JobNameLabel] = j.Name
	}
	if selector, err := metav1.LabelSelectorAsSelector(j.Spec.Selector); err == nil && !selector.Matches(labels.Set(expected)) {
		allErrs = append(allErrs, field.Invalid(field.NewPath("spec", "selector"), j.Spec.Selector, "`selector` not auto-generated"))
	}
	return allErrs
}

func validateHasLabel(l map[string]string, metaPath *field.Path, key, want string) field.ErrorList {
	p := metaPath.Child("labels").Key(key)
	got, ok := l[key]
	switch {
	case !ok:
		return field.ErrorList{field.Required(p, fmt.Sprintf("must be '%s'", want))}
	case got != want:
		return field.ErrorList{field.Invalid(p, l, fmt.Sprintf("must be '%s'", want))}
	}
	return nil
}

// validateJobSpecAndSelector is the spec check of a Job proper, whose
// selector, generated or not, must select the pods it creates.
func validateJobSpecAndSelector(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	allErrs := validateJobSpec(spec, fldPath)
	if spec.Selector == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("selector"), ""))
	} else {
		allErrs = append(allErrs, metav1validation.ValidateLabelSelector(spec.Selector, metav1validation.LabelSelectorValidationOptions{}, fldPath.Child("selector"))...)
	}
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil {
		allErrs = append(allErrs, validateSelectorMatchesTemplate(selector, &spec.Template, fldPath.Child("template"))...)
	}
	return allErrs
}

// validateJobSpec checks what a JobSpec needs wherever it sits, in a Job or
// in a CronJob's jobTemplate.
func validateJobSpec(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	for _, f := range []struct {
		name string
		v    *int32
	}{
		{"parallelism", spec.Parallelism}, {"completions", spec.Completions},
	} {
		if f.v != nil {
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*f.v), fldPath.Child(f.name))...)
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	for _, f := range []struct {
		name string
		v    *int32
	}{
		{"backoffLimit", spec.BackoffLimit}, {"ttlSecondsAfterFinished", spec.TTLSecondsAfterFinished},
		{"backoffLimitPerIndex", spec.BackoffLimitPerIndex},
	} {
		if f.v != nil {
			allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*f.v), fldPath.Child(f.name))...)
		}
	}
	if spec.MaxFailedIndexes != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.MaxFailedIndexes), fldPath.Child("maxFailedIndexes"))...)
		if spec.BackoffLimitPerIndex == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	if spec.ManagedBy != nil {
		p := fldPath.Child("managedBy")
		allErrs = append(allErrs, utilvalidation.IsDomainPrefixedPath(p, *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			allErrs = append(allErrs, field.TooLongMaxLength(p, *spec.ManagedBy, maxManagedByLength))
		}
	}
	allErrs = append(allErrs, validateCompletionMode(spec, fldPath)...)
	if spec.PodFailurePolicy != nil {
		allErrs = append(allErrs, validatePodFailurePolicy(spec, fldPath.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if !isIndexedJob(spec) {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			allErrs = append(allErrs, validateSuccessPolicy(spec, fldPath.Child("successPolicy"))...)
		}
	}
	allErrs = append(allErrs, validatePodReplacementPolicy(spec, fldPath.Child("podReplacementPolicy"))...)
	allErrs = append(allErrs, validatePodTemplate(&spec.Template, fldPath.Child("template"))...)
	return append(allErrs, validateJobRestartPolicy(spec, fldPath.Child("template", "spec", "restartPolicy"))...)
}

// validateJobRestartPolicy: a job's pods must be allowed to end, and a pod
// failure policy must see each failure as a failed pod, not as a restart.
func validateJobRestartPolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	switch rp := spec.Template.Spec.RestartPolicy; {
	case rp == corev1.RestartPolicyAlways || rp == "":
		// "" is reported like Always: defaulting turns the one into the other.
		return field.ErrorList{field.Required(p, fmt.Sprintf("valid values: %q, %q", corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever))}
	case rp != corev1.RestartPolicyOnFailure && rp != corev1.RestartPolicyNever:
		return field.ErrorList{field.NotSupported(p, rp, []corev1.RestartPolicy{corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
	case spec.PodFailurePolicy != nil && rp != corev1.RestartPolicyNever:
		return field.ErrorList{field.Invalid(p, rp, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", corev1.RestartPolicyNever))}
	}
	return nil
}

func isIndexedJob(spec *batchv1.JobSpec) bool {
	return spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion
}

func validateCompletionMode(spec *batchv1.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if m := spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		allErrs = append(allErrs, field.NotSupported(fldPath.Child("completionMode"), m, []batchv1.CompletionMode{batchv1.NonIndexedCompletion, batchv1.IndexedCompletion}))
	}
	if !isIndexedJob(spec) {
		if spec.BackoffLimitPerIndex != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
		return allErrs
	}
	completions, parallelism, maxFailed := spec.Completions, spec.Parallelism, spec.MaxFailedIndexes
	if completions == nil {
		allErrs = append(allErrs, field.Required(fldPath.Child("completions"), fmt.Sprintf("when completion mode is %s", batchv1.IndexedCompletion)))
	}
	if parallelism != nil && *parallelism > maxParallelismForIndexedJob {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), *parallelism, fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, batchv1.IndexedCompletion)))
	}
	if completions != nil && maxFailed != nil && *maxFailed > *completions {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *maxFailed, "must be less than or equal to completions"))
	}
	if maxFailed != nil && *maxFailed > maxFailedIndexesForIndexedJob {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *maxFailed, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)))
	}
	if completions != nil && *completions > completionsSoftLimit && spec.BackoffLimitPerIndex != nil {
		suffix := fmt.Sprintf(" when completions are above %d and used with backoff limit per index", completionsSoftLimit)
		if maxFailed == nil {
			allErrs = append(allErrs, field.Required(fldPath.Child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit)))
		}
		if parallelism != nil && *parallelism > parallelismLimitForHighCompl {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("parallelism"), *parallelism, fmt.Sprintf("must be less than or equal to %d", parallelismLimitForHighCompl)+suffix))
		}
		if maxFailed != nil && *maxFailed > maxFailedIndexesForHighCompl {
			allErrs = append(allErrs, field.Invalid(fldPath.Child("maxFailedIndexes"), *maxFailed, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForHighCompl)+suffix))
		}
	}
	return allErrs
}

func validatePodReplacementPolicy(spec *batchv1.JobSpec, p *field.Path) field.ErrorList {
	if spec.PodReplacementPolicy == nil {
		return nil
	}
	v := *spec.PodReplacementPolicy
	if spec.PodFailurePolicy != nil {
		if v != batchv1.Failed {
			return field.ErrorList{field.NotSupported(p, v, []batchv1.PodReplacementPolicy{batchv1.Failed})}
		}
		return nil
	}
	if v != batchv1.Failed && v != batchv1.TerminatingOrFailed {
		return field.ErrorList{field.NotSupported(p, v, []batchv1.PodReplacementPolicy{batchv1.Failed, batchv1.TerminatingOrFailed})}
	}
	return nil
}

func validateJobUpdate(obj, old runtime.Object) field.ErrorList {
	j, o := obj.(*batchv1.Job), old.(*batchv1.Job)
	// Jobs created before the batch.kubernetes.io labels existed lack them;
	// requiring them now would make such jobs impossible to update.
	_, hadName := o.Spec.Template.Labels[batchv1.JobNameLabel]
	_, hadUID := o.Spec.Template.Labels[batchv1.ControllerUidLabel]
	allErrs := validateJobObject(j, hadName && hadUID)
	allErrs = append(allErrs, ValidateMetaUpdate(&j.ObjectMeta, &o.ObjectMeta)...)

	spec, oldSpec, p := &j.Spec, &o.Spec, field.NewPath("spec")
	allErrs = append(allErrs, validateCompletionsUpdate(spec, oldSpec, p.Child("completions"))...)
	allErrs = append(allErrs, apivalidation.ValidateImmutableField(spec.Selector, oldSpec.Selector, p.Child("selector"))...)
	allErrs = append(allErrs, validateJobTemplateUpdate(j, o, p.Child("template"))...)
	for _, f := range []struct {
		name     string
		new, old interface{}
	}{
		{"completionMode", spec.CompletionMode, oldSpec.CompletionMode},
		{"podFailurePolicy", spec.PodFailurePolicy, oldSpec.PodFailurePolicy},
		{"backoffLimitPerIndex", spec.BackoffLimitPerIndex, oldSpec.BackoffLimitPerIndex},
		{"managedBy", spec.ManagedBy, oldSpec.ManagedBy},
		{"successPolicy", spec.SuccessPolicy, oldSpec.SuccessPolicy},
	} {
		allErrs = append(allErrs, apivalidation.ValidateImmutableField(f.new, f.old, p.Child(f.name))...)
	}
	return allErrs
}

// validateCompletionsUpdate: completions is fixed, except that an indexed
// job may be resized if parallelism moves with it (elastic indexed jobs).
func validateCompletionsUpdate(spec, old *batchv1.JobSpec, p *field.Path) field.ErrorList {
	if !isIndexedJob(spec) {
		return apivalidation.ValidateImmutableField(spec.Completions, old.Completions, p)
	}
	if equality.Semantic.DeepEqual(spec.Completions, old.Completions) || spec.Completions == nil {
		return nil
	}
	if spec.Parallelism == nil || *spec.Completions != *spec.Parallelism {
		return field.ErrorList{field.Invalid(p, spec.Completions, fmt.Sprintf("can only be modified in tandem with %s", p.Root().Child("parallelism")))}
	}
	return nil
}

// validateJobTemplateUpdate keeps the pod template fixed, except that a
// suspended job that never started may have its scheduling directives
// changed: a queueing controller decides where it runs before resuming it.
func validateJobTemplateUpdate(j, o *batchv1.Job, p *field.Path) field.ErrorList {
	tmpl, oldTmpl := &j.Spec.Template, &o.Spec.Template
	suspended := o.Spec.Suspend != nil && *o.Spec.Suspend
	if suspended && o.Status.StartTime == nil {
		oldTmpl = oldTmpl.DeepCopy()
		switch {
		case tmpl.Spec.Affinity == nil && oldTmpl.Spec.Affinity != nil:
			oldTmpl.Spec.Affinity.NodeAffinity = nil
			if *oldTmpl.Spec.Affinity == (corev1.Affinity{}) {
				oldTmpl.Spec.Affinity = nil
			}
		case tmpl.Spec.Affinity != nil && oldTmpl.Spec.Affinity == nil:
			oldTmpl.Spec.Affinity = &corev1.Affinity{NodeAffinity: tmpl.Spec.Affinity.NodeAffinity}
		case tmpl.Spec.Affinity != nil && oldTmpl.Spec.Affinity != nil:
			oldTmpl.Spec.Affinity.NodeAffinity = tmpl.Spec.Affinity.NodeAffinity
		}
		oldTmpl.Spec.NodeSelector = tmpl.Spec.NodeSelector
		oldTmpl.Spec.Tolerations = tmpl.Spec.Tolerations
		oldTmpl.Annotations = tmpl.Annotations
		oldTmpl.Labels = tmpl.Labels
		oldTmpl.Spec.SchedulingGates = tmpl.Spec.SchedulingGates
	}
	return apivalidation.ValidateImmutableField(tmpl, oldTmpl, p)
}

// jobFields adds the job's selectable status field; kubectl and the
// cronjob tooling list jobs by status.successful.
func jobFields(obj runtime.Object) fields.Set {
	return fields.Set{"status.successful": strconv.Itoa(int(obj.(*batchv1.Job).Status.Succeeded))}
}

var jobTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "Status of the job."},
		{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
		{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
		ageColumn,
		containersColumn,
		imagesColumn,
		selectorColumn(batchv1.JobSpec{}.SwaggerDoc()["selector"]),
	},
	Row: func(obj runtime.Object) []interface{} {
		j := obj.(*batchv1.Job)
		names, images := containerCells(j.Spec.Template.Spec.Containers)
		return []interface{}{
			j.Name, jobStatusCell(j), jobCompletionsCell(j), jobDurationCell(j), Age(j.CreationTimestamp),
			names, images, metav1.FormatLabelSelector(j.Spec.Selector),
		}
	},
}

// jobStatusCell is the STATUS column: the first of these that holds.
func jobStatusCell(j *batchv1.Job) string {
	switch {
	case jobConditionTrue(j, batchv1.JobComplete):
		return "Complete"
	case jobConditionTrue(j, batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case jobConditionTrue(j, batchv1.JobSuspended):
		return "Suspended"
	case jobConditionTrue(j, batchv1.JobFailureTarget):
		return "FailureTarget"
	case jobConditionTrue(j, batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

// jobConditionTrue looks at the first condition of the type only, as
// kubectl's printer does.
func jobConditionTrue(j *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range j.Status.Conditions {
		if c.Type == t {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func jobCompletionsCell(j *batchv1.Job) string {
	if j.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	}
	// A work-queue job (no completions) is done when one pod succeeds.
	if p := derefInt32(j.Spec.Parallelism); p > 1 {
		return fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, p)
	}
	return fmt.Sprintf("%d/1", j.Status.Succeeded)
}

func jobDurationCell(j *batchv1.Job) string {
	switch {
	case j.Status.StartTime == nil:
		return ""
	case j.Status.CompletionTime == nil:
		return duration.HumanDuration(time.Since(j.Status.StartTime.Time))
	}
	return duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
}
