package kubelet

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func condStatus(st corev1.PodStatus, typ corev1.PodConditionType) string {
	for _, c := range st.Conditions {
		if c.Type == typ {
			s := string(c.Status)
			if c.Reason != "" {
				s += "/" + c.Reason
			}
			return s
		}
	}
	return "-"
}

// stateOf renders a container status: its state (and reason), then its
// last state.
func stateOf(cs corev1.ContainerStatus) string {
	var s string
	switch {
	case cs.State.Running != nil:
		s = "running"
	case cs.State.Terminated != nil:
		s = "terminated/" + cs.State.Terminated.Reason
	case cs.State.Waiting != nil:
		s = "waiting/" + cs.State.Waiting.Reason
	}
	if cs.LastTerminationState.Terminated != nil {
		s += " last=" + cs.LastTerminationState.Terminated.Reason
	}
	return s
}

func TestComputeStatus(t *testing.T) {
	oom := exited("a", 0, 137, t0)
	oom.Reason = "OOMKilled"
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		obs        podObserved
		waiting    map[string]waiting
		terminated bool
		phase      corev1.PodPhase
		states     []string // init statuses, then container statuses
		ready      string
		init       string
		podIP      string
		restarts   int32 // of the last container
	}{
		{
			name:   "nothing yet: Pending, ContainerCreating",
			pod:    testPod(corev1.RestartPolicyAlways, "a"),
			phase:  corev1.PodPending,
			states: []string{"waiting/ContainerCreating"},
			ready:  "False/ContainersNotReady", init: "True",
		},
		{
			name:   "init containers pending: PodInitializing everywhere",
			pod:    withInit(testPod(corev1.RestartPolicyAlways, "a"), "i1"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}},
			phase:  corev1.PodPending,
			states: []string{"waiting/PodInitializing", "waiting/PodInitializing"},
			ready:  "False/ContainersNotInitialized", init: "False/ContainersNotInitialized", podIP: "10.0.0.5",
		},
		{
			name:   "init done, container running: Running and Ready",
			pod:    withInit(testPod(corev1.RestartPolicyAlways, "a"), "i1"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("i1", 0, 0, t0), running("a", 0)}},
			phase:  corev1.PodRunning,
			states: []string{"terminated/Completed", "running"},
			ready:  "True", init: "True", podIP: "10.0.0.5",
		},
		{
			name:    "crash loop: Waiting with the exit as last state, still Running",
			pod:     testPod(corev1.RestartPolicyAlways, "a"),
			obs:     podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("a", 3, 1, t0)}},
			waiting: map[string]waiting{"a": {Reason: reasonCrashLoopBackOff}},
			phase:   corev1.PodRunning,
			states:  []string{"waiting/CrashLoopBackOff last=Error"},
			ready:   "False/ContainersNotReady", init: "True", podIP: "10.0.0.5",
			restarts: 3,
		},
		{
			name:   "restarted: running, last state the previous exit",
			pod:    testPod(corev1.RestartPolicyAlways, "a"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("a", 1), oom}},
			phase:  corev1.PodRunning,
			states: []string{"running last=OOMKilled"},
			ready:  "True", init: "True", podIP: "10.0.0.5",
			restarts: 1,
		},
		{
			name:    "a pull error: Pending, ErrImagePull",
			pod:     testPod(corev1.RestartPolicyAlways, "a"),
			obs:     podObserved{Sandboxes: []observedSandbox{readySandbox(0)}},
			waiting: map[string]waiting{"a": {Reason: reasonErrImagePull, Message: "no such image"}},
			phase:   corev1.PodPending,
			states:  []string{"waiting/ErrImagePull"},
			ready:   "False/ContainersNotReady", init: "True", podIP: "10.0.0.5",
		},
		{
			name:   "Never, all exited 0: Succeeded, PodCompleted; the IP stays",
			pod:    testPod(corev1.RestartPolicyNever, "a", "b"),
			obs:    podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{exited("a", 0, 0, t0), exited("b", 0, 0, t0)}},
			phase:  corev1.PodSucceeded,
			states: []string{"terminated/Completed", "terminated/Completed"},
			ready:  "False/PodCompleted", init: "True", podIP: "10.9.9.9",
		},
		{
			name:   "Never, one failed: Failed",
			pod:    testPod(corev1.RestartPolicyNever, "a", "b"),
			obs:    podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{exited("a", 0, 0, t0), exited("b", 0, 2, t0)}},
			phase:  corev1.PodFailed,
			states: []string{"terminated/Completed", "terminated/Error"},
			ready:  "False/ContainersNotReady", init: "True", podIP: "10.9.9.9",
		},
		{
			name:   "Never, one failed, one running: Running",
			pod:    testPod(corev1.RestartPolicyNever, "a", "b"),
			obs:    podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{exited("a", 0, 2, t0), running("b", 0)}},
			phase:  corev1.PodRunning,
			states: []string{"terminated/Error", "running"},
			ready:  "False/ContainersNotReady", init: "True", podIP: "10.0.0.5",
		},
		{
			name:   "OnFailure, exited 0: Succeeded",
			pod:    testPod(corev1.RestartPolicyOnFailure, "a"),
			obs:    podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{exited("a", 2, 0, t0)}},
			phase:  corev1.PodSucceeded,
			states: []string{"terminated/Completed"},
			ready:  "False/PodCompleted", init: "True", podIP: "10.9.9.9", restarts: 2,
		},
		{
			name:   "init failed under Never: Failed",
			pod:    withInit(testPod(corev1.RestartPolicyNever, "a"), "i1"),
			obs:    podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{exited("i1", 0, 1, t0)}},
			phase:  corev1.PodFailed,
			states: []string{"terminated/Error", "waiting/PodInitializing"},
			ready:  "False/ContainersNotInitialized", init: "False/ContainersNotInitialized", podIP: "10.9.9.9",
		},
		{
			name:       "deleted, killed (137): terminal Failed",
			pod:        testPod(corev1.RestartPolicyAlways, "a"),
			obs:        podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{exited("a", 0, 137, t0)}},
			terminated: true,
			phase:      corev1.PodFailed,
			states:     []string{"terminated/Error"},
			ready:      "False/ContainersNotReady", init: "True", podIP: "10.9.9.9",
		},
		{
			name:       "deleted, every container exited 0: Succeeded",
			pod:        testPod(corev1.RestartPolicyAlways, "a"),
			obs:        podObserved{Sandboxes: []observedSandbox{deadSandbox(0)}, Containers: []observedContainer{exited("a", 0, 0, t0)}},
			terminated: true,
			phase:      corev1.PodSucceeded,
			states:     []string{"terminated/Completed"},
			ready:      "False/PodCompleted", init: "True", podIP: "10.9.9.9",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.pod.Status.PodIP = "10.9.9.9"
			tc.pod.Status.PodIPs = []corev1.PodIP{{IP: "10.9.9.9"}}
			if tc.podIP == "" {
				tc.podIP = "10.9.9.9"
			}
			tc.obs.sortNewestFirst()
			st := computeStatus(statusInput{Pod: tc.pod, Observed: tc.obs, Waiting: tc.waiting, Now: t0, HostIPs: []string{"127.0.0.1"},
				RuntimeName: "rudder", Terminated: tc.terminated})
			if st.Phase != tc.phase {
				t.Errorf("phase %s, want %s", st.Phase, tc.phase)
			}
			var states []string
			for _, cs := range append(st.InitContainerStatuses, st.ContainerStatuses...) {
				states = append(states, stateOf(cs))
			}
			if len(states) != len(tc.states) {
				t.Fatalf("states %q, want %q", states, tc.states)
			}
			for i := range states {
				if states[i] != tc.states[i] {
					t.Errorf("states %q, want %q", states, tc.states)
					break
				}
			}
			if got := condStatus(st, corev1.PodReady); got != tc.ready {
				t.Errorf("Ready %s, want %s", got, tc.ready)
			}
			if got := condStatus(st, corev1.ContainersReady); got != tc.ready {
				t.Errorf("ContainersReady %s, want %s", got, tc.ready)
			}
			if got := condStatus(st, corev1.PodInitialized); got != tc.init {
				t.Errorf("Initialized %s, want %s", got, tc.init)
			}
			if st.PodIP != tc.podIP || st.HostIP != "127.0.0.1" || st.StartTime == nil || st.QOSClass != corev1.PodQOSBestEffort {
				t.Errorf("podIP %s hostIP %s startTime %v qos %s", st.PodIP, st.HostIP, st.StartTime, st.QOSClass)
			}
			if n := len(st.ContainerStatuses); st.ContainerStatuses[n-1].RestartCount != tc.restarts {
				t.Errorf("restarts %d, want %d", st.ContainerStatuses[n-1].RestartCount, tc.restarts)
			}
		})
	}
}

