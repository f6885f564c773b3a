package job_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/controller/controllertest"
)

// newJob returns a job whose pods run for runFor on a simulated node and
// exit with exitCode.
func newJob(name string, completions, parallelism int32, runFor string, exitCode int) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Completions: ptr.To(completions),
			Parallelism: ptr.To(parallelism),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{
					"simnode.rudder.dev/run-duration": runFor,
					"simnode.rudder.dev/exit-code":    fmt.Sprint(exitCode),
				}},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					Containers:                    []corev1.Container{{Name: "work", Image: "registry.example/work:1"}},
					TerminationGracePeriodSeconds: ptr.To(int64(1)),
				},
			},
		},
	}
}

// waitJob waits until the job satisfies cond and returns it.
func waitJob(t *testing.T, client kubernetes.Interface, ns, name string, timeout time.Duration, cond func(*batchv1.Job) bool) *batchv1.Job {
	t.Helper()
	var job *batchv1.Job
	controllertest.Eventually(t, timeout, func() (bool, string) {
		var err error
		job, err = client.BatchV1().Jobs(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cond(job), fmt.Sprintf("status %+v", job.Status)
	})
	return job
}

// hasCondition: the job has a True condition of type t (and reason, when
// not empty).
func hasCondition(t batchv1.JobConditionType, reason string) func(*batchv1.Job) bool {
	return func(j *batchv1.Job) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue && (reason == "" || c.Reason == reason) {
				return true
			}
		}
		return false
	}
}

// conditionTypes lists the job's True conditions in order.
func conditionTypes(j *batchv1.Job) []string {
	var out []string
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			out = append(out, string(c.Type))
		}
	}
	return out
}

// jobPods lists the pods in ns controlled by uid.
func jobPods(t *testing.T, client kubernetes.Interface, ns string, uid types.UID) []corev1.Pod {
	t.Helper()
	list, err := client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid {
			out = append(out, p)
		}
	}
	return out
}

// eventMessages returns the messages of the events on the object named
// name with reason.
// eventMessages returns the messages of name's events with reason, once
// at least one exists (up to 10 s): the controller records events
// asynchronously, after the writes a test waits for.
func eventMessages(t *testing.T, client kubernetes.Interface, ns, name, reason string) []string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if msgs := listEventMessages(t, client, ns, name, reason); len(msgs) > 0 || time.Now().After(deadline) {
			return msgs
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func listEventMessages(t *testing.T, client kubernetes.Interface, ns, name, reason string) []string {
	t.Helper()
	list, err := client.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			out = append(out, e.Message)
		}
	}
	return out
}
