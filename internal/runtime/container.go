package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/runtime/image"
)

// CreateContainer prepares the rootfs, writes the OCI bundle and starts
// the container's monitor, which runs `runc create`: the container's
// init then waits for StartContainer. Any failure removes everything.
func (r *Runtime) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	cfg := req.GetConfig()
	if cfg.GetMetadata().GetName() == "" {
		return nil, grpcError(fmt.Errorf("container config has no metadata name: %w", errInvalid))
	}
	if cfg.GetImage().GetImage() == "" {
		return nil, grpcError(fmt.Errorf("container %s names no image: %w", cfg.GetMetadata().GetName(), errInvalid))
	}
	sb, err := r.lookupSandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, grpcError(err)
	}
	sb.mu.Lock()
	defer sb.mu.Unlock()
	r.mu.Lock()
	sbst := sb.st
	for _, c := range r.containers {
		m := c.st.config.GetMetadata()
		if c.st.SandboxID == sbst.ID && m.GetName() == cfg.GetMetadata().GetName() && m.GetAttempt() == cfg.GetMetadata().GetAttempt() {
			r.mu.Unlock()
			return nil, grpcError(fmt.Errorf("container %s attempt %d exists as %s: %w", m.GetName(), m.GetAttempt(), c.st.ID, errAlreadyExists))
		}
	}
	r.mu.Unlock()
	if !sbst.Ready {
		return nil, grpcError(fmt.Errorf("pod sandbox %s is not ready: %w", sbst.ID, errPrecondition))
	}
	img, err := r.images.Get(cfg.GetImage().GetImage())
	if err != nil {
		return nil, grpcError(fmt.Errorf("container %s: image %q: %w", cfg.GetMetadata().GetName(), cfg.GetImage().GetImage(), err))
	}
	raw, err := proto.Marshal(cfg)
	if err != nil {
		return nil, grpcError(err)
	}
	id := newID()
	st := containerState{
		ID:          id,
		SandboxID:   sbst.ID,
		Config:      raw,
		ImageRef:    cfg.GetImage().GetImage(),
		ImageID:     img.ID,
		CreatedAt:   time.Now().UnixNano(),
		State:       runtimeapi.ContainerState_CONTAINER_CREATED,
		Bundle:      filepath.Join(r.cfg.RunDir, "containers", id),
		CgroupsPath: filepath.Join(sbst.CgroupParent, id),
		StopSignal:  img.Config.StopSignal,
		config:      cfg,
	}
	if s := cfg.GetStopSignal(); s != runtimeapi.Signal_RUNTIME_DEFAULT {
		st.StopSignal = s.String()
	}
	st.Rootfs = filepath.Join(st.Bundle, "rootfs")
	st.LogPath = r.logPath(&sbst, cfg)
	if err := r.createContainer(ctx, &st, &sbst, img.Config); err != nil {
		r.destroyContainer(context.WithoutCancel(ctx), &st)
		return nil, grpcError(fmt.Errorf("create container %s: %w", cfg.GetMetadata().GetName(), err))
	}
	r.mu.Lock()
	r.containers[id] = &container{st: st}
	r.mu.Unlock()
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

func (r *Runtime) logPath(sb *sandboxState, cfg *runtimeapi.ContainerConfig) string {
	if sb.LogDir != "" && cfg.GetLogPath() != "" {
		return filepath.Join(sb.LogDir, cfg.GetLogPath())
	}
	if sb.LogDir == "" && cfg.GetLogPath() != "" && filepath.IsAbs(cfg.GetLogPath()) {
		return cfg.GetLogPath()
	}
	md := sb.config.GetMetadata()
	return filepath.Join(r.cfg.LogRoot, md.GetNamespace()+"_"+md.GetName()+"_"+md.GetUid(),
		cfg.GetMetadata().GetName(), strconv.Itoa(int(cfg.GetMetadata().GetAttempt()))+".log")
}

