package kubelet

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// testHealth is a grpc.health.v1 server whose answers a test sets: a
// status per service, a number of NOT_SERVING answers to give first
// per service, and services whose Check hangs.
type testHealth struct {
	healthpb.UnimplementedHealthServer
	mu         sync.Mutex
	statuses   map[string]healthpb.HealthCheckResponse_ServingStatus
	failFirst  map[string]int
	hang       map[string]bool
	userAgents []string
}

func (h *testHealth) Check(ctx context.Context, r *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	h.mu.Lock()
	md, _ := metadata.FromIncomingContext(ctx)
	h.userAgents = append(h.userAgents, strings.Join(md.Get("user-agent"), ","))
	if h.hang[r.Service] {
		h.mu.Unlock()
		<-ctx.Done()
		return nil, ctx.Err()
	}
	defer h.mu.Unlock()
	if h.failFirst[r.Service] > 0 {
		h.failFirst[r.Service]--
		return &healthpb.HealthCheckResponse{Status: healthpb.HealthCheckResponse_NOT_SERVING}, nil
	}
	st, ok := h.statuses[r.Service]
	if !ok {
		return nil, status.Error(codes.NotFound, "unknown service")
	}
	return &healthpb.HealthCheckResponse{Status: st}, nil
}

func (h *testHealth) set(service string, st healthpb.HealthCheckResponse_ServingStatus) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.statuses[service] = st
}

// serveGRPC serves register's services on a loopback port.
func serveGRPC(t *testing.T, register func(*grpc.Server)) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	register(srv)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().(*net.TCPAddr).Port
}

func TestGRPCProbe(t *testing.T) {
	h := &testHealth{statuses: map[string]healthpb.HealthCheckResponse_ServingStatus{
		"": healthpb.HealthCheckResponse_SERVING, "db": healthpb.HealthCheckResponse_NOT_SERVING}, hang: map[string]bool{"slow": true}}
	port := int32(serveGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, h) }))
	bare := int32(serveGRPC(t, func(*grpc.Server) {}))
	closed, _ := net.Listen("tcp", "127.0.0.1:0")
	closedPort := int32(closed.Addr().(*net.TCPAddr).Port)
	closed.Close()
	addr := func(p int32) string { return "127.0.0.1:" + strconv.Itoa(int(p)) }
	for _, tc := range []struct {
		name    string
		port    int32
		service *string
		podIP   string
		want    probeResult
		msg     string
	}{
		{"the server as a whole, SERVING", port, nil, "127.0.0.1", probeSuccess, ""},
		{"a service NOT_SERVING", port, ptr.To("db"), "127.0.0.1", probeFailure, `service unhealthy (responded with "NOT_SERVING")`},
		{"an unknown service", port, ptr.To("nope"), "127.0.0.1", probeFailure, "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		{"no health service", bare, nil, "127.0.0.1", probeFailure,
			"error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		{"nothing listens", closedPort, nil, "127.0.0.1", probeFailure, `timeout: failed to connect service "` + addr(closedPort) + `" within 1s: context deadline exceeded`},
		{"the call hangs", port, ptr.To("slow"), "127.0.0.1", probeFailure, "timeout: health rpc did not complete within 1s"},
		{"no pod IP", port, nil, "", probeFailure, "pod has no IP"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			began := time.Now()
			r, msg := grpcProbe(context.Background(), &corev1.GRPCAction{Port: tc.port, Service: tc.service}, tc.podIP, time.Second)
			if r != tc.want || msg != tc.msg {
				t.Errorf("%v %q, want %v %q", r, msg, tc.want, tc.msg)
			}
			if d := time.Since(began); d > 3*time.Second {
				t.Errorf("took %v with a 1 s timeout", d)
			}
		})
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.userAgents) == 0 || !strings.HasPrefix(h.userAgents[0], "kube-probe/"+userAgentVersion) {
		t.Errorf("user agents %q", h.userAgents)
	}
}

// grpc readiness and liveness probes of a real container (a hostNetwork
// pod, so its IP is the node's loopback, where the test's health server
// listens): readiness follows the served status, a NOT_SERVING liveness
// answer restarts the container.
func TestGRPCProbesRealNode(t *testing.T) {
	e := newRealE2E(t)
	h := &testHealth{statuses: map[string]healthpb.HealthCheckResponse_ServingStatus{
		"ready": healthpb.HealthCheckResponse_NOT_SERVING, "live": healthpb.HealthCheckResponse_SERVING}, failFirst: map[string]int{}}
	port := int32(serveGRPC(t, func(s *grpc.Server) { healthpb.RegisterHealthServer(s, h) }))
	probe := func(service string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: port, Service: ptr.To(service)}},
			PeriodSeconds: 1, FailureThreshold: 1}
	}
	e.create(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "grpc"}, Spec: corev1.PodSpec{HostNetwork: true,
		TerminationGracePeriodSeconds: ptr.To(int64(2)),
		Containers: []corev1.Container{{Name: "app", Image: realImage, Command: sh(`trap 'exit 0' TERM; while :; do sleep 0.2; done`),
			ReadinessProbe: probe("ready"), LivenessProbe: probe("live")}}}})
	e.waitPod("grpc", "running, not ready", func(p *corev1.Pod) bool {
		return cstatus(p, "app").State.Running != nil && !podReady(p)
	})
	e.eventually("the readiness failure's event", func() (bool, error) {
		return hasEvent(e, "grpc", eventUnhealthy, `Readiness probe failed: service unhealthy (responded with "NOT_SERVING")`), nil
	})
	h.set("ready", healthpb.HealthCheckResponse_SERVING)
	e.waitPod("grpc", "ready", podReady)

	h.mu.Lock()
	h.failFirst["live"] = 1
	h.mu.Unlock()
	p := e.waitPod("grpc", "restarted by its liveness probe, ready again", func(p *corev1.Pod) bool {
		cs := cstatus(p, "app")
		return cs.RestartCount == 1 && cs.State.Running != nil && podReady(p)
	})
	if lt := cstatus(p, "app").LastTerminationState.Terminated; lt == nil || lt.Message != "Container app failed liveness probe, will be restarted" {
		t.Errorf("last state %+v", lt)
	}
}
