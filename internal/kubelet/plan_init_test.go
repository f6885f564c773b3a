package kubelet

import (
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// withSidecar appends sidecars (init containers with restartPolicy
// Always) to p's init containers.
func withSidecar(p *corev1.Pod, names ...string) *corev1.Pod {
	for _, n := range names {
		p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: n, Image: "busybox", ImagePullPolicy: corev1.PullIfNotPresent,
			RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)})
	}
	return p
}

func withStartupProbe(p *corev1.Pod, name string) *corev1.Pod {
	for i := range p.Spec.InitContainers {
		if p.Spec.InitContainers[i].Name == name {
			p.Spec.InitContainers[i].StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
		}
	}
	return p
}

// killOrder renders a plan's kills with what each waits for.
func killOrder(p plan) []string {
	var out []string
	for _, a := range p.Actions {
		if a.Kind != actKillContainer {
			continue
		}
		s := a.ContainerID
		if len(a.After) > 0 {
			after := slices.Clone(a.After)
			slices.Sort(after)
			s += " after"
			for _, id := range after {
				s += " " + id
			}
		}
		out = append(out, s)
	}
	return out
}

func TestPlanSidecars(t *testing.T) {
	present := map[string]bool{"busybox": true}
	sb := []observedSandbox{readySandbox(0)}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		obs         []observedContainer
		probes      map[probeKey]probeResult
		backoff     map[string]backoffEntry
		want        []string
		wantKills   []string
		wantWaiting map[string]string
	}{
		{
			name: "a new pod starts its first sidecar only",
			pod:  withInit(withSidecar(testPod(corev1.RestartPolicyAlways, "a"), "s1"), "i1"),
			want: []string{"StartContainer s1 #0"},
		},
		{
			name: "a running sidecar without a startup probe has started: the next init container starts",
			pod:  withInit(withSidecar(testPod(corev1.RestartPolicyAlways, "a"), "s1"), "i1"),
			obs:  []observedContainer{running("s1", 0)},
			want: []string{"StartContainer i1 #0"},
		},
		{
			name: "a sidecar whose startup probe has not succeeded holds the next",
			pod:  withStartupProbe(withSidecar(testPod(corev1.RestartPolicyAlways, "a"), "s1", "s2"), "s1"),
			obs:  []observedContainer{running("s1", 0)},
		},
		{
			name:   "its startup probe succeeded: the next sidecar starts",
			pod:    withStartupProbe(withSidecar(testPod(corev1.RestartPolicyAlways, "a"), "s1", "s2"), "s1"),
			obs:    []observedContainer{running("s1", 0)},
			probes: map[probeKey]probeResult{{"s1-0", probeStartup}: probeSuccess},
			want:   []string{"StartContainer s2 #0"},
		},
		{
			name: "sidecars started, init containers done: the main containers start, the sidecars keep running",
			pod:  withSidecar(withInit(withSidecar(testPod(corev1.RestartPolicyAlways, "a", "b"), "s1"), "i1"), "s2"),
			obs:  []observedContainer{running("s1", 0), exited("i1", 0, 0, t0), running("s2", 0)},
			want: []string{"StartContainer a #0", "StartContainer b #0"},
		},
		{
			name: "a sidecar that exited 0 under Never restarts while the pod runs",
			pod:  withSidecar(testPod(corev1.RestartPolicyNever, "a"), "s1"),
			obs:  []observedContainer{exited("s1", 0, 0, t0.Add(-time.Minute)), running("a", 0)},
			want: []string{"StartContainer s1 #1"},
		},
		{
			name:        "a crash-looping sidecar waits out its back-off; the running main container is left alone",
			pod:         withSidecar(testPod(corev1.RestartPolicyAlways, "a"), "s1"),
			obs:         []observedContainer{exited("s1", 1, 1, t0.Add(-2*time.Second)), running("a", 0)},
			backoff:     map[string]backoffEntry{restartKey("s1"): {Delay: 10 * time.Second, Last: t0.Add(-20 * time.Second)}},
			wantWaiting: map[string]string{"s1": reasonCrashLoopBackOff},
		},
		{
			name: "initialized: a restarting sidecar does not hold a main container's restart, nor are init containers re-run",
			pod:  withInit(withSidecar(testPod(corev1.RestartPolicyAlways, "a"), "s1"), "i1"),
			obs:  []observedContainer{exited("s1", 0, 1, t0.Add(-time.Minute)), exited("a", 0, 1, t0.Add(-time.Minute))},
			want: []string{"StartContainer s1 #1", "StartContainer a #1"},
		},
		{
			name: "a sidecar whose image changed is replaced",
			pod: func() *corev1.Pod {
				p := withSidecar(testPod(corev1.RestartPolicyAlways, "a"), "s1")
				p.Spec.InitContainers[0].Image = "busybox:2"
				return p
			}(),
			obs:  []observedContainer{running("s1", 0), running("a", 0)},
			want: []string{"KillContainer s1-0", "PullImage busybox:2", "StartContainer s1 #1"},
		},
		{
			name:      "Never: the main containers are done: sidecars stop in reverse order, then the sandbox",
			pod:       withSidecar(testPod(corev1.RestartPolicyNever, "a"), "s1", "s2"),
			obs:       []observedContainer{running("s1", 0), running("s2", 0), exited("a", 0, 0, t0)},
			want:      []string{"KillContainer s2-0", "KillContainer s1-0", "StopSandbox sb0"},
			wantKills: []string{"s2-0", "s1-0 after s2-0"},
		},
		{
			name: "OnFailure: a main container to restart keeps the sidecars",
			pod:  withSidecar(testPod(corev1.RestartPolicyOnFailure, "a"), "s1"),
			obs:  []observedContainer{running("s1", 0), exited("a", 0, 1, t0.Add(-time.Minute))},
			want: []string{"StartContainer a #1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := podObserved{Sandboxes: sb, Containers: tc.obs}
			obs.sortNewestFirst()
			p := computePlan(planInput{Pod: tc.pod, Observed: obs, Now: t0, ImagePresent: present, Backoff: tc.backoff, Probes: tc.probes})
			if got := actionsOf(p); !slices.Equal(got, tc.want) {
				t.Errorf("actions %q, want %q", got, tc.want)
			}
			if tc.wantKills != nil {
				if got := killOrder(p); !slices.Equal(got, tc.wantKills) {
					t.Errorf("kills %q, want %q", got, tc.wantKills)
				}
			}
			got := map[string]string{}
			for c, w := range p.Waiting {
				got[c] = w.Reason
			}
			if len(got) != len(tc.wantWaiting) {
				t.Errorf("waiting %v, want %v", got, tc.wantWaiting)
			}
			for c, r := range tc.wantWaiting {
				if got[c] != r {
					t.Errorf("waiting %v, want %v", got, tc.wantWaiting)
				}
			}
		})
	}
}

