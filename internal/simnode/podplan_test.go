package simnode

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testConfig() *Config {
	return &Config{PodStartDelay: time.Second, PodStopDelay: 500 * time.Millisecond,
		JobDuration: 5 * time.Second, RestartBackoff: 10 * time.Second}
}

// testPod is a pod bound to a node, shaped by the options.
func testPod(opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1", Annotations: map[string]string{}},
		Spec: corev1.PodSpec{NodeName: "sim-0", RestartPolicy: corev1.RestartPolicyAlways,
			Containers: []corev1.Container{{Name: "a", Image: "nginx:1.27"}, {Name: "b", Image: "registry.k8s.io/pause:3.10"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0.Add(-time.Hour))}}},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func restartPolicy(r corev1.RestartPolicy) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Spec.RestartPolicy = r }
}

func annotate(k, v string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Annotations[k] = v }
}

// started makes the pod Running as the node would have at t.
func started(t time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status = runningStatus(p, t, "198.18.0.1", "10.128.0.2") }
}

// jobOwned makes a Job the pod's controller.
func jobOwned(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "job-uid", Controller: ptr.To(true)}}
}

func deleting(grace int64) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: t0.Add(time.Duration(grace) * time.Second)}
		p.DeletionGracePeriodSeconds = &grace
	}
}

