package kubelet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// Lifecycle hooks on real containers: httpGet hooks reach a server on
// loopback (host unset: the pod's IP, the node's for this hostNetwork
// pod), exec and sleep hooks run in and for the container, a preStop's
// time counts against the grace period, and failed hooks are told as
// upstream tells them.
func TestLifecycleHooksRealNode(t *testing.T) {
	e := newRealE2E(t)
	ctx := context.Background()
	var mu sync.Mutex
	var hits []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits = append(hits, r.URL.Path+" "+r.Header.Get("X-Hook"))
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	_, portS, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)
	hit := func(what string) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, h := range hits {
			if h == what {
				return true
			}
		}
		return false
	}
	ctl, vol, mount := ctlVolume(t)
	quit := sh(`trap 'exit 0' TERM; while :; do sleep 0.2; done`)
	e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hooks"}, Spec: corev1.PodSpec{
		HostNetwork:                   true,
		TerminationGracePeriodSeconds: ptr.To(int64(5)),
		Containers: []corev1.Container{
			{Name: "web", Image: realImage, Command: quit, Ports: []corev1.ContainerPort{{Name: "hook", ContainerPort: int32(port)}},
				Lifecycle: &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/post-start", Port: intstr.FromString("hook"),
						HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Hook", Value: "web"}}}},
					PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Host: "127.0.0.1", Path: "/pre-stop", Port: intstr.FromInt32(int32(port))}},
				}},
			// Notes when SIGTERM came, and ignores it: only the grace
			// period's SIGKILL ends it.
			{Name: "sleeper", Image: realImage, VolumeMounts: []corev1.VolumeMount{mount},
				Command: sh(`trap 'date +%s > /ctl/term' TERM; while :; do sleep 0.2; done`),
				Lifecycle: &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: sh("echo ran > /ctl/post-start")}},
					PreStop:   &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 3}},
				}},
			{Name: "failer", Image: realImage, Command: quit,
				Lifecycle: &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: sh("exit 3")}}}},
		},
		Volumes: []corev1.Volume{vol},
	}})
	e.waitPod("hooks", "Running", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning && podReady(p) })
	if !hit("/post-start web") {
		t.Errorf("the httpGet postStart hook did not reach the pod's IP: %q", hits)
	}
	if b, err := os.ReadFile(filepath.Join(ctl, "post-start")); err != nil || string(b) != "ran\n" {
		t.Errorf("the exec postStart hook: %q %v", b, err)
	}

	t.Run("deletion: preStop hooks first, their time counted in the grace period", func(t *testing.T) {
		began := time.Now()
		if err := e.c.Client.CoreV1().Pods("default").Delete(ctx, "hooks", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		e.eventually("hooks gone from the API", func() (bool, error) {
			_, err := e.c.Client.CoreV1().Pods("default").Get(ctx, "hooks", metav1.GetOptions{})
			return apierrors.IsNotFound(err), nil
		})
		took := time.Since(began)
		// sleeper: 3 s of preStop, then SIGTERM, ignored, then SIGKILL
		// when the 5 s are up — not 3 + 5.
		if took < 4*time.Second || took > 7*time.Second {
			t.Errorf("deletion took %v, want about the 5 s grace period", took)
		}
		b, err := os.ReadFile(filepath.Join(ctl, "term"))
		termAt, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || termAt < began.Unix()+3 {
			t.Errorf("sleeper got SIGTERM at %d, deleted at %d: before its 3 s preStop sleep ended (%v)", termAt, began.Unix(), err)
		}
		if !hit("/pre-stop ") {
			t.Errorf("the httpGet preStop hook was not sent: %q", hits)
		}
		e.eventually("FailedPreStopHook", func() (bool, error) {
			return hasEvent(e, "hooks", eventFailedPreStopHook, "PreStopHook failed"), nil
		})
	})

	t.Run("a failed postStart hook kills the container, which restarts", func(t *testing.T) {
		e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bad-start"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: realImage, Command: quit,
			Lifecycle: &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{Command: sh("echo no; exit 7")}}}}}}})
		e.waitPod("bad-start", "restarted", func(p *corev1.Pod) bool { return cstatus(p, "c").RestartCount >= 1 })
		e.eventually("the hook's events", func() (bool, error) {
			return hasEvent(e, "bad-start", eventFailedPostStartHook, "PostStartHook failed") &&
				hasEvent(e, "bad-start", eventKilling, eventFailedPostStartHook), nil
		})
	})
}
