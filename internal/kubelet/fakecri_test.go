package kubelet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeCRI is a CRI runtime in memory, served over gRPC on a real unix
// socket: what the kubelet's tests run pods on without root. Containers
// "run" as a state; starting one writes a line to its CRI log file, and a
// test makes it exit with exit(). The real runtime (internal/runtime) is
// exercised against this kubelet by the agent's tests.
type fakeCRI struct {
	cri.UnimplementedRuntimeServiceServer
	cri.UnimplementedImageServiceServer

	mu         sync.Mutex
	sandboxes  map[string]*fakeSandbox
	containers map[string]*fakeContainer
	images     map[string]bool
	pullErr    map[string]string
	pullHang   map[string]chan struct{} // image → closed when a pull of it began; the pull never ends
	exitAtOnce map[string]int32         // container name → exit code right after start
	execExit   map[string]int32         // ExecSync's exit code by the command's first word
	execFailN  map[string]int           // by first word: fail (exit 1) this many more times
	nextID     int
	streamURL  string
	starts     int
	endpoint   string
}

type fakeSandbox struct {
	id      string
	cfg     *cri.PodSandboxConfig
	ready   bool
	created time.Time
	ip      string
}

type fakeContainer struct {
	id, sandboxID string
	cfg           *cri.ContainerConfig
	state         cri.ContainerState
	created       time.Time
	started       time.Time
	finished      time.Time
	exitCode      int32
	logPath       string
}

// startFakeCRI serves a fake runtime on a socket in a temp directory.
func startFakeCRI(t *testing.T) *fakeCRI {
	t.Helper()
	dir, err := os.MkdirTemp("", "fakecri")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "cri.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCRI{sandboxes: map[string]*fakeSandbox{}, containers: map[string]*fakeContainer{}, images: map[string]bool{},
		pullErr: map[string]string{}, pullHang: map[string]chan struct{}{}, exitAtOnce: map[string]int32{}, execExit: map[string]int32{}, execFailN: map[string]int{}, endpoint: "unix://" + sock}
	srv := grpc.NewServer()
	cri.RegisterRuntimeServiceServer(srv, f)
	cri.RegisterImageServiceServer(srv, f)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		srv.Stop()
		os.RemoveAll(dir)
	})
	return f
}

func (f *fakeCRI) id() string {
	f.nextID++
	return fmt.Sprintf("%064x", f.nextID)
}

// exit ends a running container with code, as its process exiting would.
func (f *fakeCRI) exit(id string, code int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[id]; ok && c.state == cri.ContainerState_CONTAINER_RUNNING {
		c.state, c.exitCode, c.finished = cri.ContainerState_CONTAINER_EXITED, code, time.Now()
		appendLog(c.logPath, "stdout", fmt.Sprintf("exiting with %d", code))
	}
}

// snapshot lists the containers by name → their IDs and states.
func (f *fakeCRI) snapshot() (running, all int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.containers {
		all++
		if c.state == cri.ContainerState_CONTAINER_RUNNING {
			running++
		}
	}
	return running, all
}

func appendLog(path, stream, text string) {
	if path == "" {
		return
	}
	_ = os.MkdirAll(filepath.Dir(path), 0o755)
	fh, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer fh.Close()
	fmt.Fprintf(fh, "%s %s F %s\n", time.Now().UTC().Format(time.RFC3339Nano), stream, text)
}

func (f *fakeCRI) Version(context.Context, *cri.VersionRequest) (*cri.VersionResponse, error) {
	return &cri.VersionResponse{Version: "0.1.0", RuntimeName: "fake", RuntimeVersion: "1.0.0", RuntimeApiVersion: "v1"}, nil
}

func (f *fakeCRI) Status(context.Context, *cri.StatusRequest) (*cri.StatusResponse, error) {
	return &cri.StatusResponse{Status: &cri.RuntimeStatus{Conditions: []*cri.RuntimeCondition{
		{Type: cri.RuntimeReady, Status: true}, {Type: cri.NetworkReady, Status: true}}}}, nil
}

