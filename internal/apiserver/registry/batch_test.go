package registry

import (
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func job(mutate func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: objMeta("pi"), Spec: batchv1.JobSpec{Template: podTemplateWith(nil, corev1.RestartPolicyNever)}}
	if mutate != nil {
		mutate(j)
	}
	return j
}

func TestJobDefaults(t *testing.T) {
	r := mustResource(t, "batch", "jobs")
	for _, tc := range []struct {
		name   string
		mutate func(*batchv1.Job)
		check  func(*testing.T, *batchv1.JobSpec)
	}{
		{name: "empty", check: func(t *testing.T, s *batchv1.JobSpec) {
			want := batchv1.JobSpec{
				Parallelism: new(int32(1)), Completions: new(int32(1)), BackoffLimit: new(int32(6)),
				CompletionMode: new(batchv1.NonIndexedCompletion), Suspend: new(false),
				PodReplacementPolicy: new(batchv1.TerminatingOrFailed), ManualSelector: new(false),
			}
			got := *s
			got.Template = batchv1.JobSpec{}.Template
			if !equality.Semantic.DeepEqual(got, want) {
				t.Errorf("got %+v\nwant %+v", got, want)
			}
		}},
		{name: "parallelism only leaves completions unset", mutate: func(j *batchv1.Job) { j.Spec.Parallelism = new(int32(3)) },
			check: func(t *testing.T, s *batchv1.JobSpec) {
				if s.Completions != nil || *s.Parallelism != 3 {
					t.Errorf("completions %v parallelism %d", s.Completions, *s.Parallelism)
				}
			}},
		{name: "completions only", mutate: func(j *batchv1.Job) { j.Spec.Completions = new(int32(5)) },
			check: func(t *testing.T, s *batchv1.JobSpec) {
				if *s.Completions != 5 || *s.Parallelism != 1 {
					t.Errorf("completions %d parallelism %d", *s.Completions, *s.Parallelism)
				}
			}},
		{name: "backoff per index", mutate: func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = new(int32(1)) },
			check: func(t *testing.T, s *batchv1.JobSpec) {
				if *s.BackoffLimit != math.MaxInt32 {
					t.Errorf("backoffLimit %d", *s.BackoffLimit)
				}
			}},
		{name: "pod failure policy", mutate: func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
			}}}
		}, check: func(t *testing.T, s *batchv1.JobSpec) {
			if *s.PodReplacementPolicy != batchv1.Failed {
				t.Errorf("podReplacementPolicy %s", *s.PodReplacementPolicy)
			}
			if st := s.PodFailurePolicy.Rules[0].OnPodConditions[0].Status; st != corev1.ConditionTrue {
				t.Errorf("pattern status %q", st)
			}
		}},
		{name: "restart policy from pod defaults", mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" },
			check: func(t *testing.T, s *batchv1.JobSpec) {
				if s.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
					t.Errorf("restartPolicy %q", s.Template.Spec.RestartPolicy)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := job(tc.mutate)
			r.Default(j)
			tc.check(t, &j.Spec)
		})
	}
}

