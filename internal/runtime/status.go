package runtime

import (
	"context"
	"os"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RuntimeVersion is the version rudder's runtime reports.
const RuntimeVersion = "0.1.0"

func (r *Runtime) Version(ctx context.Context, req *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	return &runtimeapi.VersionResponse{
		Version:           "0.1.0",
		RuntimeName:       "rudder",
		RuntimeVersion:    RuntimeVersion,
		RuntimeApiVersion: "v1",
	}, nil
}

// Status reports RuntimeReady (runc is there) and NetworkReady: false
// while a Network that has a Ready() error method reports one (e.g. the
// node has no pod CIDR yet); without a Network, sandboxes get loopback,
// which is always ready.
func (r *Runtime) Status(ctx context.Context, req *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	ready := &runtimeapi.RuntimeCondition{Type: runtimeapi.RuntimeReady, Status: true}
	if _, err := os.Stat(r.runc.bin); err != nil {
		ready.Status, ready.Reason, ready.Message = false, "OCIRuntimeMissing", err.Error()
	}
	netw := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	if n, ok := r.cfg.Network.(interface{ Ready() error }); ok {
		if err := n.Ready(); err != nil {
			netw.Status, netw.Reason, netw.Message = false, "NetworkPluginNotReady", err.Error()
		}
	}
	resp := &runtimeapi.StatusResponse{
		Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{ready, netw}},
		RuntimeHandlers: []*runtimeapi.RuntimeHandler{{
			Name:     "",
			Features: &runtimeapi.RuntimeHandlerFeatures{RecursiveReadOnlyMounts: false, UserNamespaces: false},
		}},
	}
	if req.GetVerbose() {
		resp.Info = map[string]string{"ociRuntime": r.runc.bin, "root": r.cfg.Root, "runDir": r.cfg.RunDir}
	}
	return resp, nil
}

// UpdateRuntimeConfig accepts the pod CIDR; rudder's network component
// learns it from the API server, so there is nothing to do.
func (r *Runtime) UpdateRuntimeConfig(ctx context.Context, req *runtimeapi.UpdateRuntimeConfigRequest) (*runtimeapi.UpdateRuntimeConfigResponse, error) {
	return &runtimeapi.UpdateRuntimeConfigResponse{}, nil
}

// RuntimeConfig tells the kubelet which cgroup driver to use.
func (r *Runtime) RuntimeConfig(ctx context.Context, req *runtimeapi.RuntimeConfigRequest) (*runtimeapi.RuntimeConfigResponse, error) {
	return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: runtimeapi.CgroupDriver_CGROUPFS}}, nil
}