func (f *fakeCRI) RunPodSandbox(_ context.Context, r *cri.RunPodSandboxRequest) (*cri.RunPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s := &fakeSandbox{id: f.id(), cfg: r.Config, ready: true, created: time.Now(), ip: fmt.Sprintf("10.88.0.%d", f.nextID%250+2)}
	f.sandboxes[s.id] = s
	return &cri.RunPodSandboxResponse{PodSandboxId: s.id}, nil
}

func (f *fakeCRI) StopPodSandbox(_ context.Context, r *cri.StopPodSandboxRequest) (*cri.StopPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s, ok := f.sandboxes[r.PodSandboxId]; ok {
		s.ready = false
		for _, c := range f.containers {
			if c.sandboxID == s.id && c.state == cri.ContainerState_CONTAINER_RUNNING {
				c.state, c.exitCode, c.finished = cri.ContainerState_CONTAINER_EXITED, 137, time.Now()
			}
		}
	}
	return &cri.StopPodSandboxResponse{}, nil
}

func (f *fakeCRI) RemovePodSandbox(_ context.Context, r *cri.RemovePodSandboxRequest) (*cri.RemovePodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, c := range f.containers {
		if c.sandboxID == r.PodSandboxId {
			os.Remove(c.logPath)
			delete(f.containers, id)
		}
	}
	delete(f.sandboxes, r.PodSandboxId)
	return &cri.RemovePodSandboxResponse{}, nil
}

func (f *fakeCRI) PodSandboxStatus(_ context.Context, r *cri.PodSandboxStatusRequest) (*cri.PodSandboxStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sandboxes[r.PodSandboxId]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such sandbox")
	}
	st := &cri.PodSandboxStatus{Id: s.id, Metadata: s.cfg.Metadata, State: sandboxState(s), CreatedAt: s.created.UnixNano(), Labels: s.cfg.Labels}
	if s.ready {
		st.Network = &cri.PodSandboxNetworkStatus{Ip: s.ip}
	}
	return &cri.PodSandboxStatusResponse{Status: st}, nil
}

func sandboxState(s *fakeSandbox) cri.PodSandboxState {
	if s.ready {
		return cri.PodSandboxState_SANDBOX_READY
	}
	return cri.PodSandboxState_SANDBOX_NOTREADY
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeCRI) ListPodSandbox(_ context.Context, r *cri.ListPodSandboxRequest) (*cri.ListPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*cri.PodSandbox
	for _, s := range f.sandboxes {
		if r.Filter != nil && !matches(r.Filter.LabelSelector, s.cfg.Labels) {
			continue
		}
		out = append(out, &cri.PodSandbox{Id: s.id, Metadata: s.cfg.Metadata, State: sandboxState(s), CreatedAt: s.created.UnixNano(), Labels: s.cfg.Labels})
	}
	return &cri.ListPodSandboxResponse{Items: out}, nil
}

func (f *fakeCRI) CreateContainer(_ context.Context, r *cri.CreateContainerRequest) (*cri.CreateContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.sandboxes[r.PodSandboxId]
	if !ok || !s.ready {
		return nil, status.Error(codes.FailedPrecondition, "sandbox not ready")
	}
	if !f.images[r.Config.Image.Image] {
		return nil, status.Error(codes.NotFound, "image not present")
	}
	c := &fakeContainer{id: f.id(), sandboxID: s.id, cfg: r.Config, state: cri.ContainerState_CONTAINER_CREATED, created: time.Now(),
		logPath: filepath.Join(s.cfg.LogDirectory, r.Config.LogPath)}
	f.containers[c.id] = c
	return &cri.CreateContainerResponse{ContainerId: c.id}, nil
}

