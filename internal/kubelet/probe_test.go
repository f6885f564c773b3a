package kubelet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestProbeStateThresholds(t *testing.T) {
	S, F, U := probeSuccess, probeFailure, probeUnknown
	for _, tc := range []struct {
		name             string
		initial          probeResult
		success, failure int
		results          []probeResult
		want             []probeResult // Current after each
	}{
		{"readiness: one success makes ready", F, 1, 3, []probeResult{S}, []probeResult{S}},
		{"failures below the threshold keep success", S, 1, 3, []probeResult{F, F, F, F}, []probeResult{S, S, F, F}},
		{"a success resets the failure run", S, 1, 3, []probeResult{F, F, S, F, F, F}, []probeResult{S, S, S, S, S, F}},
		{"success threshold 2", F, 2, 1, []probeResult{S, F, S, S}, []probeResult{F, F, F, S}},
		{"unknown changes nothing", S, 1, 2, []probeResult{F, U, F}, []probeResult{S, S, F}},
		{"startup: unknown until a success", U, 1, 3, []probeResult{F, S}, []probeResult{U, S}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := probeState{Current: tc.initial}
			p := probeParams{SuccessThreshold: tc.success, FailureThreshold: tc.failure}
			for i, r := range tc.results {
				before := s.Current
				changed := s.record(r, p)
				if s.Current != tc.want[i] || changed != (before != s.Current) {
					t.Fatalf("after %d results: %v (changed %v), want %v", i+1, s.Current, changed, tc.want[i])
				}
			}
		})
	}
}

func TestProbeParamsDefaults(t *testing.T) {
	p := paramsOf(&corev1.Probe{})
	if p != (probeParams{Period: 10 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 3}) {
		t.Errorf("defaults %+v", p)
	}
	p = paramsOf(&corev1.Probe{InitialDelaySeconds: 5, PeriodSeconds: 2, TimeoutSeconds: 3, SuccessThreshold: 2, FailureThreshold: 4})
	if p != (probeParams{InitialDelay: 5 * time.Second, Period: 2 * time.Second, Timeout: 3 * time.Second, SuccessThreshold: 2, FailureThreshold: 4}) {
		t.Errorf("set %+v", p)
	}
}

// The worker's schedule on a fake clock: the first probe after the
// initial delay counted from the container's start, then one per period
// on the ticker, and the result changes only at the threshold.
func TestProbeWorkerSchedule(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clocktesting.NewFakeClock(start.Add(time.Second)) // the worker starts 1 s after the container
	type call struct {
		at      time.Duration
		current probeResult
		changed bool
	}
	calls := make(chan call, 10)
	w := &probeWorker{
		params: probeParams{InitialDelay: 5 * time.Second, Period: 2 * time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 2},
		clock:  fc, started: start, state: probeState{Current: probeSuccess},
		probe: func(context.Context, time.Duration) (probeResult, string) { return probeFailure, "no" },
	}
	w.report = func(s probeState, changed bool, _ probeResult, _ string) bool {
		calls <- call{fc.Since(start), s.Current, changed}
		return true
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	waitWaiters := func() {
		t.Helper()
		if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
			return fc.HasWaiters(), nil
		}); err != nil {
			t.Fatal("the worker never waits on the clock")
		}
	}
	next := func() call {
		t.Helper()
		select {
		case c := <-calls:
			return c
		case <-time.After(5 * time.Second):
			t.Fatal("no probe")
		}
		return call{}
	}
	waitWaiters()
	fc.Step(3 * time.Second) // 4 s after start: still in the initial delay
	select {
	case c := <-calls:
		t.Fatalf("probed during the initial delay at %v", c.at)
	default:
	}
	waitWaiters()
	fc.Step(time.Second) // 5 s
	if c := next(); c != (call{5 * time.Second, probeSuccess, false}) {
		t.Fatalf("first probe %+v", c)
	}
	waitWaiters()
	fc.Step(2 * time.Second)
	if c := next(); c != (call{7 * time.Second, probeFailure, true}) {
		t.Fatalf("second probe %+v", c)
	}
	waitWaiters()
	fc.Step(2 * time.Second)
	if c := next(); c != (call{9 * time.Second, probeFailure, false}) {
		t.Fatalf("third probe %+v", c)
	}
	// A long stall (the clock jumps 10 periods) gives one probe, not ten.
	waitWaiters()
	fc.Step(20 * time.Second)
	next()
	waitWaiters()
	select {
	case c := <-calls:
		t.Fatalf("burst: another probe at %v", c.at)
	default:
	}
}

