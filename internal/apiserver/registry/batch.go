package registry

import (
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func batchResources() []*Resource {
	return []*Resource{
		{Group: "batch", Version: "v1", Resource: "jobs", Kind: "Job", Singular: "job", Namespaced: true, Categories: []string{"all"}, HasStatus: true, HasGeneration: true,
			New:     func() runtime.Object { return &batchv1.Job{} },
			Default: defaultJob, PrepareForCreate: prepareJobCreate,
			Validate: validateJob, ValidateUpdate: validateJobUpdate, ValidateStatusUpdate: validateJobStatusUpdate,
			Fields: jobFields, Table: jobTable},
		{Group: "batch", Version: "v1", Resource: "cronjobs", Kind: "CronJob", Singular: "cronjob", Namespaced: true, ShortNames: []string{"cj"}, Categories: []string{"all"}, HasStatus: true, HasGeneration: true,
			New:     func() runtime.Object { return &batchv1.CronJob{} },
			Default: defaultCronJob, PrepareForCreate: prepareCronJobCreate,
			Validate: validateCronJob, ValidateUpdate: validateCronJobUpdate, Table: cronJobTable},
	}
}