func TestJobCreateGeneratesSelector(t *testing.T) {
	r := mustResource(t, "batch", "jobs")
	uid := "8a1c5f7e-6d37-4d3e-9b63-0d4f4f6c2a11"
	generated := map[string]string{
		"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
		"controller-uid": uid, "job-name": "pi",
	}
	t.Run("no labels", func(t *testing.T) {
		j := job(func(j *batchv1.Job) { j.Status.Active = 2 })
		expectErrs(t, runCreate(r, j))
		if want := matchLabels(map[string]string{"batch.kubernetes.io/controller-uid": uid}); !equality.Semantic.DeepEqual(j.Spec.Selector, want) {
			t.Errorf("selector %v", j.Spec.Selector)
		}
		if !maps.Equal(j.Spec.Template.Labels, generated) || !maps.Equal(j.Labels, generated) {
			t.Errorf("template labels %v, job labels %v", j.Spec.Template.Labels, j.Labels)
		}
		if j.Status.Active != 0 {
			t.Errorf("status not reset: %+v", j.Status)
		}
	})
	t.Run("template labels shared with the job", func(t *testing.T) {
		j := job(func(j *batchv1.Job) { j.Spec.Template.Labels = map[string]string{"app": "pi"} })
		expectErrs(t, runCreate(r, j))
		want := maps.Clone(generated)
		want["app"] = "pi"
		if !maps.Equal(j.Labels, want) {
			t.Errorf("job labels %v", j.Labels)
		}
	})
	t.Run("own job labels kept", func(t *testing.T) {
		j := job(func(j *batchv1.Job) { j.Labels = map[string]string{"team": "a"} })
		expectErrs(t, runCreate(r, j))
		if !maps.Equal(j.Labels, map[string]string{"team": "a"}) {
			t.Errorf("job labels %v", j.Labels)
		}
	})
	t.Run("manual selector", func(t *testing.T) {
		j := job(func(j *batchv1.Job) {
			j.Spec.ManualSelector = new(true)
			j.Spec.Selector = matchLabels(map[string]string{"app": "pi"})
			j.Spec.Template.Labels = map[string]string{"app": "pi"}
		})
		expectErrs(t, runCreate(r, j))
		if len(j.Spec.Template.Labels) != 1 {
			t.Errorf("labels generated for a manual selector: %v", j.Spec.Template.Labels)
		}
	})
	t.Run("conflicting label", func(t *testing.T) {
		j := job(func(j *batchv1.Job) { j.Spec.Template.Labels = map[string]string{"job-name": "other"} })
		expectErrs(t, runCreate(r, j), "spec.template.metadata.labels[job-name]: Invalid value")
	})
	t.Run("manual selector not matching", func(t *testing.T) {
		j := job(func(j *batchv1.Job) {
			j.Spec.ManualSelector = new(true)
			j.Spec.Selector = matchLabels(map[string]string{"app": "pi"})
		})
		expectErrs(t, runCreate(r, j), "spec.template.metadata.labels: Invalid value")
	})
	t.Run("manual selector missing", func(t *testing.T) {
		j := job(func(j *batchv1.Job) { j.Spec.ManualSelector = new(true) })
		expectErrs(t, runCreate(r, j), "spec.selector: Required value", "spec.template.metadata.labels: Invalid value")
	})
}

func TestJobValidate(t *testing.T) {
	r := mustResource(t, "batch", "jobs")
	for _, tc := range []struct {
		name   string
		mutate func(*batchv1.Job)
		want   []string
	}{
		{name: "restart always", mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways },
			want: []string{"spec.template.spec.restartPolicy: Required value"}},
		{name: "restart unset", mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = "" },
			want: []string{"spec.template.spec.restartPolicy: Required value"}},
		{name: "restart on failure", mutate: func(j *batchv1.Job) { j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure }},
		{name: "negative counts", mutate: func(j *batchv1.Job) {
			j.Spec.Parallelism, j.Spec.Completions, j.Spec.BackoffLimit = new(int32(-1)), new(int32(-2)), new(int32(-3))
		}, want: []string{"spec.parallelism: Invalid value", "spec.completions: Invalid value", "spec.backoffLimit: Invalid value"}},
		{name: "bad completion mode", mutate: func(j *batchv1.Job) { j.Spec.CompletionMode = new(batchv1.CompletionMode("Sometimes")) },
			want: []string{"spec.completionMode: Unsupported value"}},
		{name: "indexed without completions", mutate: func(j *batchv1.Job) {
			j.Spec.CompletionMode = new(batchv1.IndexedCompletion)
			j.Spec.Parallelism = new(int32(2))
		}, want: []string{"spec.completions: Required value"}},
		{name: "per-index limit on non-indexed", mutate: func(j *batchv1.Job) { j.Spec.BackoffLimitPerIndex = new(int32(1)) },
			want: []string{"spec.backoffLimitPerIndex: Invalid value"}},
		{name: "failure policy needs restart never", mutate: func(j *batchv1.Job) {
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{42}},
			}}}
		}, want: []string{"spec.template.spec.restartPolicy: Invalid value"}},
		{name: "failure policy rules", mutate: func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: "Explode", OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: "In", Values: []int32{3, 0, 3}}},
				{Action: batchv1.PodFailurePolicyActionIgnore},
			}}
		}, want: []string{
			"spec.podFailurePolicy.rules[0].action: Unsupported value",
			"spec.podFailurePolicy.rules[0].onExitCodes.values[1]: Invalid value",
			"spec.podFailurePolicy.rules[0].onExitCodes.values[2]: Duplicate value",
			"spec.podFailurePolicy.rules[0].onExitCodes.values: Invalid value",
			"spec.podFailurePolicy.rules[1]: Invalid value",
		}},
		{name: "replacement policy with failure policy", mutate: func(j *batchv1.Job) {
			j.Spec.PodReplacementPolicy = new(batchv1.TerminatingOrFailed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionCount, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
			}}}
		}, want: []string{"spec.podReplacementPolicy: Unsupported value"}},
		{name: "success policy needs indexed", mutate: func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: new(int32(1))}}}
		}, want: []string{"spec.successPolicy: Invalid value"}},
		{name: "success policy indexes", mutate: func(j *batchv1.Job) {
			j.Spec.CompletionMode = new(batchv1.IndexedCompletion)
			j.Spec.Completions, j.Spec.Parallelism = new(int32(5)), new(int32(5))
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
				{SucceededIndexes: new("0-2,4"), SucceededCount: new(int32(5))},
				{SucceededIndexes: new("3,1")},
				{},
			}}
		}, want: []string{
			"spec.successPolicy.rules[0].succeededCount: Invalid value",
			"spec.successPolicy.rules[1].succeededIndexes: Invalid value",
			"spec.successPolicy.rules[2]: Required value",
		}},
		{name: "indexed hostname too long", mutate: func(j *batchv1.Job) {
			j.Name = strings.Repeat("a", 62)
			j.Spec.CompletionMode = new(batchv1.IndexedCompletion)
			j.Spec.Completions = new(int32(10))
		}, want: []string{"metadata.name: Invalid value"}},
		{name: "managed by", mutate: func(j *batchv1.Job) { j.Spec.ManagedBy = new("kueue") },
			want: []string{"spec.managedBy: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			expectErrs(t, runCreate(r, job(tc.mutate)), tc.want...)
		})
	}
}

