package kubelet

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// testPod is a pod with the named containers (image "busybox",
// IfNotPresent) and restart policy.
func testPod(policy corev1.RestartPolicy, names ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"},
		Spec:       corev1.PodSpec{RestartPolicy: policy, TerminationGracePeriodSeconds: ptr.To(int64(30))},
	}
	for _, n := range names {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: n, Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent})
	}
	return p
}

func withInit(p *corev1.Pod, names ...string) *corev1.Pod {
	for _, n := range names {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent})
	}
	return p
}

func readySandbox(attempt uint32) observedSandbox {
	return observedSandbox{ID: "sb" + string(rune('0'+attempt)), Attempt: attempt, Ready: true, CreatedAt: t0, IPs: []string{"10.0.0.5"}}
}

func deadSandbox(attempt uint32) observedSandbox {
	s := readySandbox(attempt)
	s.Ready, s.IPs = false, nil
	return s
}

func running(name string, restarts int32) observedContainer {
	return observedContainer{ID: name + "-" + string(rune('0'+restarts)), Name: name, SandboxID: "sb0", RestartCount: restarts, State: stateRunning,
		CreatedAt: t0, StartedAt: t0, Hash: containerHash(&corev1.Container{Name: name, Image: "busybox"})}
}

func exited(name string, restarts, code int32, finished time.Time) observedContainer {
	c := running(name, restarts)
	c.State, c.ExitCode, c.FinishedAt = stateExited, code, finished
	return c
}

func inSandbox(c observedContainer, sb string) observedContainer { c.SandboxID = sb; return c }

// actionsOf renders a plan's actions as short strings.
func actionsOf(p plan) []string {
	var out []string
	for _, a := range p.Actions {
		s := a.Kind.String()
		switch a.Kind {
		case actKillContainer, actRemoveContainer:
			s += " " + a.ContainerID
		case actStopSandbox, actRemoveSandbox:
			s += " " + a.SandboxID
		case actCreateSandbox:
			s += " #" + string(rune('0'+a.Attempt))
		case actPullImage:
			s += " " + a.Image
		case actStartContainer:
			s += " " + a.Container + " #" + string(rune('0'+a.Attempt))
		}
		out = append(out, s)
	}
	return out
}