func (f *fakeCRI) StartContainer(_ context.Context, r *cri.StartContainerRequest) (*cri.StartContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[r.ContainerId]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such container")
	}
	f.starts++
	c.state, c.started = cri.ContainerState_CONTAINER_RUNNING, time.Now()
	var env []string
	for _, kv := range c.cfg.Envs {
		env = append(env, kv.Key+"="+string(kv.Value))
	}
	appendLog(c.logPath, "stdout", fmt.Sprintf("started %s attempt %d: %s", c.cfg.Metadata.Name, c.cfg.Metadata.Attempt, strings.Join(append(c.cfg.Command, c.cfg.Args...), " ")))
	appendLog(c.logPath, "stderr", "env "+strings.Join(env, " "))
	if code, ok := f.exitAtOnce[c.cfg.Metadata.Name]; ok {
		c.state, c.exitCode, c.finished = cri.ContainerState_CONTAINER_EXITED, code, time.Now()
		appendLog(c.logPath, "stdout", fmt.Sprintf("exiting with %d", code))
	}
	return &cri.StartContainerResponse{}, nil
}

func (f *fakeCRI) StopContainer(_ context.Context, r *cri.StopContainerRequest) (*cri.StopContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[r.ContainerId]; ok && c.state != cri.ContainerState_CONTAINER_EXITED {
		c.state, c.exitCode, c.finished = cri.ContainerState_CONTAINER_EXITED, 143, time.Now()
	}
	return &cri.StopContainerResponse{}, nil
}

func (f *fakeCRI) RemoveContainer(_ context.Context, r *cri.RemoveContainerRequest) (*cri.RemoveContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.containers[r.ContainerId]; ok {
		os.Remove(c.logPath)
		delete(f.containers, r.ContainerId)
	}
	return &cri.RemoveContainerResponse{}, nil
}

func (f *fakeCRI) criContainer(c *fakeContainer) *cri.Container {
	return &cri.Container{Id: c.id, PodSandboxId: c.sandboxID, Metadata: c.cfg.Metadata, Image: c.cfg.Image, ImageRef: "sha256:" + c.cfg.Image.Image,
		State: c.state, CreatedAt: c.created.UnixNano(), Labels: c.cfg.Labels, Annotations: c.cfg.Annotations}
}

func (f *fakeCRI) ListContainers(_ context.Context, r *cri.ListContainersRequest) (*cri.ListContainersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*cri.Container
	for _, c := range f.containers {
		if r.Filter != nil && (!matches(r.Filter.LabelSelector, c.cfg.Labels) || (r.Filter.State != nil && r.Filter.State.State != c.state)) {
			continue
		}
		out = append(out, f.criContainer(c))
	}
	return &cri.ListContainersResponse{Containers: out}, nil
}

func (f *fakeCRI) ContainerStatus(_ context.Context, r *cri.ContainerStatusRequest) (*cri.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.containers[r.ContainerId]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such container")
	}
	st := &cri.ContainerStatus{Id: c.id, Metadata: c.cfg.Metadata, State: c.state, CreatedAt: c.created.UnixNano(), Image: c.cfg.Image,
		ImageRef: "sha256:" + c.cfg.Image.Image, ExitCode: c.exitCode, Labels: c.cfg.Labels, Annotations: c.cfg.Annotations, LogPath: c.logPath}
	if !c.started.IsZero() {
		st.StartedAt = c.started.UnixNano()
	}
	if !c.finished.IsZero() {
		st.FinishedAt = c.finished.UnixNano()
	}
	return &cri.ContainerStatusResponse{Status: st}, nil
}

func (f *fakeCRI) ExecSync(ctx context.Context, r *cri.ExecSyncRequest) (*cri.ExecSyncResponse, error) {
	if len(r.Cmd) > 0 && r.Cmd[0] == "hang" {
		// A command that never ends: the runtime gives up at its timeout.
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(r.Timeout) * time.Second):
			return nil, status.Errorf(codes.DeadlineExceeded, "command timed out after %ds", r.Timeout)
		}
	}
	f.mu.Lock()
	code := int32(0)
	if len(r.Cmd) > 0 {
		code = f.execExit[r.Cmd[0]]
		if f.execFailN[r.Cmd[0]] > 0 {
			f.execFailN[r.Cmd[0]]--
			code = 1
		}
	}
	f.mu.Unlock()
	return &cri.ExecSyncResponse{Stdout: []byte(strings.Join(r.Cmd, " ") + "\n"), ExitCode: code}, nil
}