// Deletion stops the main containers first, all at once, then the
// sidecars from the last to the first, each after those it outlives.
func TestPlanTerminationOrder(t *testing.T) {
	pod := withSidecar(withInit(withSidecar(testPod(corev1.RestartPolicyAlways, "a", "b"), "s1"), "i1"), "s2")
	pod.DeletionTimestamp = ptr.To(metav1.NewTime(t0.Add(20 * time.Second)))
	pod.DeletionGracePeriodSeconds = ptr.To(int64(30))
	obs := podObserved{Sandboxes: []observedSandbox{readySandbox(0)},
		Containers: []observedContainer{running("s1", 0), exited("i1", 0, 0, t0), running("s2", 0), running("a", 0), running("b", 0)}}
	obs.sortNewestFirst()
	p := computePlan(planInput{Pod: pod, Observed: obs, Now: t0})
	want := []string{"a-0", "b-0", "s2-0 after a-0 b-0", "s1-0 after a-0 b-0 s2-0"}
	if got := killOrder(p); !slices.Equal(got, want) {
		t.Errorf("kills %q, want %q", got, want)
	}
	for _, a := range p.Actions {
		if a.Kind == actKillContainer && a.Grace != 20*time.Second {
			t.Errorf("%s: grace %v, want the 20 s left", a.ContainerID, a.Grace)
		}
	}
	if n := len(p.Actions); n != 5 || p.Actions[n-1].Kind != actStopSandbox {
		t.Errorf("actions %q", actionsOf(p))
	}
}