func TestProbeReadyInStatus(t *testing.T) {
	readiness := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}}
	for _, tc := range []struct {
		name             string
		readiness, start bool
		results          map[probeType]probeResult
		started, ready   bool
		podReady         string
	}{
		{"no probes: ready once running", false, false, nil, true, true, "True"},
		{"readiness probe, no result yet: not ready", true, false, nil, true, false, "False/ContainersNotReady"},
		{"readiness succeeded", true, false, map[probeType]probeResult{probeReadiness: probeSuccess}, true, true, "True"},
		{"readiness failed", true, false, map[probeType]probeResult{probeReadiness: probeFailure}, true, false, "False/ContainersNotReady"},
		{"startup pending holds readiness", true, true, map[probeType]probeResult{probeReadiness: probeSuccess}, false, false, "False/ContainersNotReady"},
		{"startup succeeded, no readiness probe", false, true, map[probeType]probeResult{probeStartup: probeSuccess}, true, true, "True"},
		{"startup and readiness succeeded", true, true, map[probeType]probeResult{probeStartup: probeSuccess, probeReadiness: probeSuccess}, true, true, "True"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(corev1.RestartPolicyAlways, "a")
			if tc.readiness {
				pod.Spec.Containers[0].ReadinessProbe = readiness
			}
			if tc.start {
				pod.Spec.Containers[0].StartupProbe = readiness
			}
			c := running("a", 0)
			res := map[probeKey]probeResult{}
			for typ, r := range tc.results {
				res[probeKey{c.ID, typ}] = r
			}
			st := computeStatus(statusInput{Pod: pod, Observed: podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{c}},
				Now: t0, RuntimeName: "fake", Probes: res})
			cs := st.ContainerStatuses[0]
			if *cs.Started != tc.started || cs.Ready != tc.ready {
				t.Errorf("started %v ready %v, want %v %v", *cs.Started, cs.Ready, tc.started, tc.ready)
			}
			if got := condStatus(st, corev1.PodReady); got != tc.podReady {
				t.Errorf("Ready %s, want %s", got, tc.podReady)
			}
		})
	}
}

func TestProbeKillMessageInStatus(t *testing.T) {
	pod := testPod(corev1.RestartPolicyAlways, "a")
	c := exited("a", 0, 137, t0)
	obs := podObserved{Sandboxes: []observedSandbox{readySandbox(0)}, Containers: []observedContainer{c}}
	msg := "Container a failed liveness probe, will be restarted"
	st := computeStatus(statusInput{Pod: pod, Observed: obs, Now: t0, RuntimeName: "fake", KillMessages: map[string]string{c.ID: msg},
		Waiting: map[string]waiting{"a": {Reason: reasonCrashLoopBackOff}}})
	if lt := st.ContainerStatuses[0].LastTerminationState.Terminated; lt == nil || lt.Message != msg {
		t.Fatalf("last state %+v", lt)
	}
	if obs.Containers[0].Message != "" {
		t.Error("computeStatus changed its caller's observation")
	}
}

func TestHTTPAndTCPProbes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			if r.Header.Get("X-Probe") != "yes" {
				w.WriteHeader(400)
			}
		case "/away":
			http.Redirect(w, r, "http://192.0.2.1/", http.StatusFound)
		default:
			w.WriteHeader(503)
		}
	}))
	t.Cleanup(srv.Close)
	host, portS, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)
	c := &corev1.Container{Name: "web", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		run   func() (probeResult, string)
		want  probeResult
		inMsg string
	}{
		{"http by port name, with a header", func() (probeResult, string) {
			return httpProbe(ctx, &corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("http"),
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}}, c, host, time.Second)
		}, probeSuccess, ""},
		{"http 503", func() (probeResult, string) {
			return httpProbe(ctx, &corev1.HTTPGetAction{Path: "/bad", Port: intstr.FromInt32(int32(port))}, c, host, time.Second)
		}, probeFailure, "HTTP probe failed with statuscode: 503"},
		{"http redirect off the pod is not followed", func() (probeResult, string) {
			return httpProbe(ctx, &corev1.HTTPGetAction{Path: "/away", Port: intstr.FromInt32(int32(port))}, c, host, time.Second)
		}, probeSuccess, ""},
		{"http without a pod IP", func() (probeResult, string) {
			return httpProbe(ctx, &corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromString("http")}, c, "", time.Second)
		}, probeFailure, "pod has no IP"},
		{"unknown port name", func() (probeResult, string) {
			return httpProbe(ctx, &corev1.HTTPGetAction{Port: intstr.FromString("nope")}, c, host, time.Second)
		}, probeFailure, `couldn't find port "nope"`},
		{"tcp open", func() (probeResult, string) {
			return tcpProbe(ctx, &corev1.TCPSocketAction{Port: intstr.FromString("http")}, c, host, time.Second)
		}, probeSuccess, ""},
		{"tcp closed", func() (probeResult, string) {
			return tcpProbe(ctx, &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(closedPort))}, c, "127.0.0.1", time.Second)
		}, probeFailure, "connection refused"},
		{"tcp without a pod IP", func() (probeResult, string) {
			return tcpProbe(ctx, &corev1.TCPSocketAction{Port: intstr.FromString("http")}, c, "", time.Second)
		}, probeFailure, "pod has no IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, msg := tc.run()
			if r != tc.want || !strings.Contains(msg, tc.inMsg) {
				t.Errorf("%v %q, want %v with %q", r, msg, tc.want, tc.inMsg)
			}
		})
	}
}

