package registry

import (
	"fmt"
	"regexp"
	"strings"
	"time"
	// Time zones must validate the same on every host, including minimal
	// images without /usr/share/zoneinfo.
	_ "time/tzdata"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/cronschedule"
)

// The cronjob controller names jobs <cronjob>-<11-character timestamp>, and
// job names are DNS labels (63 characters) in practice.
const cronJobNameMaxLength = 52

func defaultCronJob(obj runtime.Object) {
	cj := obj.(*batchv1.CronJob)
	spec := &cj.Spec
	if spec.ConcurrencyPolicy == "" {
		spec.ConcurrencyPolicy = batchv1.AllowConcurrent
	}
	if spec.Suspend == nil {
		spec.Suspend = new(false)
	}
	if spec.SuccessfulJobsHistoryLimit == nil {
		spec.SuccessfulJobsHistoryLimit = new(int32(3))
	}
	if spec.FailedJobsHistoryLimit == nil {
		spec.FailedJobsHistoryLimit = new(int32(1))
	}
	// The Job defaults (parallelism, backoffLimit, …) are not applied to
	// the template: the Job created from it gets them when it is created.
	defaultJobSpecTemplate(&spec.JobTemplate.Spec)
}

func prepareCronJobCreate(obj runtime.Object) {
	obj.(*batchv1.CronJob).Status = batchv1.CronJobStatus{}
}

func validateCronJob(obj runtime.Object) field.ErrorList {
	cj := obj.(*batchv1.CronJob)
	allErrs := ValidateMeta(&cj.ObjectMeta, true, apivalidation.NameIsDNSSubdomain)
	allErrs = append(allErrs, validateCronJobSpec(&cj.Spec, nil, field.NewPath("spec"))...)
	if len(cj.Name) > cronJobNameMaxLength {
		allErrs = append(allErrs, field.Invalid(field.NewPath("metadata", "name"), cj.Name, fmt.Sprintf("must be no more than %d characters", cronJobNameMaxLength)))
	}
	return allErrs
}

// validateCronJobUpdate skips the name length rule so that cronjobs from
// releases without it can still be updated and deleted.
func validateCronJobUpdate(obj, old runtime.Object) field.ErrorList {
	cj, o := obj.(*batchv1.CronJob), old.(*batchv1.CronJob)
	allErrs := ValidateMetaUpdate(&cj.ObjectMeta, &o.ObjectMeta)
	return append(allErrs, validateCronJobSpec(&cj.Spec, &o.Spec, field.NewPath("spec"))...)
}

func validateCronJobSpec(spec, old *batchv1.CronJobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if spec.Schedule == "" {
		allErrs = append(allErrs, field.Required(fldPath.Child("schedule"), ""))
	} else {
		// A TZ= prefix predates the timeZone field; it is tolerated only on
		// cronjobs that already had it.
		allowTZ := old != nil && strings.Contains(old.Schedule, "TZ")
		allErrs = append(allErrs, validateSchedule(spec.Schedule, allowTZ, spec.TimeZone, fldPath.Child("schedule"))...)
	}
	if spec.StartingDeadlineSeconds != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(*spec.StartingDeadlineSeconds, fldPath.Child("startingDeadlineSeconds"))...)
	}
	// A zone that has since left the tz database must not block updates of
	// cronjobs that do not touch it.
	if old == nil || !equality.Semantic.DeepEqual(old.TimeZone, spec.TimeZone) {
		allErrs = append(allErrs, validateTimeZone(spec.TimeZone, fldPath.Child("timeZone"))...)
	}
	switch p := fldPath.Child("concurrencyPolicy"); spec.ConcurrencyPolicy {
	case batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent:
	case "":
		allErrs = append(allErrs, field.Required(p, ""))
	default:
		allErrs = append(allErrs, field.NotSupported(p, spec.ConcurrencyPolicy, []batchv1.ConcurrencyPolicy{batchv1.AllowConcurrent, batchv1.ForbidConcurrent, batchv1.ReplaceConcurrent}))
	}
	allErrs = append(allErrs, validateJobTemplate(&spec.JobTemplate, fldPath.Child("jobTemplate"))...)
	if spec.SuccessfulJobsHistoryLimit != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.SuccessfulJobsHistoryLimit), fldPath.Child("successfulJobsHistoryLimit"))...)
	}
	if spec.FailedJobsHistoryLimit != nil {
		allErrs = append(allErrs, apivalidation.ValidateNonnegativeField(int64(*spec.FailedJobsHistoryLimit), fldPath.Child("failedJobsHistoryLimit"))...)
	}
	return allErrs
}