func (f *fakeCRI) Exec(_ context.Context, r *cri.ExecRequest) (*cri.ExecResponse, error) {
	return &cri.ExecResponse{Url: f.streamURL + "/exec/" + r.ContainerId}, nil
}

func (f *fakeCRI) Attach(_ context.Context, r *cri.AttachRequest) (*cri.AttachResponse, error) {
	return &cri.AttachResponse{Url: f.streamURL + "/attach/" + r.ContainerId}, nil
}

func (f *fakeCRI) PortForward(_ context.Context, r *cri.PortForwardRequest) (*cri.PortForwardResponse, error) {
	return &cri.PortForwardResponse{Url: f.streamURL + "/portforward/" + r.PodSandboxId}, nil
}

func (f *fakeCRI) ListContainerStats(context.Context, *cri.ListContainerStatsRequest) (*cri.ListContainerStatsResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*cri.ContainerStats
	for _, c := range f.containers {
		if c.state != cri.ContainerState_CONTAINER_RUNNING {
			continue
		}
		now := time.Now().UnixNano()
		out = append(out, &cri.ContainerStats{
			Attributes: &cri.ContainerAttributes{Id: c.id, Metadata: c.cfg.Metadata, Labels: c.cfg.Labels},
			Cpu:        &cri.CpuUsage{Timestamp: now, UsageCoreNanoSeconds: &cri.UInt64Value{Value: 2500000000}},
			Memory:     &cri.MemoryUsage{Timestamp: now, WorkingSetBytes: &cri.UInt64Value{Value: 3 << 20}, UsageBytes: &cri.UInt64Value{Value: 4 << 20}},
		})
	}
	return &cri.ListContainerStatsResponse{Stats: out}, nil
}

func (f *fakeCRI) ImageStatus(_ context.Context, r *cri.ImageStatusRequest) (*cri.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.images[r.Image.Image] {
		return &cri.ImageStatusResponse{}, nil
	}
	return &cri.ImageStatusResponse{Image: &cri.Image{Id: "sha256:" + r.Image.Image, RepoTags: []string{r.Image.Image}, Size: 1000}}, nil
}

func (f *fakeCRI) PullImage(ctx context.Context, r *cri.PullImageRequest) (*cri.PullImageResponse, error) {
	f.mu.Lock()
	if began, ok := f.pullHang[r.Image.Image]; ok {
		f.mu.Unlock()
		select {
		case <-began:
		default:
			close(began)
		}
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	defer f.mu.Unlock()
	if msg, ok := f.pullErr[r.Image.Image]; ok {
		return nil, status.Error(codes.NotFound, msg)
	}
	f.images[r.Image.Image] = true
	return &cri.PullImageResponse{ImageRef: "sha256:" + r.Image.Image}, nil
}

func (f *fakeCRI) ListImages(context.Context, *cri.ListImagesRequest) (*cri.ListImagesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*cri.Image
	for name := range f.images {
		out = append(out, &cri.Image{Id: "sha256:" + name, RepoTags: []string{name}, Size: uint64(1000 + len(name))})
	}
	return &cri.ListImagesResponse{Images: out}, nil
}

// corev1PodSandboxConfigForGhost is a sandbox of a pod the API never had.
var corev1PodSandboxConfigForGhost = cri.PodSandboxConfig{
	Metadata: &cri.PodSandboxMetadata{Name: "ghost", Namespace: "default", Uid: "ghost-uid"},
	Labels:   map[string]string{labelPodUID: "ghost-uid", labelPodName: "ghost", labelPodNamespace: "default"},
}
