package kubelet

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// Pod status with sidecars, as upstream's kubelet reports it and kubectl
// prints it (Init:N/M while an init container or a sidecar has not
// started, PodInitializing, READY counting sidecars).
func TestStatusSidecars(t *testing.T) {
	readiness := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	// s1 (startup and readiness probes), i1, then a.
	pod := func(policy corev1.RestartPolicy) *corev1.Pod {
		p := withInit(withStartupProbe(withSidecar(testPod(policy, "a"), "s1"), "s1"), "i1")
		p.Spec.InitContainers[0].ReadinessProbe = readiness
		return p
	}
	killed := exited("s1", 0, 137, t0)
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		obs     []observedContainer
		probes  map[probeKey]probeResult
		waiting map[string]waiting
		phase   corev1.PodPhase
		states  []string // s1, i1, a
		started bool     // s1's
		ready   []bool   // s1, a
		init    string
		cready  string
	}{
		{
			name:   "the sidecar runs, not started yet: Pending, Init:0/2",
			pod:    pod(corev1.RestartPolicyAlways),
			obs:    []observedContainer{running("s1", 0)},
			phase:  corev1.PodPending,
			states: []string{"running", "waiting/PodInitializing", "waiting/PodInitializing"},
			ready:  []bool{false, false},
			init:   "False/ContainersNotInitialized", cready: "False/ContainersNotInitialized",
		},
		{
			name:    "the sidecar started, the init container runs: Pending, Init:1/2",
			pod:     pod(corev1.RestartPolicyAlways),
			obs:     []observedContainer{running("s1", 0), running("i1", 0)},
			probes:  map[probeKey]probeResult{{"s1-0", probeStartup}: probeSuccess},
			phase:   corev1.PodPending,
			states:  []string{"running", "running", "waiting/PodInitializing"},
			started: true, ready: []bool{false, false},
			init: "False/ContainersNotInitialized", cready: "False/ContainersNotInitialized",
		},
		{
			name:    "initialized, the main container not created yet: PodInitializing",
			pod:     pod(corev1.RestartPolicyAlways),
			obs:     []observedContainer{running("s1", 0), exited("i1", 0, 0, t0)},
			probes:  map[probeKey]probeResult{{"s1-0", probeStartup}: probeSuccess},
			phase:   corev1.PodPending,
			states:  []string{"running", "terminated/Completed", "waiting/PodInitializing"},
			started: true, ready: []bool{false, false},
			init: "True", cready: "False/ContainersNotReady",
		},
		{
			name:    "running, the sidecar not ready: Running 1/2",
			pod:     pod(corev1.RestartPolicyAlways),
			obs:     []observedContainer{running("s1", 0), exited("i1", 0, 0, t0), running("a", 0)},
			probes:  map[probeKey]probeResult{{"s1-0", probeStartup}: probeSuccess},
			phase:   corev1.PodRunning,
			states:  []string{"running", "terminated/Completed", "running"},
			started: true, ready: []bool{false, true},
			init: "True", cready: "False/ContainersNotReady",
		},
		{
			name:    "all ready: Running 2/2, Ready",
			pod:     pod(corev1.RestartPolicyAlways),
			obs:     []observedContainer{running("s1", 0), exited("i1", 0, 0, t0), running("a", 0)},
			probes:  map[probeKey]probeResult{{"s1-0", probeStartup}: probeSuccess, {"s1-0", probeReadiness}: probeSuccess},
			phase:   corev1.PodRunning,
			states:  []string{"running", "terminated/Completed", "running"},
			started: true, ready: []bool{true, true},
			init: "True", cready: "True",
		},
		{
			name:    "a crash-looping sidecar after initialization: still Running and Initialized, not ready",
			pod:     pod(corev1.RestartPolicyAlways),
			obs:     []observedContainer{exited("s1", 2, 1, t0), exited("i1", 0, 0, t0), running("a", 0)},
			waiting: map[string]waiting{"s1": {Reason: reasonCrashLoopBackOff}},
			phase:   corev1.PodRunning,
			states:  []string{"waiting/CrashLoopBackOff last=Error", "terminated/Completed", "running"},
			ready:   []bool{false, true},
			init:    "True", cready: "False/ContainersNotReady",
		},
		{
			name:    "Never: the main container done, the sidecar not stopped yet: Running",
			pod:     pod(corev1.RestartPolicyNever),
			obs:     []observedContainer{running("s1", 0), exited("i1", 0, 0, t0), exited("a", 0, 0, t0)},
			probes:  map[probeKey]probeResult{{"s1-0", probeStartup}: probeSuccess, {"s1-0", probeReadiness}: probeSuccess},
			phase:   corev1.PodRunning,
			states:  []string{"running", "terminated/Completed", "terminated/Completed"},
			started: true, ready: []bool{true, false},
			init: "True", cready: "False/ContainersNotReady",
		},
		{
			name:   "Never: the sidecar stopped (137) after the main container succeeded: Succeeded",
			pod:    pod(corev1.RestartPolicyNever),
			obs:    []observedContainer{killed, exited("i1", 0, 0, t0), exited("a", 0, 0, t0)},
			phase:  corev1.PodSucceeded,
			states: []string{"terminated/Error", "terminated/Completed", "terminated/Completed"},
			ready:  []bool{false, false},
			init:   "True", cready: "False/PodCompleted",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: tc.obs}
			obs.sortNewestFirst()
			st := computeStatus(statusInput{Pod: tc.pod, Observed: obs, Waiting: tc.waiting, Now: t0, RuntimeName: "rudder", Probes: tc.probes})
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			all := append(append([]corev1.ContainerStatus{}, st.InitContainerStatuses...), st.ContainerStatuses...)
			for i, cs := range all {
				if got := stateOf(cs); got != tc.states[i] {
					t.Errorf("%s: %s, want %s", cs.Name, got, tc.states[i])
				}
			}
			s1, a := st.InitContainerStatuses[0], st.ContainerStatuses[0]
			if s1.State.Running != nil && *s1.Started != tc.started {
				t.Errorf("s1 started %v, want %v", *s1.Started, tc.started)
			}
			if s1.Ready != tc.ready[0] || a.Ready != tc.ready[1] {
				t.Errorf("ready s1 %v a %v, want %v", s1.Ready, a.Ready, tc.ready)
			}
			if got := condStatus(st, corev1.PodInitialized); got != tc.init {
				t.Errorf("Initialized %s, want %s", got, tc.init)
			}
			if got := condStatus(st, corev1.ContainersReady); got != tc.cready {
				t.Errorf("ContainersReady %s, want %s", got, tc.cready)
			}
		})
	}
}