func (r *Runtime) createContainer(ctx context.Context, st *containerState, sb *sandboxState, img image.RunConfig) error {
	if err := os.MkdirAll(r.containerStateDir(st.ID), 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(st.Bundle, 0o711); err != nil {
		return err
	}
	if _, err := r.images.Mount(ctx, st.ID, st.ImageID, st.Rootfs); err != nil {
		return fmt.Errorf("rootfs: %w", err)
	}
	pidNS, err := r.pidNamespace(st.config, sb)
	if err != nil {
		return err
	}
	spec, err := r.buildSpec(specInput{id: st.ID, cfg: st.config, sb: sb, img: img, rootfs: st.Rootfs, cgroupsPath: st.CgroupsPath, pidNS: pidNS})
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(st.Bundle, "config.json"), b, 0o600); err != nil {
		return err
	}
	oomFile := ""
	if d := r.host.controllerDir("memory", st.CgroupsPath); d != "" {
		oomFile = filepath.Join(d, "memory.oom_control")
		if r.host.cgroupV2 {
			oomFile = filepath.Join(d, "memory.events")
		}
	}
	if err := r.saveContainer(st); err != nil {
		return err
	}
	err = r.startShim(ctx, st, shimConfig{
		ID: st.ID, Bundle: st.Bundle, Runc: r.runc.bin, RuncRoot: r.runc.root,
		PidFile:  filepath.Join(st.Bundle, "init.pid"),
		Socket:   r.shimSocket(st),
		Console:  filepath.Join(st.Bundle, "c.sock"),
		ExitFile: filepath.Join(r.containerStateDir(st.ID), "exit.json"),
		LogPath:  st.LogPath, LogMaxSize: r.cfg.LogMaxSize, LogMaxFiles: r.cfg.LogMaxFiles,
		Tty: st.config.GetTty(), Stdin: st.config.GetStdin(), StdinOnce: st.config.GetStdinOnce(),
		OOMFile: oomFile,
	})
	if err != nil {
		return err
	}
	return r.saveContainer(st)
}

// pidNamespace picks the container's pid namespace: the host's, a new
// one, or (no pause process holds a pod-wide one) the namespace of the
// sandbox's oldest running container, or of a target container.
func (r *Runtime) pidNamespace(cfg *runtimeapi.ContainerConfig, sb *sandboxState) (string, error) {
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	switch ns.GetPid() {
	case runtimeapi.NamespaceMode_NODE:
		return "host", nil
	case runtimeapi.NamespaceMode_TARGET:
		c, err := r.lookupContainer(ns.GetTargetId())
		if err != nil {
			return "", fmt.Errorf("pid namespace target: %w", err)
		}
		r.mu.Lock()
		pid := c.st.Pid
		r.mu.Unlock()
		if pid <= 0 || procStartTime(pid) == 0 {
			return "", fmt.Errorf("pid namespace target %s is not running: %w", ns.GetTargetId(), errPrecondition)
		}
		return fmt.Sprintf("/proc/%d/ns/pid", pid), nil
	case runtimeapi.NamespaceMode_POD:
		var oldest *containerState
		r.mu.Lock()
		for _, c := range r.containers {
			if c.st.SandboxID == sb.ID && c.st.State == runtimeapi.ContainerState_CONTAINER_RUNNING && c.st.Pid > 0 &&
				(oldest == nil || c.st.CreatedAt < oldest.CreatedAt) {
				st := c.st
				oldest = &st
			}
		}
		r.mu.Unlock()
		if oldest != nil && procStartTime(oldest.Pid) != 0 {
			return fmt.Sprintf("/proc/%d/ns/pid", oldest.Pid), nil
		}
	}
	return "", nil
}

// destroyContainer removes what a container holds on the host: runc's
// container (and so its processes and cgroup), the monitor, the rootfs
// mount, the bundle and state directories. It is idempotent.
func (r *Runtime) destroyContainer(ctx context.Context, st *containerState) error {
	var errs []error
	if err := r.runc.delete(ctx, st.ID); err != nil && !strings.Contains(err.Error(), "does not exist") && !strings.Contains(err.Error(), "not exist") {
		errs = append(errs, err)
	}
	if r.shimAlive(st) {
		unix.Kill(st.ShimPid, unix.SIGKILL)
	}
	if err := r.images.Unmount(st.ID, st.Rootfs, true); err != nil {
		errs = append(errs, fmt.Errorf("rootfs: %w", err))
	}
	if err := r.host.removeCgroupTree(st.CgroupsPath); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.RemoveAll(st.Bundle); err != nil {
		return err
	}
	return os.RemoveAll(r.containerStateDir(st.ID))
}

// StartContainer lets a created container's init exec its process.
func (r *Runtime) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	c, err := r.lookupContainer(req.GetContainerId())
	if err != nil {
		return nil, grpcError(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := r.refresh(c)
	if st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, grpcError(fmt.Errorf("container %s is %s, not created: %w", st.ID, stateName(st.State), errPrecondition))
	}
	started := time.Now().UnixNano() // before: the process may exit at once
	if err := r.runc.start(ctx, st.ID); err != nil {
		return nil, grpcError(fmt.Errorf("start container %s: %w", st.ID, err))
	}
	st.State = runtimeapi.ContainerState_CONTAINER_RUNNING
	st.StartedAt = started
	if err := r.update(c, st); err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

func stateName(s runtimeapi.ContainerState) string {
	return strings.ToLower(strings.TrimPrefix(s.String(), "CONTAINER_"))
}

// update stores a container's new state in memory and on disk.
func (r *Runtime) update(c *container, st containerState) error {
	r.mu.Lock()
	c.st = st
	r.mu.Unlock()
	return r.saveContainer(&st)
}

// refresh folds the monitor's exit file into the state of a created or
// running container and returns a copy of the state. Callers hold c.mu.
func (r *Runtime) refresh(c *container) containerState {
	r.mu.Lock()
	st := c.st
	r.mu.Unlock()
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING && st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return st
	}
	if es, ok := r.readExitFile(st.ID); ok {
		applyExit(&st, es)
		if err := r.update(c, st); err != nil {
			r.log.Warn("runtime: saving container state", "id", st.ID, "err", err)
		}
	}
	return st
}