func TestPlanPod(t *testing.T) {
	cfg := testConfig()
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		mem  podMemory
		now  time.Time
		want podPlan
	}{
		{"new pod waits out the start delay", testPod(), podMemory{seenAt: t0}, t0.Add(300 * time.Millisecond),
			podPlan{step: stepWait, after: 700 * time.Millisecond}},
		{"then starts", testPod(), podMemory{seenAt: t0}, t0.Add(time.Second), podPlan{step: stepStart}},
		{"a running service pod has nothing to do", testPod(started(t0)), podMemory{runStart: t0}, t0.Add(time.Hour), podPlan{}},
		{"a job pod runs for JobDuration", testPod(restartPolicy(corev1.RestartPolicyNever), jobOwned, started(t0)), podMemory{runStart: t0},
			t0.Add(2 * time.Second), podPlan{step: stepWait, after: 3 * time.Second}},
		{"then exits 0", testPod(restartPolicy(corev1.RestartPolicyNever), jobOwned, started(t0)), podMemory{runStart: t0},
			t0.Add(5 * time.Second), podPlan{step: stepExit}},
		{"a restartPolicy Never pod no Job controls runs on", testPod(restartPolicy(corev1.RestartPolicyNever), started(t0)), podMemory{runStart: t0},
			t0.Add(time.Hour), podPlan{}},
		{"annotations set duration and exit code", testPod(restartPolicy(corev1.RestartPolicyOnFailure), annotate(AnnotationRunDuration, "250ms"),
			annotate(AnnotationExitCode, "3"), started(t0)), podMemory{runStart: t0}, t0.Add(250 * time.Millisecond),
			podPlan{step: stepExit, exitCode: 3}},
		{"a bad annotation is ignored", testPod(restartPolicy(corev1.RestartPolicyNever), annotate(AnnotationRunDuration, "soon"),
			annotate(AnnotationExitCode, "x"), started(t0)), podMemory{runStart: t0}, t0.Add(5 * time.Second), podPlan{step: stepExit}},
		{"without memory the status's start time counts", testPod(restartPolicy(corev1.RestartPolicyNever), jobOwned, started(t0)), podMemory{},
			t0.Add(time.Second), podPlan{step: stepWait, after: 4 * time.Second}},
		{"a deadline cuts a job short", testPod(restartPolicy(corev1.RestartPolicyNever), jobOwned, started(t0),
			func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](2) }), podMemory{runStart: t0},
			t0.Add(2 * time.Second), podPlan{step: stepDeadline}},
		{"and applies to service pods", testPod(started(t0), func(p *corev1.Pod) { p.Spec.ActiveDeadlineSeconds = ptr.To[int64](60) }),
			podMemory{runStart: t0}, t0.Add(time.Second), podPlan{step: stepWait, after: 59 * time.Second}},
		{"finished pods are left alone", testPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), podMemory{seenAt: t0},
			t0.Add(time.Hour), podPlan{}},
		{"a deleted pod stops for PodStopDelay", testPod(started(t0), deleting(30)), podMemory{},
			t0, podPlan{step: stepWait, after: 500 * time.Millisecond}},
		{"no longer than its grace period", testPod(started(t0), deleting(0)), podMemory{}, t0, podPlan{step: stepDelete}},
		{"then its deletion is confirmed", testPod(started(t0), deleting(30)), podMemory{stopAt: t0}, t0, podPlan{step: stepDelete}},
		{"once, while finalizers hold it", testPod(started(t0), deleting(30), func(p *corev1.Pod) { p.Finalizers = []string{"example.com/hold"} }),
			podMemory{stopAt: t0, confirmed: true}, t0, podPlan{}},
		{"and again once they are gone", testPod(started(t0), deleting(30)), podMemory{stopAt: t0, confirmed: true}, t0, podPlan{step: stepDelete}},
		{"an image that cannot exist fails to pull", testPod(func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.k8s.io/invalid-image:x" }),
			podMemory{seenAt: t0}, t0.Add(time.Second), podPlan{step: stepPullError}},
		{"as does an annotated pod", testPod(annotate(AnnotationImagePullError, "")), podMemory{seenAt: t0}, t0.Add(time.Second), podPlan{step: stepPullError}},
		{"then it backs off", testPod(annotate(AnnotationImagePullError, ""), pulling(reasonErrImagePull)), podMemory{pullAt: t0}, t0.Add(time.Second),
			podPlan{step: stepPullBackOff}},
		{"and stays there", testPod(annotate(AnnotationImagePullError, ""), pulling(reasonImagePullBackOff)), podMemory{pullAt: t0}, t0.Add(time.Hour),
			podPlan{}},
		{"readiness another writer took away is re-asserted", testPod(started(t0), markedNotReady), podMemory{runStart: t0}, t0.Add(time.Hour),
			podPlan{step: stepReassert}},
		{"a failing readiness probe takes readiness away", testPod(started(t0), annotate(AnnotationReady, "false")), podMemory{runStart: t0}, t0.Add(time.Hour),
			podPlan{step: stepReassert}},
		{"a new generation is observed", testPod(started(t0), func(p *corev1.Pod) { p.Generation = 2 }), podMemory{runStart: t0}, t0.Add(time.Hour),
			podPlan{step: stepReassert}},
		{"a crash-looping pod is not made ready", testPod(restartPolicy(corev1.RestartPolicyOnFailure), annotate(AnnotationExitCode, "1"), started(t0),
			markedNotReady, func(p *corev1.Pod) {
				p.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
			}),
			podMemory{exitedAt: t0}, t0, podPlan{step: stepWait, after: 10 * time.Second}},
		{"a pending pod that is deleted is confirmed too", testPod(deleting(30)), podMemory{seenAt: t0, stopAt: t0}, t0, podPlan{step: stepDelete}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mem := tc.mem
			if got := planPod(cfg, tc.pod, &mem, tc.now); got != tc.want {
				t.Fatalf("plan %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestPodLifecycle walks pods through their statuses the way the node
// writes them, checking each against what a kubelet would report.
func TestPodLifecycle(t *testing.T) {
	cfg := testConfig()
	t.Run("running", func(t *testing.T) {
		pod := testPod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"},
				{Name: "sidecar", Image: "envoy:v1", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}}
		})
		st := runningStatus(pod, t0, "198.18.0.1", "10.128.0.2")
		if st.Phase != corev1.PodRunning || st.PodIP != "10.128.0.2" || st.PodIPs[0].IP != "10.128.0.2" ||
			st.HostIP != "198.18.0.1" || st.HostIPs[0].IP != "198.18.0.1" || !st.StartTime.Time.Equal(t0) {
			t.Fatalf("status %+v", st)
		}
		wantConds := []corev1.PodConditionType{corev1.PodScheduled, corev1.PodReadyToStartContainers, corev1.PodInitialized, corev1.PodReady, corev1.ContainersReady}
		if len(st.Conditions) != len(wantConds) {
			t.Fatalf("conditions %+v", st.Conditions)
		}
		for i, c := range st.Conditions {
			if c.Type != wantConds[i] || c.Status != corev1.ConditionTrue {
				t.Errorf("condition %d: %s=%s", i, c.Type, c.Status)
			}
		}
		if !st.Conditions[0].LastTransitionTime.Time.Equal(t0.Add(-time.Hour)) {
			t.Error("PodScheduled's transition time moved")
		}
		for _, cs := range st.ContainerStatuses {
			if !cs.Ready || !*cs.Started || cs.State.Running == nil || !strings.HasPrefix(cs.ContainerID, "simnode://") ||
				!strings.Contains(cs.ImageID, "@sha256:") {
				t.Errorf("container %+v", cs)
			}
		}
		if init := st.InitContainerStatuses[0]; init.State.Terminated == nil || init.State.Terminated.Reason != "Completed" {
			t.Errorf("init container %+v", init)
		}
		if side := st.InitContainerStatuses[1]; side.State.Running == nil || !side.Ready {
			t.Errorf("sidecar %+v", side)
		}
	})
	t.Run("readiness gates hold Ready back", func(t *testing.T) {
		pod := testPod(func(p *corev1.Pod) {
			p.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
		})
		st := runningStatus(pod, t0, "198.18.0.1", "10.128.0.2")
		for _, c := range st.Conditions {
			if c.Type == corev1.PodReady && (c.Status != corev1.ConditionFalse || c.Reason != "ReadinessGatesNotReady") {
				t.Fatalf("Ready %+v", c)
			}
		}
	})
	for _, tc := range []struct {
		name      string
		policy    corev1.RestartPolicy
		code      int32
		wantPhase corev1.PodPhase
		reason    string
	}{
		{"succeeds", corev1.RestartPolicyNever, 0, corev1.PodSucceeded, "Completed"},
		{"fails", corev1.RestartPolicyNever, 3, corev1.PodFailed, "Error"},
		{"OnFailure succeeds", corev1.RestartPolicyOnFailure, 0, corev1.PodSucceeded, "Completed"},
		{"OnFailure crash-loops", corev1.RestartPolicyOnFailure, 2, corev1.PodRunning, "Error"},
	} {
		t.Run("job "+tc.name, func(t *testing.T) {
			pod := testPod(restartPolicy(tc.policy), jobOwned, started(t0))
			pod.Status = exitedStatus(cfg, pod, t0.Add(5*time.Second), tc.code)
			if pod.Status.Phase != tc.wantPhase {
				t.Fatalf("phase %s, want %s", pod.Status.Phase, tc.wantPhase)
			}
			for _, cs := range pod.Status.ContainerStatuses {
				term := cs.State.Terminated
				if tc.wantPhase == corev1.PodRunning {
					term = cs.LastTerminationState.Terminated
					if w := cs.State.Waiting; w == nil || w.Reason != "CrashLoopBackOff" {
						t.Errorf("container %s state %+v", cs.Name, cs.State)
					}
				}
				if term == nil || term.ExitCode != tc.code || term.Reason != tc.reason || !term.StartedAt.Time.Equal(t0) || cs.Ready {
					t.Errorf("container %s: %+v", cs.Name, cs)
				}
			}
			if tc.wantPhase != corev1.PodRunning {
				return
			}
			// The crash loop: back-off, restart, run, exit again.
			mem := podMemory{exitedAt: t0.Add(5 * time.Second)}
			if p := planPod(cfg, pod, &mem, t0.Add(6*time.Second)); p.step != stepWait || p.after != 9*time.Second {
				t.Fatalf("back-off plan %+v", p)
			}
			if p := planPod(cfg, pod, &mem, t0.Add(15*time.Second)); p.step != stepRestart {
				t.Fatalf("restart plan %+v", p)
			}
			pod.Status = restartedStatus(pod, t0.Add(15*time.Second))
			for _, cs := range pod.Status.ContainerStatuses {
				if cs.RestartCount != 1 || cs.State.Running == nil || !cs.Ready || cs.LastTerminationState.Terminated == nil {
					t.Errorf("restarted container %+v", cs)
				}
			}
			pod.Status = exitedStatus(cfg, pod, t0.Add(20*time.Second), tc.code)
			mem = podMemory{exitedAt: t0.Add(20 * time.Second)}
			if p := planPod(cfg, pod, &mem, t0.Add(20*time.Second)); p.after != 20*time.Second {
				t.Fatalf("second back-off should double: %+v", p)
			}
		})
	}
	t.Run("deadline", func(t *testing.T) {
		pod := testPod(started(t0))
		st := deadlineStatus(pod, t0.Add(time.Minute))
		if st.Phase != corev1.PodFailed || st.Reason != "DeadlineExceeded" || st.ContainerStatuses[0].State.Terminated == nil {
			t.Fatalf("status %+v", st)
		}
	})
}

// pulling puts the pod's first container in an image pull failure.
func pulling(reason string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status = pullStatus(p, t0, "198.18.0.1", "10.128.0.2", reason)
	}
}