func validateSchedule(schedule string, allowTZ bool, timeZone *string, p *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if _, err := cronschedule.Parse(schedule); err != nil {
		allErrs = append(allErrs, field.Invalid(p, schedule, err.Error()))
	}
	hasTZ := strings.Contains(schedule, "TZ")
	switch {
	case allowTZ && hasTZ && timeZone != nil:
		allErrs = append(allErrs, field.Invalid(p, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
	case !allowTZ && hasTZ:
		allErrs = append(allErrs, field.Invalid(p, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
	}
	return allErrs
}

// validTimeZoneComponent follows the tz database's naming rules for one
// path component, with the digits and '+' legacy names such as Etc/GMT+5 use.
var validTimeZoneComponent = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

func validateTimeZone(tz *string, p *field.Path) field.ErrorList {
	if tz == nil {
		return nil
	}
	if *tz == "" {
		return field.ErrorList{field.Invalid(p, tz, "timeZone must be nil or non-empty string")}
	}
	// Checked before loading so that a name can never reach the file
	// system as a path ("../../etc/passwd").
	for _, part := range strings.Split(*tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !validTimeZoneComponent.MatchString(part) {
			return field.ErrorList{field.Invalid(p, tz, "unknown time zone "+*tz)}
		}
	}
	var allErrs field.ErrorList
	if strings.EqualFold(*tz, "Local") {
		// "Local" is whatever zone the server happens to run in.
		allErrs = append(allErrs, field.Invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
	}
	if _, err := time.LoadLocation(*tz); err != nil {
		allErrs = append(allErrs, field.Invalid(p, tz, err.Error()))
	}
	return allErrs
}

// validateJobTemplate checks a cronjob's jobTemplate. Its selector is
// always generated, per job, so the template may not carry one.
func validateJobTemplate(t *batchv1.JobTemplateSpec, fldPath *field.Path) field.ErrorList {
	specPath := fldPath.Child("spec")
	allErrs := validateJobSpec(&t.Spec, specPath)
	if t.Spec.Selector != nil {
		allErrs = append(allErrs, field.Invalid(specPath.Child("selector"), t.Spec.Selector, "`selector` will be auto-generated"))
	}
	if t.Spec.ManualSelector != nil && *t.Spec.ManualSelector {
		allErrs = append(allErrs, field.NotSupported(specPath.Child("manualSelector"), t.Spec.ManualSelector, []string{"nil", "false"}))
	}
	return allErrs
}

var cronJobTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Schedule", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["schedule"]},
		{Name: "Timezone", Type: "string", Description: batchv1.CronJobSpec{}.SwaggerDoc()["timeZone"]},
		{Name: "Suspend", Type: "boolean", Description: batchv1.CronJobSpec{}.SwaggerDoc()["suspend"]},
		{Name: "Active", Type: "integer", Description: batchv1.CronJobStatus{}.SwaggerDoc()["active"]},
		{Name: "Last Schedule", Type: "string", Description: batchv1.CronJobStatus{}.SwaggerDoc()["lastScheduleTime"]},
		ageColumn,
		containersColumn,
		imagesColumn,
		selectorColumn(batchv1.JobSpec{}.SwaggerDoc()["selector"]),
	},
	Row: func(obj runtime.Object) []interface{} {
		cj := obj.(*batchv1.CronJob)
		last := "<none>"
		if cj.Status.LastScheduleTime != nil {
			last = Age(*cj.Status.LastScheduleTime)
		}
		tz := "<none>"
		if cj.Spec.TimeZone != nil {
			tz = *cj.Spec.TimeZone
		}
		// kubectl prints the boolean column as a word, and "<unset>" when
		// the field is missing.
		suspend := "<unset>"
		if cj.Spec.Suspend != nil {
			suspend = map[bool]string{true: "True", false: "False"}[*cj.Spec.Suspend]
		}
		names, images := containerCells(cj.Spec.JobTemplate.Spec.Template.Spec.Containers)
		return []interface{}{
			cj.Name, cj.Spec.Schedule, tz, suspend, int64(len(cj.Status.Active)), last, Age(cj.CreationTimestamp),
			names, images, metav1.FormatLabelSelector(cj.Spec.JobTemplate.Spec.Selector),
		}
	},
}