func applyExit(st *containerState, es exitStatus) {
	st.State = runtimeapi.ContainerState_CONTAINER_EXITED
	st.ExitCode = es.ExitCode
	st.FinishedAt = es.FinishedAt
	switch {
	case es.OOMKilled:
		st.Reason = "OOMKilled"
	case es.ExitCode == 0:
		st.Reason = "Completed"
	default:
		st.Reason = "Error"
	}
	if st.StartedAt == 0 && st.Message == "" {
		st.Message = "the container was stopped before it started"
	}
}

// adopt reconciles a container loaded from disk with what still runs:
// its exit file, its monitor, and runc's own state.
func (r *Runtime) adopt(c *container) {
	st := &c.st
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING && st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return
	}
	if es, ok := r.readExitFile(st.ID); ok {
		applyExit(st, es)
		r.saveContainer(st)
		return
	}
	if r.shimAlive(st) {
		return
	}
	rs, err := r.runc.state(context.Background(), st.ID)
	if err == nil && (rs.Status == "running" || rs.Status == "created" || rs.Status == "paused") {
		r.log.Warn("runtime: container runs without its monitor: its exit code will be lost", "id", st.ID)
		return
	}
	st.State = runtimeapi.ContainerState_CONTAINER_EXITED
	st.ExitCode = 255
	st.Reason = "Unknown"
	st.Message = "the container's monitor died without recording its exit"
	st.FinishedAt = time.Now().UnixNano()
	r.saveContainer(st)
}

// StopContainer sends the stop signal, waits up to the timeout, then
// kills. Stopping an exited, unknown-to-runc or unknown container is a
// no-op: the CRI makes StopContainer idempotent.
func (r *Runtime) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	c, err := r.lookupContainer(req.GetContainerId())
	if errors.Is(err, errNotFound) {
		return &runtimeapi.StopContainerResponse{}, nil
	}
	if err != nil {
		return nil, grpcError(err)
	}
	if err := r.stopContainer(ctx, c, time.Duration(req.GetTimeout())*time.Second); err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (r *Runtime) stopContainer(ctx context.Context, c *container, timeout time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := r.refresh(c)
	if st.State == runtimeapi.ContainerState_CONTAINER_EXITED || st.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
		return nil
	}
	all := st.config.GetLinux().GetSecurityContext().GetNamespaceOptions().GetPid() != runtimeapi.NamespaceMode_CONTAINER
	if st.State == runtimeapi.ContainerState_CONTAINER_RUNNING && timeout > 0 {
		sig := st.StopSignal
		if sig == "" {
			sig = "SIGTERM"
		}
		if err := r.runc.kill(ctx, st.ID, sig, false); err != nil {
			r.log.Debug("runtime: stop signal", "id", st.ID, "err", err)
		}
		if r.waitExit(ctx, &st, timeout) {
			st = r.refresh(c)
			return nil
		}
	}
	if err := r.runc.kill(ctx, st.ID, "SIGKILL", all); err != nil {
		r.log.Debug("runtime: kill", "id", st.ID, "err", err)
	}
	if !r.waitExit(ctx, &st, r.cfg.KillTimeout) {
		return fmt.Errorf("container %s did not exit %s after SIGKILL", st.ID, r.cfg.KillTimeout)
	}
	st = r.refresh(c)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		// The monitor died too: nothing will write an exit file.
		applyExit(&st, exitStatus{ExitCode: 137, FinishedAt: time.Now().UnixNano(), Signal: "SIGKILL"})
		st.Reason = "Unknown"
		return r.update(c, st)
	}
	return nil
}

// RemoveContainer kills the container if it runs and removes it and
// everything it held. An unknown ID is not an error.
func (r *Runtime) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	c, err := r.lookupContainer(req.GetContainerId())
	if errors.Is(err, errNotFound) {
		return &runtimeapi.RemoveContainerResponse{}, nil
	}
	if err != nil {
		return nil, grpcError(err)
	}
	if err := r.removeContainer(ctx, c); err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (r *Runtime) removeContainer(ctx context.Context, c *container) error {
	if err := r.stopContainer(ctx, c, 0); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r.mu.Lock()
	st := c.st
	r.mu.Unlock()
	if err := r.destroyContainer(ctx, &st); err != nil {
		return fmt.Errorf("remove container %s: %w", st.ID, err)
	}
	r.mu.Lock()
	delete(r.containers, st.ID)
	delete(r.cpuSamples, st.ID)
	r.mu.Unlock()
	return nil
}