func TestJobUpdate(t *testing.T) {
	r := mustResource(t, "batch", "jobs")
	stored := func(mutate func(*batchv1.Job)) *batchv1.Job {
		j := job(mutate)
		if errs := runCreate(r, j); len(errs) > 0 {
			t.Fatalf("create: %v", errs)
		}
		markStored(&j.ObjectMeta)
		return j
	}
	t.Run("template is immutable", func(t *testing.T) {
		old := stored(nil)
		j := old.DeepCopy()
		j.Spec.Template.Spec.Containers[0].Image = "perl:2"
		expectErrs(t, runUpdate(r, j, old), "spec.template: Invalid value")
	})
	t.Run("selector is immutable", func(t *testing.T) {
		old := stored(nil)
		j := old.DeepCopy()
		j.Spec.Selector.MatchLabels["job-name"] = "pi"
		expectErrs(t, runUpdate(r, j, old), "spec.selector: Invalid value")
	})
	t.Run("suspended job may move", func(t *testing.T) {
		old := stored(func(j *batchv1.Job) { j.Spec.Suspend = new(true) })
		j := old.DeepCopy()
		j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "b"}
		j.Spec.Suspend = new(false)
		expectErrs(t, runUpdate(r, j, old))
	})
	t.Run("started job may not move", func(t *testing.T) {
		old := stored(func(j *batchv1.Job) { j.Spec.Suspend = new(true) })
		old.Status.StartTime = &metav1.Time{Time: time.Now()}
		j := old.DeepCopy()
		j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "b"}
		expectErrs(t, runUpdate(r, j, old), "spec.template: Invalid value")
	})
	t.Run("completions", func(t *testing.T) {
		old := stored(nil)
		j := old.DeepCopy()
		j.Spec.Completions = new(int32(4))
		expectErrs(t, runUpdate(r, j, old), "spec.completions: Invalid value")
	})
	t.Run("elastic indexed", func(t *testing.T) {
		old := stored(func(j *batchv1.Job) {
			j.Spec.CompletionMode = new(batchv1.IndexedCompletion)
			j.Spec.Completions, j.Spec.Parallelism = new(int32(3)), new(int32(3))
		})
		j := old.DeepCopy()
		j.Spec.Completions, j.Spec.Parallelism = new(int32(5)), new(int32(5))
		expectErrs(t, runUpdate(r, j, old))
		j.Spec.Parallelism = new(int32(4))
		expectErrs(t, runUpdate(r, j, old), "spec.completions: Invalid value")
	})
	t.Run("legacy job without prefixed labels", func(t *testing.T) {
		old := stored(nil)
		delete(old.Spec.Template.Labels, batchv1.JobNameLabel)
		delete(old.Spec.Template.Labels, batchv1.ControllerUidLabel)
		old.Spec.Selector = matchLabels(map[string]string{"controller-uid": string(old.UID)})
		j := old.DeepCopy()
		j.Spec.Parallelism = new(int32(2))
		expectErrs(t, runUpdate(r, j, old))
	})
}