// Container IDs carry the runtime's name; a running container is started
// and ready; conditions keep their transition time while unchanged;
// conditions of other writers are kept.
func TestStatusDetails(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, "a")
	pod.Spec.ReadinessGates = []corev1.PodReadinessGate{{ConditionType: "example.com/lb"}}
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	pod.Status.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: earlier},
		{Type: "example.com/lb", Status: corev1.ConditionFalse, LastTransitionTime: earlier},
	}
	obs := podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{running("a", 0)}}
	obs.Containers[0].ImageRef = "sha256:abc"
	st := computeStatus(statusInput{Pod: pod, Observed: obs, Now: t0, RuntimeName: "rudder"})
	cs := st.ContainerStatuses[0]
	if cs.ContainerID != "rudder://a-0" || cs.ImageID != "sha256:abc" || cs.Image != "busybox" || !cs.Ready || cs.Started == nil || !*cs.Started {
		t.Errorf("container status %+v", cs)
	}
	if got := condStatus(st, corev1.PodReady); got != "False/ReadinessGatesNotReady" {
		t.Errorf("Ready %s, want False/ReadinessGatesNotReady", got)
	}
	if got := condStatus(st, corev1.ContainersReady); got != "True" {
		t.Errorf("ContainersReady %s", got)
	}
	for _, c := range st.Conditions {
		switch c.Type {
		case corev1.PodInitialized, corev1.PodScheduled, "example.com/lb":
			if !c.LastTransitionTime.Equal(&earlier) {
				t.Errorf("%s transition time moved to %v", c.Type, c.LastTransitionTime)
			}
		case corev1.ContainersReady:
			if !c.LastTransitionTime.Time.Equal(t0) {
				t.Errorf("ContainersReady transition %v, want now", c.LastTransitionTime)
			}
		}
	}
	if len(st.Conditions) != 6 {
		t.Errorf("%d conditions, want 6: %+v", len(st.Conditions), st.Conditions)
	}
	hn := pod.DeepCopy()
	hn.Spec.HostNetwork = true
	if st := computeStatus(statusInput{Pod: hn, Observed: obs, Now: t0, HostIPs: []string{"192.0.2.7"}}); st.PodIP != "192.0.2.7" || len(st.PodIPs) != 1 {
		t.Errorf("host network pod IPs %q %v, want the node's", st.PodIP, st.PodIPs)
	}
	pod.Status.Phase = corev1.PodSucceeded
	if st := computeStatus(statusInput{Pod: pod, Observed: obs, Now: t0}); st.Phase != corev1.PodSucceeded {
		t.Errorf("a terminal phase went back to %s", st.Phase)
	}
}

