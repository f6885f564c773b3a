package kubelet

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// sh is a busybox shell command.
func sh(script string) []string { return []string{"sh", "-c", script} }

// fileProbe succeeds once /ctl/name exists.
func fileProbe(name string) *corev1.Probe {
	return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"test", "-f", "/ctl/" + name}}},
		PeriodSeconds: 1, FailureThreshold: 120}
}

// ctlVolume is the test's control directory, mounted at /ctl: the test
// drives the containers (and reads what they did) by files in it.
func ctlVolume(t *testing.T) (string, corev1.Volume, corev1.VolumeMount) {
	dir := t.TempDir()
	return dir, corev1.Volume{Name: "ctl", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: dir, Type: ptr.To(corev1.HostPathDirectory)}}},
		corev1.VolumeMount{Name: "ctl", MountPath: "/ctl"}
}

// touch creates dir/name.
func touch(t *testing.T, dir, name string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A pod with two native sidecars around a regular init container, on
// real containers: the sidecars start in order, each holding the next
// init container until it started; they keep running beside the main
// container, count in READY, restart when they exit, and stop after the
// main container at deletion, in reverse order — each step as kubectl
// shows it.
func TestSidecarsRealNode(t *testing.T) {
	e := newRealE2E(t)
	k := e.kubectl()
	ctl, vol, mount := ctlVolume(t)
	// Each container notes its SIGTERM in /ctl/order; app takes a second
	// over it, so a sidecar that did not wait for it would note first.
	loop := func(name, onTerm string) []string {
		return sh(fmt.Sprintf(`trap '%s echo %s >> /ctl/order; exit 0' TERM
while :; do
  if [ -f /ctl/%s-crash ]; then rm /ctl/%s-crash; exit 1; fi
  sleep 0.2
done`, onTerm, name, name, name))
	}
	always := ptr.To(corev1.ContainerRestartPolicyAlways)
	e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app"}, Spec: corev1.PodSpec{
		TerminationGracePeriodSeconds: ptr.To(int64(20)),
		InitContainers: []corev1.Container{
			{Name: "proxy", Image: realImage, RestartPolicy: always, Command: loop("proxy", ""), VolumeMounts: []corev1.VolumeMount{mount},
				StartupProbe: fileProbe("proxy-started"), ReadinessProbe: fileProbe("proxy-ready")},
			{Name: "setup", Image: realImage, Command: sh("until [ -f /ctl/setup-go ]; do sleep 0.2; done"), VolumeMounts: []corev1.VolumeMount{mount}},
			{Name: "logger", Image: realImage, RestartPolicy: always, Command: loop("logger", ""), VolumeMounts: []corev1.VolumeMount{mount}},
		},
		Containers: []corev1.Container{
			{Name: "main", Image: realImage, Command: loop("main", "sleep 1;"), VolumeMounts: []corev1.VolumeMount{mount},
				ReadinessProbe: fileProbe("main-ready")},
		},
		Volumes: []corev1.Volume{vol},
	}})

	// waitGet waits for kubectl's READY and STATUS columns.
	waitGet := func(ready, status string) {
		t.Helper()
		e.eventually("kubectl get pod app: "+ready+" "+status, func() (bool, error) {
			r, s := getPod(t, k, "app")
			return r == ready && s == status, fmt.Errorf("%s %s", r, s)
		})
	}
	waitGet("0/3", "Init:0/3")
	p := e.pod("app")
	if cs := cstatus(p, "proxy"); cs.State.Running == nil || *cs.Started || waitingReason(p, "setup") != reasonPodInitializing || p.Status.Phase != corev1.PodPending {
		t.Errorf("before the sidecar started: %+v", p.Status)
	}

	touch(t, ctl, "proxy-started")
	waitGet("0/3", "Init:1/3")
	if cs := cstatus(e.pod("app"), "setup"); cs.State.Running == nil {
		t.Errorf("setup not running: %+v", cs.State)
	}

	touch(t, ctl, "setup-go")
	// logger has no probe: started and ready once it runs.
	waitGet("1/3", "Running")
	touch(t, ctl, "proxy-ready")
	waitGet("2/3", "Running")
	touch(t, ctl, "main-ready")
	waitGet("3/3", "Running")
	p = e.waitPod("app", "Ready", podReady)
	if term := cstatus(p, "setup").State.Terminated; term == nil || term.Reason != "Completed" {
		t.Errorf("setup: %+v", cstatus(p, "setup").State)
	}

	t.Run("a sidecar that exits is restarted; the pod stays Running and initialized", func(t *testing.T) {
		touch(t, ctl, "proxy-crash")
		p := e.waitPod("app", "proxy restarted and ready", func(p *corev1.Pod) bool {
			cs := cstatus(p, "proxy")
			return cs.RestartCount == 1 && cs.State.Running != nil && cs.Ready && podReady(p)
		})
		if lt := cstatus(p, "proxy").LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 || lt.Reason != "Error" {
			t.Errorf("proxy's last state %+v", lt)
		}
		if p.Status.Phase != corev1.PodRunning || condStatus(p.Status, corev1.PodInitialized) != "True" || cstatus(p, "main").RestartCount != 0 {
			t.Errorf("status %+v", p.Status)
		}
	})

	t.Run("deletion stops the main container first, then the sidecars in reverse order", func(t *testing.T) {
		if err := e.c.Client.CoreV1().Pods("default").Delete(context.Background(), "app", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually("three SIGTERMs noted", func() (bool, error) {
			b, err := os.ReadFile(filepath.Join(ctl, "order"))
			return strings.Count(string(b), "\n") == 3, err
		})
		if b, _ := os.ReadFile(filepath.Join(ctl, "order")); string(b) != "main\nlogger\nproxy\n" {
			t.Errorf("termination order %q, want main, logger, proxy", b)
		}
	})
}