func TestJobStatusUpdate(t *testing.T) {
	r := mustResource(t, "batch", "jobs")
	base := job(nil)
	runCreate(r, base)
	markStored(&base.ObjectMeta)
	now := metav1.Now()
	earlier := metav1.NewTime(now.Add(-time.Minute))
	complete := []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue},
	}
	for _, tc := range []struct {
		name      string
		old, new  batchv1.JobStatus
		want      []string
		oldMutate func(*batchv1.Job)
	}{
		{name: "progress", new: batchv1.JobStatus{Active: 1, StartTime: &earlier, Ready: new(int32(1))}},
		{name: "complete", old: batchv1.JobStatus{Active: 1, StartTime: &earlier},
			new: batchv1.JobStatus{Succeeded: 1, StartTime: &earlier, CompletionTime: &now, Conditions: complete}},
		{name: "negative", new: batchv1.JobStatus{Active: -1}, want: []string{"status.active: Invalid value"}},
		{name: "complete without time", old: batchv1.JobStatus{StartTime: &earlier},
			new:  batchv1.JobStatus{Succeeded: 1, StartTime: &earlier, Conditions: complete},
			want: []string{"status.completionTime: Required value"}},
		{name: "complete while active", old: batchv1.JobStatus{StartTime: &earlier},
			new:  batchv1.JobStatus{Active: 1, StartTime: &earlier, CompletionTime: &now, Conditions: complete},
			want: []string{"status.active: Invalid value"}},
		{name: "completion before start", old: batchv1.JobStatus{StartTime: &now},
			new:  batchv1.JobStatus{StartTime: &now, CompletionTime: &earlier, Conditions: complete},
			want: []string{"status.completionTime: Invalid value"}},
		{name: "terminal condition removed",
			old:  batchv1.JobStatus{Failed: 1, StartTime: &earlier, Conditions: []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}}},
			new:  batchv1.JobStatus{Failed: 1, StartTime: &earlier},
			want: []string{"status.conditions: Invalid value"}},
		{name: "failed counter decreased", old: batchv1.JobStatus{Failed: 2}, new: batchv1.JobStatus{Failed: 1},
			want: []string{"status.failed: Invalid value"}},
		{name: "completed indexes on non-indexed job", new: batchv1.JobStatus{CompletedIndexes: "0"},
			want: []string{"status.completedIndexes: Invalid value"}},
		{name: "uncounted duplicates", new: batchv1.JobStatus{UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a"}, Failed: []types.UID{"a", ""}}},
			want: []string{"status.uncountedTerminatedPods.failed[0]: Duplicate value", "status.uncountedTerminatedPods.failed[1]: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := base.DeepCopy()
			old.Status = tc.old
			j := old.DeepCopy()
			j.Status = tc.new
			expectErrs(t, r.ValidateStatusUpdate(j, old), tc.want...)
		})
	}

	t.Run("overlapping indexes", func(t *testing.T) {
		if err := indexListsOverlap("0-3,7", "4-5,7-9", 10); err == nil || !strings.Contains(err.Error(), "at index: 7") {
			t.Errorf("overlap = %v", err)
		}
		if err := indexListsOverlap("0-3,8", "4-7,9", 10); err != nil {
			t.Errorf("disjoint lists: %v", err)
		}
	})
}

func cronJob(mutate func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{ObjectMeta: objMeta("nightly"), Spec: batchv1.CronJobSpec{
		Schedule:    "0 3 * * *",
		JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: podTemplateWith(nil, corev1.RestartPolicyOnFailure)}},
	}}
	if mutate != nil {
		mutate(cj)
	}
	return cj
}