// markedNotReady is what the node lifecycle controller does to the pods of
// a node it lost: Ready False, containers untouched.
func markedNotReady(p *corev1.Pod) {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status = corev1.ConditionFalse
		}
	}
}

// TestRecoveredStatuses checks the statuses the node writes to put the
// API's copy of a pod right: readiness back after an outage, a new image
// running after a spec change, the generation observed; and those of an
// image that fails to pull.
func TestRecoveredStatuses(t *testing.T) {
	t.Run("ready again", func(t *testing.T) {
		pod := testPod(started(t0), markedNotReady)
		pod.Status = reassertedStatus(pod, t0.Add(time.Hour))
		for _, c := range pod.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				t.Errorf("condition %s=%s", c.Type, c.Status)
			}
		}
		if needsReassert(pod) {
			t.Error("still needs re-asserting after its own write")
		}
	})
	t.Run("image changed", func(t *testing.T) {
		pod := testPod(started(t0))
		pod.Generation, pod.Spec.Containers[0].Image = 2, "nginx:1.28"
		pod.Status = reassertedStatus(pod, t0.Add(time.Minute))
		cs := pod.Status.ContainerStatuses[0]
		if cs.Image != "nginx:1.28" || cs.RestartCount != 1 || cs.State.Running == nil || cs.LastTerminationState.Terminated == nil {
			t.Errorf("container %+v", cs)
		}
		if pod.Status.ObservedGeneration != 2 {
			t.Errorf("observedGeneration %d", pod.Status.ObservedGeneration)
		}
		for _, c := range pod.Status.Conditions {
			if c.ObservedGeneration != 2 {
				t.Errorf("condition %s observedGeneration %d", c.Type, c.ObservedGeneration)
			}
		}
		if needsReassert(pod) {
			t.Error("still needs re-asserting after its own write")
		}
	})
	t.Run("image pull back-off", func(t *testing.T) {
		pod := testPod(func(p *corev1.Pod) { p.Spec.Containers[1].Image = "example.com/doesnotexist:1" })
		st := pullStatus(pod, t0, "198.18.0.1", "10.128.0.2", reasonImagePullBackOff)
		if st.Phase != corev1.PodPending || st.PodIP != "10.128.0.2" {
			t.Fatalf("status %+v", st)
		}
		if a := st.ContainerStatuses[0]; a.State.Running == nil {
			t.Errorf("container with a good image: %+v", a)
		}
		b := st.ContainerStatuses[1]
		if w := b.State.Waiting; w == nil || w.Reason != "ImagePullBackOff" || w.Message != `Back-off pulling image "example.com/doesnotexist:1"` {
			t.Errorf("container with a bad image: %+v", b)
		}
		for _, c := range st.Conditions {
			if c.Type == corev1.PodReady && (c.Status != corev1.ConditionFalse || c.Message != "containers with unready status: [b]") {
				t.Errorf("Ready %+v", c)
			}
		}
	})
}

func TestRestartBackoff(t *testing.T) {
	cfg := testConfig()
	for _, tc := range []struct {
		restarts int32
		want     time.Duration
	}{{0, 10 * time.Second}, {1, 20 * time.Second}, {4, 160 * time.Second}, {5, 5 * time.Minute}, {100, 5 * time.Minute}} {
		t.Run(fmt.Sprintf("%d restarts", tc.restarts), func(t *testing.T) {
			if got := restartBackoff(cfg, tc.restarts); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
