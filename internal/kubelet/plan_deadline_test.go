package kubelet

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// activeDeadlineSeconds counts from the pod's startTime: before it the
// plan asks to be woken at the deadline; at it the pod stops and fails.
func TestPlanActiveDeadline(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, "a")
	pod.Spec.ActiveDeadlineSeconds = ptr.To(int64(60))
	pod.Status.StartTime = ptr.To(metav1.NewTime(t0))
	obs := podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("a", 0)}}
	images := map[string]bool{"busybox": true}

	p := computePlan(planInput{Pod: pod, Observed: obs, Now: t0.Add(45 * time.Second), ImagePresent: images})
	if p.DeadlineExceeded || p.Stopping || len(p.Actions) != 0 || p.Requeue != 15*time.Second {
		t.Errorf("before the deadline: %+v, want nothing but a requeue in 15 s", p)
	}
	p = computePlan(planInput{Pod: pod, Observed: obs, Now: t0.Add(60 * time.Second), ImagePresent: images})
	if !p.DeadlineExceeded || !p.Stopping || !slices.Equal(actionsOf(p), []string{"KillContainer a-0", "StopSandbox sb0"}) || p.Actions[0].Grace != 30*time.Second {
		t.Errorf("at the deadline: %v %+v", actionsOf(p), p)
	}
	noStart := pod.DeepCopy()
	noStart.Status.StartTime = nil
	if p := computePlan(planInput{Pod: noStart, Observed: obs, Now: t0.Add(time.Hour), ImagePresent: images}); p.DeadlineExceeded || p.Requeue != 0 {
		t.Errorf("no start at all: %+v", p)
	}
	// The API has no startTime yet, the kubelet's own status has.
	if p := computePlan(planInput{Pod: noStart, Observed: obs, Now: t0.Add(50 * time.Second), ImagePresent: images, StartTime: t0}); p.DeadlineExceeded || p.Requeue != 10*time.Second {
		t.Errorf("the kubelet's start: %+v, want a requeue in 10 s", p)
	}

	st := computeStatus(statusInput{Pod: pod, Observed: obs, Now: t0.Add(time.Minute), RuntimeName: "rudder",
		Reason: reasonDeadlineExceeded, Message: messageDeadlineExceeded})
	if st.Phase != corev1.PodFailed || st.Reason != "DeadlineExceeded" || st.Message != "Pod was active on the node longer than the specified deadline" ||
		condStatus(st, corev1.PodReady) == "True" {
		t.Errorf("status %s %q %q ready %s", st.Phase, st.Reason, st.Message, condStatus(st, corev1.PodReady))
	}
}

// A liveness or startup failure kills within the probe's own
// terminationGracePeriodSeconds when it has one.
func TestProbeKillGrace(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, "a", "b")
	pod.Spec.Containers[0].LivenessProbe = &corev1.Probe{TerminationGracePeriodSeconds: ptr.To(int64(5))}
	pod.Spec.Containers[1].StartupProbe = &corev1.Probe{TerminationGracePeriodSeconds: ptr.To(int64(1))}
	obs := podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("a", 0), running("b", 0)}}
	for _, tc := range []struct {
		name string
		kill probeKill
		id   string
		want time.Duration
	}{
		{"liveness with its own grace", probeKill{Type: probeLiveness}, "a-0", 5 * time.Second},
		{"startup with 1 s: the 2 s minimum", probeKill{Type: probeStartup}, "b-0", minGrace},
		{"a probe without one: the pod's", probeKill{Type: probeLiveness}, "b-0", 30 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			acts := probeKillActions(pod, &obs, map[string]probeKill{tc.id: tc.kill})
			if len(acts) != 1 || acts[0].ContainerID != tc.id || acts[0].Grace != tc.want {
				t.Errorf("actions %+v, want a kill of %s within %v", acts, tc.id, tc.want)
			}
		})
	}
}