// ContainerStatus reports one container.
func (r *Runtime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	c, err := r.lookupContainer(req.GetContainerId())
	if err != nil {
		return nil, grpcError(err)
	}
	resp := &runtimeapi.ContainerStatusResponse{Status: r.containerStatus(c)}
	if req.GetVerbose() {
		r.mu.Lock()
		st := c.st
		r.mu.Unlock()
		info, _ := json.Marshal(map[string]any{"pid": st.Pid, "shimPid": st.ShimPid, "bundle": st.Bundle, "cgroupsPath": st.CgroupsPath, "sandboxID": st.SandboxID})
		resp.Info = map[string]string{"info": string(info)}
	}
	return resp, nil
}

func (r *Runtime) containerStatus(c *container) *runtimeapi.ContainerStatus {
	c.mu.Lock()
	st := r.refresh(c)
	c.mu.Unlock()
	cfg := st.config
	return &runtimeapi.ContainerStatus{
		Id:          st.ID,
		Metadata:    cfg.GetMetadata(),
		State:       st.State,
		CreatedAt:   st.CreatedAt,
		StartedAt:   st.StartedAt,
		FinishedAt:  st.FinishedAt,
		ExitCode:    st.ExitCode,
		Image:       &runtimeapi.ImageSpec{Image: st.ImageRef},
		ImageRef:    st.ImageID,
		ImageId:     st.ImageID,
		Reason:      st.Reason,
		Message:     st.Message,
		Labels:      cfg.GetLabels(),
		Annotations: cfg.GetAnnotations(),
		Mounts:      cfg.GetMounts(),
		LogPath:     st.LogPath,
		Resources:   &runtimeapi.ContainerResources{Linux: cfg.GetLinux().GetResources()},
	}
}

// ListContainers lists containers matching the filter, oldest first.
func (r *Runtime) ListContainers(ctx context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	cs := make([]*container, 0, len(r.containers))
	for _, c := range r.containers {
		cs = append(cs, c)
	}
	r.mu.Unlock()
	var out []*runtimeapi.Container
	for _, c := range cs {
		c.mu.Lock()
		st := r.refresh(c)
		c.mu.Unlock()
		if f.GetId() != "" && !strings.HasPrefix(st.ID, f.GetId()) {
			continue
		}
		if f.GetPodSandboxId() != "" && !strings.HasPrefix(st.SandboxID, f.GetPodSandboxId()) {
			continue
		}
		if f.GetState() != nil && f.GetState().GetState() != st.State {
			continue
		}
		if !labelsMatch(st.config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		out = append(out, &runtimeapi.Container{
			Id: st.ID, PodSandboxId: st.SandboxID, Metadata: st.config.GetMetadata(),
			Image: &runtimeapi.ImageSpec{Image: st.ImageRef}, ImageRef: st.ImageID, ImageId: st.ImageID,
			State: st.State, CreatedAt: st.CreatedAt,
			Labels: st.config.GetLabels(), Annotations: st.config.GetAnnotations(),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

// UpdateContainerResources applies new resources with `runc update` and
// remembers them.
func (r *Runtime) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	c, err := r.lookupContainer(req.GetContainerId())
	if err != nil {
		return nil, grpcError(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	st := r.refresh(c)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING && st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, grpcError(fmt.Errorf("container %s is %s: %w", st.ID, stateName(st.State), errPrecondition))
	}
	res := req.GetLinux()
	if res == nil {
		return &runtimeapi.UpdateContainerResourcesResponse{}, nil
	}
	b, err := json.Marshal(r.linuxResources(res))
	if err != nil {
		return nil, grpcError(err)
	}
	if err := r.runc.update(ctx, st.ID, b); err != nil {
		return nil, grpcError(err)
	}
	cfg := proto.Clone(st.config).(*runtimeapi.ContainerConfig)
	if cfg.Linux == nil {
		cfg.Linux = &runtimeapi.LinuxContainerConfig{}
	}
	cfg.Linux.Resources = res
	if st.Config, err = proto.Marshal(cfg); err != nil {
		return nil, grpcError(err)
	}
	st.config = cfg
	if err := r.update(c, st); err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// ReopenContainerLog asks the monitor to reopen the log file, after the
// kubelet rotated it.
func (r *Runtime) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	c, err := r.lookupContainer(req.GetContainerId())
	if err != nil {
		return nil, grpcError(err)
	}
	c.mu.Lock()
	st := r.refresh(c)
	c.mu.Unlock()
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, grpcError(fmt.Errorf("container %s is %s: %w", st.ID, stateName(st.State), errPrecondition))
	}
	if err := r.shimOK(&st, shimRequest{Op: "reopen"}); err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}