func TestQOSClass(t *testing.T) {
	res := func(req, lim string) corev1.ResourceRequirements {
		r := corev1.ResourceRequirements{}
		if req != "" {
			r.Requests = corev1.ResourceList{corev1.ResourceCPU: mustQuantity(req), corev1.ResourceMemory: mustQuantity(req + "Mi")}
		}
		if lim != "" {
			r.Limits = corev1.ResourceList{corev1.ResourceCPU: mustQuantity(lim), corev1.ResourceMemory: mustQuantity(lim + "Mi")}
		}
		return r
	}
	for _, tc := range []struct {
		name     string
		req, lim string
		want     corev1.PodQOSClass
	}{
		{"nothing", "", "", corev1.PodQOSBestEffort},
		{"requests only", "1", "", corev1.PodQOSBurstable},
		{"limits = requests", "1", "1", corev1.PodQOSGuaranteed},
		{"limits > requests", "1", "2", corev1.PodQOSBurstable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := testPod(corev1.RestartPolicyAlways, "a")
			p.Spec.Containers[0].Resources = res(tc.req, tc.lim)
			if got := qosClass(p); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
}

func TestLogContainerID(t *testing.T) {
	term := func(id string, code int32) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ContainerID: id, ExitCode: code}
	}
	pod := func(cs corev1.ContainerStatus) *corev1.Pod {
		cs.Name = "c"
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{cs}}}
	}
	for _, tc := range []struct {
		name     string
		cs       corev1.ContainerStatus
		previous bool
		want     string
		wantErr  string
	}{
		{"running", corev1.ContainerStatus{ContainerID: "rudder://a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, false, "a", ""},
		{"previous of a running one", corev1.ContainerStatus{ContainerID: "rudder://b", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: term("rudder://a", 1)}}, true, "a", ""},
		{"no previous", corev1.ContainerStatus{ContainerID: "rudder://a", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}, true, "",
			`previous terminated container "c" in pod "p" not found`},
		{"terminated", corev1.ContainerStatus{State: corev1.ContainerState{Terminated: term("rudder://t", 0)}}, false, "t", ""},
		{"crash looping: the last exit", corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonCrashLoopBackOff}},
			LastTerminationState: corev1.ContainerState{Terminated: term("rudder://x", 2)}}, false, "x", ""},
		{"never ran", corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonErrImagePull}}}, false, "",
			`container "c" in pod "p" is waiting to start: image can't be pulled`},
		{"creating", corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reasonContainerCreating}}}, false, "",
			`container "c" in pod "p" is waiting to start: ContainerCreating`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(tc.cs)
			id, err := logContainerID(p.Name, &p.Status, "c", tc.previous)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || id != tc.want {
				t.Errorf("got %q %v, want %q", id, err, tc.want)
			}
		})
	}
}

func TestStatusOnlyChange(t *testing.T) {
	a := testPod(corev1.RestartPolicyAlways, "a")
	b := a.DeepCopy()
	b.Status.Phase, b.ResourceVersion = corev1.PodRunning, "2"
	if !statusOnlyChange(a, b) {
		t.Error("a status write counted as a change")
	}
	c := b.DeepCopy()
	c.DeletionTimestamp = &metav1.Time{Time: t0}
	if statusOnlyChange(b, c) {
		t.Error("a deletion did not count")
	}
	d := b.DeepCopy()
	d.Spec.Containers[0].Image = "busybox:2"
	if statusOnlyChange(b, d) {
		t.Error("an image change did not count")
	}
}
