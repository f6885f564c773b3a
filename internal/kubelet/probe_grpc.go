package kubelet

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
)

// grpc probes: the grpc.health.v1.Health/Check RPC against the pod's IP
// at grpc.port, for grpc.service ("" asks for the server as a whole),
// in plain text (upstream supports no credentials), all of it — the
// connection and the call — within timeoutSeconds. Only SERVING is a
// success. The results and their messages are upstream's:
//
//	no connection in time    timeout: failed to connect service "ip:port" within 1s: ...
//	Unimplemented            error: this server does not implement the grpc health protocol (grpc.health.v1.Health): ...
//	the call out of time     timeout: health rpc did not complete within 1s
//	another error            error: health rpc probe failed: ...
//	not SERVING              service unhealthy (responded with "NOT_SERVING")

func grpcProbe(ctx context.Context, g *corev1.GRPCAction, podIP string, timeout time.Duration) (probeResult, string) {
	if podIP == "" {
		return probeFailure, "pod has no IP"
	}
	if g.Port < 1 || g.Port > 65535 {
		return probeFailure, fmt.Sprintf("invalid port number: %d", g.Port)
	}
	service := ""
	if g.Service != nil {
		service = *g.Service
	}
	addr := net.JoinHostPort(podIP, strconv.Itoa(int(g.Port)))
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUserAgent("kube-probe/"+userAgentVersion),
		grpc.WithContextDialer(func(ctx context.Context, a string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", a)
		}))
	if err != nil {
		return probeFailure, fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)
	}
	defer conn.Close()
	// As upstream's blocking dial: wait for the connection, retrying,
	// until the timeout.
	conn.Connect()
	for st := conn.GetState(); st != connectivity.Ready; st = conn.GetState() {
		if !conn.WaitForStateChange(ctx, st) {
			return probeFailure, fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, context.DeadlineExceeded)
		}
	}
	resp, err := healthpb.NewHealthClient(conn).Check(metadata.NewOutgoingContext(ctx, metadata.MD{}), &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if st, ok := status.FromError(err); ok {
			switch st.Code() {
			case codes.Unimplemented:
				return probeFailure, fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())
			case codes.DeadlineExceeded:
				return probeFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
			}
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return probeFailure, fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)
		}
		return probeFailure, fmt.Sprintf("error: health rpc probe failed: %+v", err)
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return probeFailure, fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())
	}
	return probeSuccess, ""
}