func TestCronJobDefaults(t *testing.T) {
	cj := cronJob(func(cj *batchv1.CronJob) { cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = "" })
	mustResource(t, "batch", "cronjobs").Default(cj)
	s := cj.Spec
	if s.ConcurrencyPolicy != batchv1.AllowConcurrent || *s.Suspend || *s.SuccessfulJobsHistoryLimit != 3 || *s.FailedJobsHistoryLimit != 1 {
		t.Errorf("spec %+v", s)
	}
	// The job template gets pod defaults but none of the Job's.
	js := s.JobTemplate.Spec
	if js.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("pod template not defaulted")
	}
	if js.Parallelism != nil || js.BackoffLimit != nil || js.ManualSelector != nil || js.Suspend != nil {
		t.Errorf("job defaults applied to the template: %+v", js)
	}
}

func TestCronJobValidate(t *testing.T) {
	r := mustResource(t, "batch", "cronjobs")
	for _, tc := range []struct {
		name   string
		mutate func(*batchv1.CronJob)
		want   []string
		detail string
	}{
		{name: "valid"},
		{name: "descriptor", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "@hourly" }},
		{name: "time zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("Europe/Berlin") }},
		{name: "no schedule", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "" }, want: []string{"spec.schedule: Required value"}},
		{name: "bad schedule", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "0 3 * *" },
			want: []string{"spec.schedule: Invalid value"}, detail: "expected exactly 5 fields, found 4: [0 3 * *]"},
		{name: "minute out of range", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "61 * * * *" },
			want: []string{"spec.schedule: Invalid value"}, detail: "end of range (61) above maximum (59): 61"},
		{name: "TZ in schedule", mutate: func(cj *batchv1.CronJob) { cj.Spec.Schedule = "TZ=UTC 0 3 * *  *" },
			want: []string{"spec.schedule: Invalid value"}, detail: "use timeZone field instead"},
		{name: "unknown zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("Mars/Olympus") },
			want: []string{"spec.timeZone: Invalid value"}, detail: "unknown time zone Mars/Olympus"},
		{name: "path as zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("../../etc/passwd") },
			want: []string{"spec.timeZone: Invalid value"}},
		{name: "local zone", mutate: func(cj *batchv1.CronJob) { cj.Spec.TimeZone = new("Local") },
			want: []string{"spec.timeZone: Invalid value"}, detail: "explicit time zone"},
		{name: "concurrency", mutate: func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = "Sometimes" },
			want: []string{"spec.concurrencyPolicy: Unsupported value"}},
		{name: "template selector", mutate: func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Selector = matchLabels(map[string]string{"a": "b"})
		}, want: []string{"spec.jobTemplate.spec.selector: Invalid value"}},
		{name: "template restart always", mutate: func(cj *batchv1.CronJob) {
			cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
		}, want: []string{"spec.jobTemplate.spec.template.spec.restartPolicy: Required value"}},
		{name: "long name", mutate: func(cj *batchv1.CronJob) { cj.Name = strings.Repeat("n", 53) },
			want: []string{"metadata.name: Invalid value"}, detail: "must be no more than 52 characters"},
		{name: "negative history", mutate: func(cj *batchv1.CronJob) { cj.Spec.FailedJobsHistoryLimit = new(int32(-1)) },
			want: []string{"spec.failedJobsHistoryLimit: Invalid value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := runCreate(r, cronJob(tc.mutate))
			expectErrs(t, errs, tc.want...)
			if tc.detail != "" {
				expectErrWith(t, errs, tc.want[0], tc.detail)
			}
		})
	}

	t.Run("update keeps a legacy TZ schedule", func(t *testing.T) {
		old := cronJob(func(cj *batchv1.CronJob) { cj.Spec.Schedule = "CRON_TZ=UTC 0 3 * * *" })
		r.Default(old)
		markStored(&old.ObjectMeta)
		cj := old.DeepCopy()
		cj.Spec.Suspend = new(true)
		expectErrs(t, runUpdate(r, cj, old))
		cj.Spec.TimeZone = new("UTC")
		expectErrs(t, runUpdate(r, cj, old), "spec.schedule: Invalid value")
	})
}