// Against the API server and the fake runtime: an exec readiness probe
// that fails then succeeds moves the pod's Ready condition, and a
// liveness failure restarts the container.
func TestProbesE2E(t *testing.T) {
	e := newE2E(t)
	e.fake.mu.Lock()
	e.fake.execExit["is-ready"] = 1
	e.fake.mu.Unlock()
	exec := func(cmd string, failures int32) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{cmd}}},
			PeriodSeconds: 1, FailureThreshold: failures}
	}
	e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probed"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
		Name: "app", Image: "busybox", ImagePullPolicy: corev1.PullNever,
		ReadinessProbe: exec("is-ready", 1), LivenessProbe: exec("is-alive", 1)}}}})

	e.waitPod("probed", "running, not ready", func(p *corev1.Pod) bool {
		return cstatus(p, "app").State.Running != nil && !podReady(p) && !cstatus(p, "app").Ready
	})
	e.eventually("a readiness Unhealthy event", func() (bool, error) {
		return hasEvent(e, "probed", "Unhealthy", "Readiness probe failed: is-ready"), nil
	})
	e.fake.mu.Lock()
	e.fake.execExit["is-ready"] = 0
	e.fake.mu.Unlock()
	e.waitPod("probed", "ready", func(p *corev1.Pod) bool { return podReady(p) && cstatus(p, "app").Ready })

	e.fake.mu.Lock()
	e.fake.execFailN["is-alive"] = 1 // one failure, at threshold 1: one restart
	e.fake.mu.Unlock()
	p := e.waitPod("probed", "restarted after the liveness failure", func(p *corev1.Pod) bool {
		return cstatus(p, "app").RestartCount == 1
	})
	if lt := cstatus(p, "app").LastTerminationState.Terminated; lt == nil || lt.Message != "Container app failed liveness probe, will be restarted" {
		t.Errorf("last state %+v", lt)
	}
	e.eventually("the Killing event", func() (bool, error) {
		return hasEvent(e, "probed", "Killing", "Container app failed liveness probe, will be restarted"), nil
	})
	// A command that hangs past timeoutSeconds is a failure, in time.
	began := time.Now()
	if r, msg := e.kl.k.execProbe(context.Background(), cstatus(p, "app").ContainerID, []string{"hang"}, time.Second); r != probeFailure || !strings.Contains(msg, "timed out") {
		t.Errorf("hanging exec probe: %v %q", r, msg)
	}
	if d := time.Since(began); d > 5*time.Second {
		t.Errorf("hanging exec probe took %v", d)
	}
	// The new instance is probed afresh and becomes ready again.
	e.waitPod("probed", "ready again", func(p *corev1.Pod) bool {
		return podReady(p) && cstatus(p, "app").RestartCount == 1 && cstatus(p, "app").State.Running != nil
	})
}

// hasEvent reports whether pod name has an event of reason whose message
// holds text.
func hasEvent(e *e2eEnv, name, reason, text string) bool {
	evs, err := e.c.Client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return false
	}
	for _, ev := range evs.Items {
		if ev.Reason == reason && strings.Contains(ev.Message, text) {
			return true
		}
	}
	return false
}

// A held worker (startup not yet succeeded) does not probe, and probes
// at its next tick once released.
func TestProbeWorkerHold(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	fc := clocktesting.NewFakeClock(start)
	var released atomic.Bool
	holds := make(chan struct{}, 10)
	probed := make(chan time.Duration, 10)
	w := &probeWorker{params: probeParams{Period: time.Second, Timeout: time.Second, SuccessThreshold: 1, FailureThreshold: 1},
		clock: fc, started: start, state: probeState{Current: probeFailure},
		hold: func() bool { holds <- struct{}{}; return !released.Load() },
		probe: func(context.Context, time.Duration) (probeResult, string) {
			probed <- fc.Since(start)
			return probeSuccess, ""
		},
		report: func(probeState, bool, probeResult, string) bool { return true },
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	waitHold := func() {
		t.Helper()
		select {
		case <-holds:
		case <-time.After(5 * time.Second):
			t.Fatal("the worker did not tick")
		}
	}
	waitHold() // at 0 s
	fc.Step(time.Second)
	waitHold() // at 1 s
	if len(probed) > 0 {
		t.Fatal("probed while held")
	}
	released.Store(true)
	fc.Step(time.Second)
	waitHold()
	select {
	case at := <-probed:
		if at != 2*time.Second {
			t.Errorf("first probe at %v, want 2s (after the release)", at)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no probe after the release")
	}
}
