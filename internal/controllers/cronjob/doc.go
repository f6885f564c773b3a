// Package cronjob is the CronJob controller ("cronjob" in --controllers):
// it creates a Job from spec.jobTemplate at every time spec.schedule
// names, as upstream's cronjob controller (v2) does seen from the API.
//
// # Usage
//
//	controller.RunManager(ctx, controller.ManagerConfig{
//		RestConfig:  rc,
//		Descriptors: []controller.Descriptor{cronjob.Descriptor, job.Descriptor},
//	})
//
// The Jobs it creates are run by the Job controller (package job).
//
// # Schedules and time
//
// The schedule is standard cron (five fields, @hourly and friends,
// @every, a TZ= or CRON_TZ= prefix), parsed with robfig/cron's standard
// parser through internal/cronschedule, as the API server's validation
// parses it, so what validation accepts is what runs.
// It is read in spec.timeZone (an IANA name, from the Go time zone
// database embedded in the binary), else in the controller's local zone.
// A time that does not exist on a daylight-saving day is skipped; one
// that happens twice runs twice.
//
// The controller keeps no timers per CronJob in its work queue: after
// each sync it records when the CronJob next needs looking at (just after
// its next start time) in one heap, served by one timer on the injected
// clock (Context.Clock). A test with a fake clock thus steps through
// schedules without waiting.
//
// # One run per start time
//
// A Job is named "<cronjob>-<scheduled time in minutes since the epoch>"
// and annotated batch.kubernetes.io/cronjob-scheduled-timestamp (RFC 3339,
// in the CronJob's zone). The name makes a start idempotent: a controller
// that crashed between creating the Job and recording it finds the Job
// instead of creating another. Only the most recent missed start time is
// run; with more than 100 missed the CronJob gets a TooManyMissedTimes
// warning. startingDeadlineSeconds drops start times older than that.
//
// # Policies
//
// concurrencyPolicy Allow runs jobs side by side; Forbid skips a start
// while a job is active (event JobAlreadyActive) — the skipped time runs
// late once the active job finishes, unless startingDeadlineSeconds has
// passed; Replace deletes the active jobs and starts the new one.
// spec.suspend stops new starts, not running jobs. Finished jobs beyond
// successfulJobsHistoryLimit (3) and failedJobsHistoryLimit (1) are
// deleted, oldest first, with background propagation.
//
// # Status
//
// status.active lists references to the running jobs, status
// lastScheduleTime the last start time acted on, lastSuccessfulTime the
// latest completion. Events: "Created job <name>", "Saw completed job:
// <name>, status: Complete", "Deleted job <name>".
package cronjob
