package runtime

import (
	"context"
	"io"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestBadRequests: empty and unknown-ID requests get clear gRPC codes,
// never a panic (which would take the runtime down).
func TestBadRequests(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx()
	pod, pcfg := e.runPod("bad")
	rs := e.rs
	call := func(f func() error) func() error { return f }
	for _, tc := range []struct {
		name string
		call func() error
		code codes.Code
	}{
		{"RunPodSandbox empty", call(func() error { _, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{}); return err }), codes.InvalidArgument},
		{"RunPodSandbox handler", call(func() error {
			_, err := rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("h"), RuntimeHandler: "kata"})
			return err
		}), codes.InvalidArgument},
		{"PodSandboxStatus empty", call(func() error { _, err := rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{}); return err }), codes.InvalidArgument},
		{"StopPodSandbox unknown", call(func() error {
			_, err := rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: "abc"})
			return err
		}), codes.OK},
		{"CreateContainer empty", call(func() error { _, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{}); return err }), codes.InvalidArgument},
		{"CreateContainer no image", call(func() error {
			_, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "x"}}})
			return err
		}), codes.InvalidArgument},
		{"CreateContainer unknown sandbox", call(func() error {
			_, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: "nope", Config: ctrConfig("x", "sh")})
			return err
		}), codes.NotFound},
		{"CreateContainer relative mount", call(func() error {
			c := ctrConfig("relmount", "sh")
			c.Mounts = []*runtimeapi.Mount{{HostPath: "data", ContainerPath: "/data"}}
			_, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: c, SandboxConfig: pcfg})
			return err
		}), codes.InvalidArgument},
		{"CreateContainer bad seccomp", call(func() error {
			c := ctrConfig("badseccomp", "sh")
			c.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/nonexistent.json"}
			_, err := rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: c, SandboxConfig: pcfg})
			return err
		}), codes.InvalidArgument},
		{"StartContainer empty", call(func() error { _, err := rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{}); return err }), codes.InvalidArgument},
		{"StopContainer unknown", call(func() error {
			_, err := rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: "nope"})
			return err
		}), codes.OK},
		{"RemoveContainer unknown", call(func() error {
			_, err := rs.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: "nope"})
			return err
		}), codes.OK},
		{"ContainerStatus unknown", call(func() error {
			_, err := rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: "nope"})
			return err
		}), codes.NotFound},
		{"ExecSync empty", call(func() error { _, err := rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{}); return err }), codes.InvalidArgument},
		{"ExecSync unknown", call(func() error {
			_, err := rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: "nope", Cmd: []string{"x"}})
			return err
		}), codes.NotFound},
		{"Exec no stream server", call(func() error {
			_, err := rs.Exec(ctx, &runtimeapi.ExecRequest{ContainerId: "nope", Cmd: []string{"x"}})
			return err
		}), codes.InvalidArgument},
		{"Attach unknown", call(func() error { _, err := rs.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: "nope"}); return err }), codes.NotFound},
		{"PortForward no streaming server", call(func() error {
			_, err := rs.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: pod, Port: []int32{80}})
			return err
		}), codes.Unavailable},
		{"UpdateContainerResources unknown", call(func() error {
			_, err := rs.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: "nope"})
			return err
		}), codes.NotFound},
		{"ReopenContainerLog unknown", call(func() error {
			_, err := rs.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: "nope"})
			return err
		}), codes.NotFound},
		{"ContainerStats unknown", call(func() error {
			_, err := rs.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: "nope"})
			return err
		}), codes.NotFound},
		{"PodSandboxStats unknown", call(func() error {
			_, err := rs.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: "nope"})
			return err
		}), codes.NotFound},
		{"ListContainers nil filter", call(func() error { _, err := rs.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); return err }), codes.OK},
		{"ListContainerStats nil filter", call(func() error {
			_, err := rs.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
			return err
		}), codes.OK},
		{"ListPodSandboxStats nil filter", call(func() error {
			_, err := rs.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{})
			return err
		}), codes.OK},
		{"ImageStatus empty", call(func() error { _, err := e.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{}); return err }), codes.InvalidArgument},
		{"PullImage empty", call(func() error { _, err := e.is.PullImage(ctx, &runtimeapi.PullImageRequest{}); return err }), codes.InvalidArgument},
		{"RemoveImage empty", call(func() error { _, err := e.is.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{}); return err }), codes.InvalidArgument},
		{"ListImages unknown filter", call(func() error {
			r, err := e.is.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: &runtimeapi.ImageFilter{Image: &runtimeapi.ImageSpec{Image: "nosuch"}}})
			if err == nil && len(r.Images) != 0 {
				return status.Error(codes.Internal, "images listed for an unknown filter")
			}
			return err
		}), codes.OK},
		{"RuntimeConfig", call(func() error {
			r, err := rs.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
			if err == nil && r.GetLinux().GetCgroupDriver() != runtimeapi.CgroupDriver_CGROUPFS {
				return status.Error(codes.Internal, "not cgroupfs")
			}
			return err
		}), codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			if got := status.Code(err); got != tc.code {
				t.Errorf("code %v (%v), want %v", got, err, tc.code)
			}
			if err != nil && strings.TrimSpace(status.Convert(err).Message()) == "" {
				t.Error("empty error message")
			}
		})
	}
	// The streamed lists carry what the lists do.
	id := e.createStart(pod, pcfg, ctrConfig("streamed", "sleep", "3600"))
	sp, err := rs.StreamPodSandboxes(ctx, &runtimeapi.StreamPodSandboxesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := sp.Recv()
	if err != nil || len(m.PodSandboxes) != 1 || m.PodSandboxes[0].Id != pod {
		t.Errorf("StreamPodSandboxes: %v %v", m, err)
	}
	if _, err := sp.Recv(); err != io.EOF {
		t.Errorf("StreamPodSandboxes did not end: %v", err)
	}
	sc, err := rs.StreamContainers(ctx, &runtimeapi.StreamContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: pod}})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := sc.Recv(); err != nil || len(m.Containers) != 1 || m.Containers[0].Id != id {
		t.Errorf("StreamContainers: %v %v", m, err)
	}
	ss, err := rs.StreamContainerStats(ctx, &runtimeapi.StreamContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{Id: "nothing"}})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := ss.Recv(); err != nil || len(m.ContainerStats) != 0 {
		t.Errorf("StreamContainerStats of nothing: %v %v", m, err)
	}
	// The runtime survived all of it.
	if _, err := rs.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		t.Fatal(err)
	}
	_ = context.Background
}