func TestComputePlan(t *testing.T) {
	present := map[string]bool{"busybox": true}
	deleting := func(p *corev1.Pod, left time.Duration) *corev1.Pod {
		p.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(left)))
		p.DeletionGracePeriodSeconds = ptr.To(int64(30))
		return p
	}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		obs         podObserved
		now         time.Time // t0 when zero
		images      map[string]bool
		backoff     map[string]backoffEntry
		want        []string
		wantWaiting map[string]string // container: reason
		wantRequeue time.Duration
		stopping    bool
		stopped     bool
	}{
		{
			name:   "new pod: a sandbox, then every container",
			pod:    testPod(corev1.RestartPolicyAlways, "a", "b"),
			images: present,
			want:   []string{"CreateSandbox #0", "StartContainer a #0", "StartContainer b #0"},
		},
		{
			name:   "new pod with init containers: only the first init container",
			pod:    withInit(testPod(corev1.RestartPolicyAlways, "a"), "i1", "i2"),
			images: present,
			want:   []string{"CreateSandbox #0", "StartContainer i1 #0"},
		},
		{
			name: "image absent: pulled first",
			pod:  testPod(corev1.RestartPolicyAlways, "a"),
			want: []string{"CreateSandbox #0", "PullImage busybox", "StartContainer a #0"},
		},
		{
			name:   "running pod: nothing to do (a restarted kubelet adopts it)",
			pod:    testPod(corev1.RestartPolicyAlways, "a", "b"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("a", 0), running("b", 3)}},
			images: present,
			want:   nil,
		},
		{
			name:   "one container missing: only it starts",
			pod:    testPod(corev1.RestartPolicyAlways, "a", "b"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("a", 0)}},
			images: present,
			want:   []string{"StartContainer b #0"},
		},
		{
			name:   "Always: first crash restarts at once, restart count from the last instance",
			pod:    testPod(corev1.RestartPolicyAlways, "a"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("a", 4, 1, t0.Add(-time.Second))}},
			images: present,
			want:   []string{"StartContainer a #5"},
		},
		{
			name:        "Always: crash within the back-off waits (CrashLoopBackOff)",
			pod:         testPod(corev1.RestartPolicyAlways, "a"),
			obs:         podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("a", 1, 1, t0.Add(-3*time.Second))}},
			images:      present,
			backoff:     map[string]backoffEntry{restartKey("a"): {Delay: 10 * time.Second, Last: t0.Add(-20 * time.Second)}},
			wantWaiting: map[string]string{"a": reasonCrashLoopBackOff},
			wantRequeue: 7 * time.Second,
		},
		{
			name:    "Always: back-off over: restart",
			pod:     testPod(corev1.RestartPolicyAlways, "a"),
			obs:     podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("a", 1, 1, t0.Add(-11*time.Second))}},
			images:  present,
			backoff: map[string]backoffEntry{restartKey("a"): {Delay: 10 * time.Second, Last: t0.Add(-20 * time.Second)}},
			want:    []string{"StartContainer a #2"},
		},
		{
			name:   "OnFailure: success is not restarted; the pod is done, its sandbox stops",
			pod:    testPod(corev1.RestartPolicyOnFailure, "a"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("a", 0, 0, t0)}},
			images: present,
			want:   []string{"StopSandbox sb0"},
		},
		{
			name:   "OnFailure: failure is restarted",
			pod:    testPod(corev1.RestartPolicyOnFailure, "a"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("a", 0, 2, t0)}},
			images: present,
			want:   []string{"StartContainer a #1"},
		},
		{
			name:   "Never: a failure stays; the sandbox stops",
			pod:    testPod(corev1.RestartPolicyNever, "a"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("a", 0, 2, t0)}},
			images: present,
			want:   []string{"StopSandbox sb0"},
		},
		{
			name:   "Never: one still running, one exited: nothing",
			pod:    testPod(corev1.RestartPolicyNever, "a", "b"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("a", 0, 0, t0), running("b", 0)}},
			images: present,
		},
		{
			name:   "dead sandbox: kill, next sandbox attempt, all containers again",
			pod:    testPod(corev1.RestartPolicyAlways, "a"),
			obs:    podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{running("a", 2)}},
			images: present,
			want:   []string{"KillContainer a-2", "CreateSandbox #1", "StartContainer a #3"},
		},
		{
			name: "dead sandbox under Never after the containers ran: the pod is over",
			pod:  testPod(corev1.RestartPolicyNever, "a"),
			obs:  podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{exited("a", 0, 137, t0)}},
		},
		{
			name:   "dead sandbox under OnFailure: containers that succeeded are not redone",
			pod:    testPod(corev1.RestartPolicyOnFailure, "a", "b"),
			obs:    podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{exited("a", 0, 0, t0), exited("b", 0, 1, t0)}},
			images: present,
			want:   []string{"CreateSandbox #1", "StartContainer b #1"},
		},
		{
			name:   "init: the first done, the second starts",
			pod:    withInit(testPod(corev1.RestartPolicyAlways, "a"), "i1", "i2"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("i1", 0, 0, t0)}},
			images: present,
			want:   []string{"StartContainer i2 #0"},
		},
		{
			name: "init: done in an old sandbox only: run again in the new one",
			pod:  withInit(testPod(corev1.RestartPolicyAlways, "a"), "i1"),
			obs: podObserved{Sandboxes: []observedSandbox{readySandbox(1), deadSandbox(0)},
				Containers: []observedContainer{exited("i1", 0, 0, t0)}},
			images: present,
			want:   []string{"StartContainer i1 #1"},
		},
		{
			name:   "init: one running, nothing else",
			pod:    withInit(testPod(corev1.RestartPolicyAlways, "a"), "i1", "i2"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("i1", 0)}},
			images: present,
		},
		{
			name:   "init: all done, the containers start",
			pod:    withInit(testPod(corev1.RestartPolicyAlways, "a"), "i1"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("i1", 0, 0, t0)}},
			images: present,
			want:   []string{"StartContainer a #0"},
		},
		{
			name:   "init failed under Always: restarted",
			pod:    withInit(testPod(corev1.RestartPolicyAlways, "a"), "i1"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("i1", 0, 1, t0)}},
			images: present,
			want:   []string{"StartContainer i1 #1"},
		},
		{
			name:   "init failed under Never: the pod fails, its sandbox stops",
			pod:    withInit(testPod(corev1.RestartPolicyNever, "a"), "i1"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("i1", 0, 1, t0)}},
			images: present,
			want:   []string{"StopSandbox sb0"},
		},
		{
			name: "pull policy Always: pulled even when present",
			pod: func() *corev1.Pod {
				p := testPod(corev1.RestartPolicyAlways, "a")
				p.Spec.Containers[0].ImagePullPolicy = corev1.PullAlways
				return p
			}(),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}},
			images: present,
			want:   []string{"PullImage busybox", "StartContainer a #0"},
		},
		{
			name: "pull policy Never and absent: ErrImageNeverPull",
			pod: func() *corev1.Pod {
				p := testPod(corev1.RestartPolicyAlways, "a")
				p.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
				return p
			}(),
			obs:         podObserved{Sandboxes: []observedSandbox{readySandbox(0)}},
			wantWaiting: map[string]string{"a": reasonErrImageNeverPull},
		},
		{
			name:        "a failed pull within its back-off: ImagePullBackOff",
			pod:         testPod(corev1.RestartPolicyAlways, "a"),
			obs:         podObserved{Sandboxes: []observedSandbox{readySandbox(0)}},
			backoff:     map[string]backoffEntry{pullKey("busybox"): {Delay: 20 * time.Second, Last: t0.Add(-5 * time.Second), Err: "not found"}},
			wantWaiting: map[string]string{"a": reasonImagePullBackOff},
			wantRequeue: 15 * time.Second,
		},
		{
			name:    "a failed pull after its back-off: pulled again",
			pod:     testPod(corev1.RestartPolicyAlways, "a"),
			obs:     podObserved{Sandboxes: []observedSandbox{readySandbox(0)}},
			backoff: map[string]backoffEntry{pullKey("busybox"): {Delay: 20 * time.Second, Last: t0.Add(-25 * time.Second), Err: "not found"}},
			want:    []string{"PullImage busybox", "StartContainer a #0"},
		},
		{
			name: "an invalid image name: InvalidImageName, nothing pulled",
			pod: func() *corev1.Pod {
				p := testPod(corev1.RestartPolicyAlways, "a")
				p.Spec.Containers[0].Image = "Not A/Valid::Image"
				return p
			}(),
			obs:         podObserved{Sandboxes: []observedSandbox{readySandbox(0)}},
			wantWaiting: map[string]string{"a": reasonInvalidImageName},
		},
		{
			name: "a running container whose image changed: killed and started again",
			pod: func() *corev1.Pod {
				p := testPod(corev1.RestartPolicyAlways, "a")
				p.Spec.Containers[0].Image = "busybox:2"
				return p
			}(),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("a", 0)}},
			images: map[string]bool{"busybox:2": true},
			want:   []string{"KillContainer a-0", "StartContainer a #1"},
		},
		{
			name:   "a container created but never started: removed and started anew",
			pod:    testPod(corev1.RestartPolicyNever, "a"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{func() observedContainer { c := running("a", 0); c.State = stateCreated; return c }()}},
			images: present,
			want:   []string{"KillContainer a-0", "StartContainer a #1"},
		},
		{
			name: "exited instances beyond two are removed; old empty sandboxes too",
			pod:  testPod(corev1.RestartPolicyAlways, "a"),
			obs: podObserved{Sandboxes: []observedSandbox{readySandbox(1), deadSandbox(0)},
				Containers: []observedContainer{inSandbox(running("a", 3), "sb1"), inSandbox(exited("a", 2, 1, t0), "sb1"), inSandbox(exited("a", 1, 1, t0), "sb1"), exited("a", 0, 1, t0)}},
			images: present,
			want:   []string{"RemoveContainer a-0", "RemoveSandbox sb0"},
		},
		{
			name:     "deleted: kill within the remaining grace, stop the sandbox",
			pod:      deleting(testPod(corev1.RestartPolicyAlways, "a", "b"), 20*time.Second),
			obs:      podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("a", 0), exited("b", 0, 0, t0)}},
			want:     []string{"KillContainer a-0", "StopSandbox sb0"},
			stopping: true,
		},
		{
			name:     "deleted and stopped: nothing left to do",
			pod:      deleting(testPod(corev1.RestartPolicyAlways, "a"), 20*time.Second),
			obs:      podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{exited("a", 0, 137, t0)}},
			stopping: true, stopped: true,
		},
		{
			name:     "gone from the API: stop what runs",
			obs:      podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("a", 0)}},
			want:     []string{"KillContainer a-0", "StopSandbox sb0"},
			stopping: true,
		},
		{
			name: "terminal in the API: never started again",
			pod: func() *corev1.Pod {
				p := testPod(corev1.RestartPolicyAlways, "a")
				p.Status.Phase = corev1.PodFailed
				return p
			}(),
			obs:      podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{exited("a", 0, 1, t0)}},
			stopping: true, stopped: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := tc.now
			if now.IsZero() {
				now = t0
			}
			tc.obs.sortNewestFirst()
			p := computePlan(planInput{Pod: tc.pod, Observed: tc.obs, Now: now, ImagePresent: tc.images, Backoff: tc.backoff})
			if got := actionsOf(p); !slices.Equal(got, tc.want) {
				t.Errorf("actions %q, want %q", got, tc.want)
			}
			got := map[string]string{}
			for c, w := range p.Waiting {
				got[c] = w.Reason
			}
			if len(got) != len(tc.wantWaiting) {
				t.Errorf("waiting %v, want %v", p.Waiting, tc.wantWaiting)
			}
			for c, r := range tc.wantWaiting {
				if got[c] != r {
					t.Errorf("waiting %v, want %v", p.Waiting, tc.wantWaiting)
				}
			}
			if p.Requeue != tc.wantRequeue {
				t.Errorf("requeue %v, want %v", p.Requeue, tc.wantRequeue)
			}
			if p.Stopping != tc.stopping || p.Stopped != tc.stopped {
				t.Errorf("stopping %v stopped %v, want %v %v", p.Stopping, p.Stopped, tc.stopping, tc.stopped)
			}
		})
	}
}

