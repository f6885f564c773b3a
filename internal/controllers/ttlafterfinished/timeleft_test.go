package ttlafterfinished

import (
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestTimeLeft(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	job := func(ttl *int32, conds ...batchv1.JobCondition) *batchv1.Job {
		return &batchv1.Job{Spec: batchv1.JobSpec{TTLSecondsAfterFinished: ttl}, Status: batchv1.JobStatus{Conditions: conds}}
	}
	cond := func(typ batchv1.JobConditionType, st corev1.ConditionStatus, at time.Time) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: st, LastTransitionTime: metav1.NewTime(at)}
	}
	tests := []struct {
		name    string
		job     *batchv1.Job
		now     time.Time
		cleanup bool
		left    time.Duration
		wantErr bool
	}{
		{"no ttl", job(nil, cond(batchv1.JobComplete, corev1.ConditionTrue, t0)), t0, false, 0, true},
		{"running", job(ptr.To[int32](10)), t0, false, 0, true},
		{"complete false", job(ptr.To[int32](10), cond(batchv1.JobComplete, corev1.ConditionFalse, t0)), t0, false, 0, true},
		{"suspended is not finished", job(ptr.To[int32](10), cond(batchv1.JobSuspended, corev1.ConditionTrue, t0)), t0, false, 0, true},
		{"complete, time left", job(ptr.To[int32](10), cond(batchv1.JobComplete, corev1.ConditionTrue, t0)), t0.Add(4 * time.Second), true, 6 * time.Second, false},
		{"failed, expired", job(ptr.To[int32](10), cond(batchv1.JobFailed, corev1.ConditionTrue, t0)), t0.Add(11 * time.Second), true, -time.Second, false},
		{"ttl zero", job(ptr.To[int32](0), cond(batchv1.JobComplete, corev1.ConditionTrue, t0)), t0, true, 0, false},
		{"no finish time", job(ptr.To[int32](1), cond(batchv1.JobComplete, corev1.ConditionTrue, time.Time{})), t0, true, 0, true},
		{"finished in the future", job(ptr.To[int32](1), cond(batchv1.JobComplete, corev1.ConditionTrue, t0.Add(time.Minute))), t0, true, 61 * time.Second, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := needsCleanup(tt.job); got != tt.cleanup {
				t.Errorf("needsCleanup = %v, want %v", got, tt.cleanup)
			}
			left, _, err := timeLeft(tt.job, tt.now)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && left != tt.left {
				t.Errorf("left = %v, want %v", left, tt.left)
			}
		})
	}
}
