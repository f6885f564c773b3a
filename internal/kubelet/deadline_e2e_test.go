package kubelet

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// On real containers: a pod past its activeDeadlineSeconds fails with
// upstream's reason, and a liveness failure kills within the probe's own
// terminationGracePeriodSeconds rather than the pod's.
func TestDeadlinesRealNode(t *testing.T) {
	e := newRealE2E(t)
	k := e.kubectl()
	ctl, vol, mount := ctlVolume(t)
	touch(t, ctl, "alive")
	// Handles SIGTERM by going on (an ignored signal would have the
	// runtime kill at once): only the SIGKILL at the grace's end stops it.
	stubborn := sh(`trap 'echo not yet' TERM; while :; do sleep 0.2; done`)
	e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "deadline"}, Spec: corev1.PodSpec{
		ActiveDeadlineSeconds: ptr.To(int64(3)), TerminationGracePeriodSeconds: ptr.To(int64(2)),
		Containers: []corev1.Container{{Name: "c", Image: realImage, Command: stubborn}}}})
	e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "liveness"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To(int64(120)),
		Containers: []corev1.Container{{Name: "c", Image: realImage, Command: stubborn, VolumeMounts: []corev1.VolumeMount{mount},
			LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/ctl/alive"}}},
				PeriodSeconds: 1, FailureThreshold: 1, TerminationGracePeriodSeconds: ptr.To(int64(2))}}},
		Volumes: []corev1.Volume{vol}}})

	t.Run("activeDeadlineSeconds: Failed, DeadlineExceeded", func(t *testing.T) {
		p := e.waitPod("deadline", "Failed", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })
		if p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
			t.Errorf("reason %q message %q", p.Status.Reason, p.Status.Message)
		}
		if ran := time.Since(p.Status.StartTime.Time); ran < 3*time.Second {
			t.Errorf("failed %v after its start, before the 3 s deadline", ran)
		}
		e.waitPod("deadline", "its container killed", func(p *corev1.Pod) bool {
			term := cstatus(p, "c").State.Terminated
			return term != nil && term.ExitCode == 137
		})
		// kubectl, as upstream's, shows the killed container's reason.
		if _, status := getPod(t, k, "deadline"); status != "Error" {
			t.Errorf("kubectl shows %q", status)
		}
		e.eventually("the DeadlineExceeded event", func() (bool, error) {
			return hasEvent(e, "deadline", "DeadlineExceeded", "Pod was active on the node longer than the specified deadline"), nil
		})
	})

	t.Run("a liveness failure kills within the probe's grace, not the pod's", func(t *testing.T) {
		e.waitPod("liveness", "Running", func(p *corev1.Pod) bool { return cstatus(p, "c").State.Running != nil })
		began := time.Now()
		if err := os.Remove(filepath.Join(ctl, "alive")); err != nil {
			t.Fatal(err)
		}
		e.eventually("the Killing event", func() (bool, error) {
			return hasEvent(e, "liveness", eventKilling, "Container c failed liveness probe, will be restarted"), nil
		})
		touch(t, ctl, "alive") // the next instance lives
		p := e.waitPod("liveness", "restarted", func(p *corev1.Pod) bool {
			cs := cstatus(p, "c")
			return cs.RestartCount == 1 && cs.State.Running != nil
		})
		if took := time.Since(began); took < 2*time.Second || took > 12*time.Second {
			t.Errorf("restart took %v: want the probe's 2 s grace (the pod's is 120 s)", took)
		}
		if lt := cstatus(p, "c").LastTerminationState.Terminated; lt == nil || lt.ExitCode != 137 {
			t.Errorf("last state %+v: want the SIGKILL at the grace's end", lt)
		}
	})
}