// The grace of kills: what is left of the deletion's, at least 2 s; the
// pod's own when a spec change kills.
func TestPlanGrace(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, "a")
	obs := podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("a", 0)}}
	for _, tc := range []struct {
		name string
		left time.Duration
		want time.Duration
	}{
		{"20 s left", 20 * time.Second, 20 * time.Second},
		{"past the deadline: the minimum", -5 * time.Second, minGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod.DeepCopy()
			p.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(tc.left)))
			p.DeletionGracePeriodSeconds = ptr.To(int64(30))
			pl := computePlan(planInput{Pod: p, Observed: obs, Now: t0})
			if len(pl.Actions) == 0 || pl.Actions[0].Grace != tc.want {
				t.Fatalf("actions %+v, want a kill with grace %v", pl.Actions, tc.want)
			}
		})
	}
}

// Back-off over a crash loop: 10 s, 20 s, 40 s, ... 300 s, and from the
// start again once the container ran 10 min past its last restart.
func TestCrashLoopBackoff(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, "a")
	backoff := map[string]backoffEntry{}
	now := t0
	restarts := int32(0)
	var delays []time.Duration
	crash := func(at time.Time) podObserved {
		o := podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("a", restarts, 1, at)}}
		o.sortNewestFirst()
		return o
	}
	for range 8 {
		obs := crash(now)
		p := computePlan(planInput{Pod: pod, Observed: obs, Now: now, ImagePresent: map[string]bool{"busybox": true}, Backoff: backoff})
		if len(p.Actions) == 0 {
			// In back-off: advance to its end, as the requeue timer would.
			if p.Waiting["a"].Reason != reasonCrashLoopBackOff || !strings.Contains(p.Waiting["a"].Message, "restarting failed container=a pod=web_ns(uid-1)") {
				t.Fatalf("waiting %+v", p.Waiting)
			}
			delays = append(delays, p.Requeue)
			now = now.Add(p.Requeue)
			p = computePlan(planInput{Pod: pod, Observed: obs, Now: now, ImagePresent: map[string]bool{"busybox": true}, Backoff: backoff})
		}
		a := p.Actions[0]
		if a.Kind != actStartContainer {
			t.Fatalf("actions %v", actionsOf(p))
		}
		backoff[a.BackoffKey] = a.Backoff
		restarts++
		// The new instance crashes at once.
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	if !slices.Equal(delays, want) {
		t.Errorf("back-offs %v, want %v", delays, want)
	}
	// Ran 11 minutes, then crashed: restarted at once, back-off reset.
	now = now.Add(11 * time.Minute)
	p := computePlan(planInput{Pod: pod, Observed: crash(now), Now: now, ImagePresent: map[string]bool{"busybox": true}, Backoff: backoff})
	if len(p.Actions) != 1 || p.Actions[0].Backoff.Delay != backoffInitial {
		t.Errorf("after a long run: %v, back-off %v; want an immediate restart and a reset back-off", actionsOf(p), p.Actions)
	}
}

func TestValidImageRef(t *testing.T) {
	for ref, want := range map[string]bool{
		"busybox":                     true,
		"busybox:1.36":                true,
		"127.0.0.1:5000/test/busybox": true,
		"registry.k8s.io/pause:3.10":  true,
		"docker.io/library/nginx@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef": true,
		"":                   false,
		"Busybox":            false,
		"busybox:":           false,
		"a b":                false,
		"Not A/Valid::Image": false,
	} {
		if got := validImageRef(ref); got != want {
			t.Errorf("validImageRef(%q) = %v, want %v", ref, got, want)
		}
	}
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }
