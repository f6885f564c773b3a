// Package job is the Job controller ("job" in --controllers): it runs a
// Job's pods until enough of them succeed, or the Job fails, and keeps
// its status, as upstream's job controller does seen from the API.
//
// # Usage
//
//	controller.RunManager(ctx, controller.ManagerConfig{
//		RestConfig:  rc,
//		Descriptors: []controller.Descriptor{job.Descriptor},
//	})
//
// NewDescriptor(Config{...}) tunes the back-off and batching (tests use a
// short back-off).
//
// # What a Job asks for
//
// spec.parallelism pods run at once, never more than the completions
// still missing; spec.completions successes finish it (with none set,
// the first success does: a work queue). Pods are named "<job>-xxxxx",
// carry the template's labels (the API server added job-name and
// controller-uid, prefixed batch.kubernetes.io/ and not, and the
// selector on them), a controller reference and the
// batch.kubernetes.io/job-tracking finalizer.
//
// An Indexed job (completionMode Indexed) runs one pod per index
// 0..completions-1: named "<job>-<index>-xxxxx", hostname <job>-<index>
// (with the template's subdomain, a stable DNS name), the index in the
// batch.kubernetes.io/job-completion-index annotation and label, and in
// the JOB_COMPLETION_INDEX variable of every container through the
// downward API. Finished indexes show in status.completedIndexes
// ("0-4"); spec.successPolicy may declare the job done earlier.
//
// # Failure
//
// A failed pod (or one deleted before succeeding, unless
// podReplacementPolicy is Failed) counts against spec.backoffLimit and
// is replaced after a back-off of 10 s doubling per failure since the
// last success, up to 10 min. One failure too many and the job fails
// with reason BackoffLimitExceeded; running longer than
// activeDeadlineSeconds fails it with DeadlineExceeded. A
// spec.podFailurePolicy classifies each failure by exit code or pod
// condition: FailJob (reason PodFailurePolicy), Ignore (not counted),
// Count, or FailIndex. With backoffLimitPerIndex each index has its own
// limit and back-off (counts kept in pod annotations); failed indexes
// show in status.failedIndexes and maxFailedIndexes bounds them.
//
// A job ends in two steps, as from Kubernetes 1.31: first the interim
// condition FailureTarget (or SuccessCriteriaMet) while its remaining
// pods are stopped and counted, then Failed (or Complete, with
// completionTime) once none is left terminating. Events: "Created pod:
// <name>", "Deleted pod: <name>", "Job completed", and the failure's
// reason and message.
//
// # Suspending
//
// spec.suspend deletes the active pods (without counting them as
// failures), sets the Suspended condition and stops the deadline clock;
// resuming recreates pods and restarts the clock.
//
// # Counting with finalizers
//
// A pod cannot disappear uncounted: the tracking finalizer holds it
// until its outcome is in the status (see tracking.go for the two-step
// commit through status.uncountedTerminatedPods). A pod left with the
// finalizer by a job that is gone or finished is freed by a second queue,
// job_orphan_pod.
//
// # One sync
//
// Each pod event queues its job after a 1 s batch period, a job spec
// change at once. A sync reads the job and its pods from the informers
// (the pods through an index by controller UID), adopts matching orphans
// and releases pods that stopped matching; counts (newSyncState);
// decides whether the job has ended (decide); if the previous sync's
// creations and deletions have all been observed (expectations), plans
// and carries out creations or deletions (planManage); and writes the
// status (planTracking, then enactFinished). The decisions are pure
// functions of the job, its pods and the clock.
//
// Two memories guard against a cache that lags the API server: the
// expectations (pods created or deleted but not yet seen) and the
// resourceVersion of the job as it was before this controller's last
// status write. Until the informer shows that write, the cached job's
// counters are behind its pods — whose finalizers the write let go — and
// a sync is skipped rather than start pods for completions already made.
package job
