package ttlafterfinished_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/ttlafterfinished"
)

func TestDeletesFinishedJobs(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	cs := c.Client.BatchV1().Jobs(metav1.NamespaceDefault)
	controllertest.Run(t, c.Config, ttlafterfinished.Descriptor)

	newJob := func(name string, ttl *int32) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: batchv1.JobSpec{
				TTLSecondsAfterFinished: ttl,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
				}},
			},
		}
	}
	// finish marks a job finished now, as the job controller would.
	finish := func(t *testing.T, name string, typ batchv1.JobConditionType) {
		t.Helper()
		j, err := cs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		now := metav1.Now()
		j.Status.StartTime = &now
		if typ == batchv1.JobComplete {
			j.Status.CompletionTime = &now
			j.Status.Succeeded = 1
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now})
		} else {
			j.Status.Failed = 1
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now})
		}
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, LastTransitionTime: now})
		if _, err := cs.UpdateStatus(ctx, j, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range []*batchv1.Job{
		newJob("done-ttl", ptr.To[int32](1)),
		newJob("failed-ttl", ptr.To[int32](1)),
		newJob("done-no-ttl", nil),
		newJob("running-ttl", ptr.To[int32](0)),
		newJob("done-long-ttl", ptr.To[int32](3600)),
	} {
		if _, err := cs.Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	finish(t, "done-ttl", batchv1.JobComplete)
	finish(t, "failed-ttl", batchv1.JobFailed)
	finish(t, "done-no-ttl", batchv1.JobComplete)
	finish(t, "done-long-ttl", batchv1.JobComplete)

	// Without a garbage collector the foreground deletion stays pending:
	// deletionTimestamp set, foregroundDeletion finalizer in place.
	for _, name := range []string{"done-ttl", "failed-ttl"} {
		t.Run(name+" deleted after its TTL", func(t *testing.T) {
			var j *batchv1.Job
			controllertest.Eventually(t, 5*time.Second, func() (bool, string) {
				var err error
				j, err = cs.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return j.DeletionTimestamp != nil, "not deleted"
			})
			if !slices.Contains(j.Finalizers, metav1.FinalizerDeleteDependents) {
				t.Errorf("finalizers %v: want foreground deletion", j.Finalizers)
			}
			// Finished within the second before start; the TTL is 1 s and
			// metav1.Time has whole seconds, so not before start-1s+1s.
			if d := j.DeletionTimestamp.Time.Sub(start.Truncate(time.Second)); d < 0 {
				t.Errorf("deleted %v before its TTL passed", -d)
			}
		})
	}
	t.Run("others kept", func(t *testing.T) {
		for _, name := range []string{"done-no-ttl", "running-ttl", "done-long-ttl"} {
			j, err := cs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if j.DeletionTimestamp != nil {
				t.Errorf("%s: deleted, want kept", name)
			}
		}
	})
	t.Run("raised TTL re-checked", func(t *testing.T) {
		if _, err := cs.Create(ctx, newJob("raised", ptr.To[int32](2)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		finish(t, "raised", batchv1.JobComplete)
		j, err := cs.Get(ctx, "raised", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j.Spec.TTLSecondsAfterFinished = ptr.To[int32](3600)
		if _, err := cs.Update(ctx, j, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		controllertest.Consistently(t, 3*time.Second, func() (bool, string) {
			j, err := cs.Get(ctx, "raised", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return j.DeletionTimestamp == nil, fmt.Sprintf("deleted at %v although its TTL was raised", j.DeletionTimestamp)
		})
	})
}
