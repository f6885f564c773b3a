package kubelet

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
)

// httpGet and sleep hooks against a real HTTP server on loopback and a
// fake clock: where they go, what they send, what fails and how it is
// worded.
func TestLifecycleHookHandlers(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.URL.RequestURI()+" "+r.Header.Get("X-Hook")+" "+r.UserAgent()+" "+r.Host)
		mu.Unlock()
		if r.URL.Path == "/fail" {
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	t.Cleanup(srv.Close)
	_, portS, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portS)
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := closed.Addr().(*net.TCPAddr).Port
	closed.Close()

	k := &Kubelet{cfg: Config{Clock: clock.RealClock{}}}
	pod := testPod(corev1.RestartPolicyAlways, "c")
	c := &corev1.Container{Name: "c", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(port)}}}
	get := func(g corev1.HTTPGetAction) *corev1.LifecycleHandler { return &corev1.LifecycleHandler{HTTPGet: &g} }
	for _, tc := range []struct {
		name    string
		h       *corev1.LifecycleHandler
		podIP   string
		sent    string // what the server saw ("" for nothing)
		wantErr string // in the message
	}{
		{"host unset: the pod's IP, port by name, headers", get(corev1.HTTPGetAction{Path: "/start?x=1", Port: intstr.FromString("http"),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Hook", Value: "post"}}}), "127.0.0.1",
			"/start?x=1 post kube-lifecycle/" + userAgentVersion + " 127.0.0.1:" + portS, ""},
		{"an explicit host and a Host header", get(corev1.HTTPGetAction{Host: "127.0.0.1", Path: "stop", Port: intstr.FromInt32(int32(port)),
			HTTPHeaders: []corev1.HTTPHeader{{Name: "Host", Value: "app.example"}}}), "",
			"/stop  kube-lifecycle/" + userAgentVersion + " app.example", ""},
		{"an error status still counts as done (upstream)", get(corev1.HTTPGetAction{Path: "/fail", Port: intstr.FromInt32(int32(port))}), "127.0.0.1",
			"/fail  kube-lifecycle/" + userAgentVersion + " 127.0.0.1:" + portS, ""},
		{"HTTPS answered in HTTP is retried as HTTP", get(corev1.HTTPGetAction{Path: "/tls", Port: intstr.FromInt32(int32(port)), Scheme: corev1.URISchemeHTTPS}), "127.0.0.1",
			"/tls  kube-lifecycle/" + userAgentVersion + " 127.0.0.1:" + portS, ""},
		{"nothing listens", get(corev1.HTTPGetAction{Path: "/x", Port: intstr.FromInt32(int32(closedPort))}), "127.0.0.1", "",
			`HTTP lifecycle hook (/x) for Container "c" in Pod "web_ns(uid-1)" failed - error: Get "http://127.0.0.1:` + strconv.Itoa(closedPort) + `/x"`},
		{"no pod IP", get(corev1.HTTPGetAction{Path: "/x", Port: intstr.FromInt32(int32(port))}), "", "", "failed - error: pod has no IP"},
		{"no handler", &corev1.LifecycleHandler{}, "", "", "Cannot run handler: invalid handler"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			got = nil
			mu.Unlock()
			msg, err := k.runLifecycleHook(context.Background(), pod, c, "id", tc.h, tc.podIP)
			if (err != nil) != (tc.wantErr != "") || !strings.Contains(msg, tc.wantErr) {
				t.Errorf("message %q err %v, want one with %q", msg, err, tc.wantErr)
			}
			mu.Lock()
			defer mu.Unlock()
			if tc.sent == "" && len(got) != 0 || tc.sent != "" && (len(got) != 1 || got[0] != tc.sent) {
				t.Errorf("server saw %q, want %q", got, tc.sent)
			}
		})
	}

	t.Run("sleep waits on the clock; the sync's end cuts it short", func(t *testing.T) {
		fc := clocktesting.NewFakeClock(t0)
		k := &Kubelet{cfg: Config{Clock: fc}}
		h := &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: 5}}
		done := make(chan error, 1)
		go func() { _, err := k.runLifecycleHook(context.Background(), pod, c, "id", h, ""); done <- err }()
		waitClock(t, fc)
		fc.Step(4 * time.Second)
		select {
		case err := <-done:
			t.Fatalf("sleep ended after 4 s of 5: %v", err)
		default:
		}
		fc.Step(time.Second)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		msgs := make(chan string, 1)
		go func() { msg, _ := k.runLifecycleHook(ctx, pod, c, "id", h, ""); msgs <- msg }()
		waitClock(t, fc)
		cancel()
		if msg := <-msgs; msg != `Sleep lifecycle hook (5) for Container "c" in Pod "web_ns(uid-1)" failed - error: container terminated before sleep hook finished` {
			t.Errorf("message %q", msg)
		}
	})
}

// waitClock waits until something waits on fc.
func waitClock(t *testing.T, fc *clocktesting.FakeClock) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 5*time.Second, true, func(context.Context) (bool, error) {
		return fc.HasWaiters(), nil
	}); err != nil {
		t.Fatal("nothing waits on the clock")
	}
}
