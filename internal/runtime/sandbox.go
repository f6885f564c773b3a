package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RunPodSandbox creates the pod's namespaces (no pause process), its
// /etc files and /dev/shm, and asks the network for IPs. A failure
// undoes everything it made.
func (r *Runtime) RunPodSandbox(ctx context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	cfg := req.GetConfig()
	if cfg.GetMetadata().GetName() == "" {
		return nil, grpcError(fmt.Errorf("sandbox config has no metadata name: %w", errInvalid))
	}
	if h := req.GetRuntimeHandler(); h != "" && h != "runc" && h != "rudder" {
		return nil, grpcError(fmt.Errorf("runtime handler %q is not supported: %w", h, errInvalid))
	}
	md := cfg.GetMetadata()
	r.mu.Lock()
	for _, s := range r.sandboxes {
		m := s.st.config.GetMetadata()
		if m.GetName() == md.GetName() && m.GetNamespace() == md.GetNamespace() && m.GetUid() == md.GetUid() && m.GetAttempt() == md.GetAttempt() {
			r.mu.Unlock()
			return nil, grpcError(fmt.Errorf("pod sandbox %s/%s attempt %d exists as %s: %w", md.GetNamespace(), md.GetName(), md.GetAttempt(), s.st.ID, errAlreadyExists))
		}
	}
	r.mu.Unlock()

	id := newID()
	raw, err := proto.Marshal(cfg)
	if err != nil {
		return nil, grpcError(err)
	}
	st := sandboxState{
		ID:        id,
		Config:    raw,
		CreatedAt: time.Now().UnixNano(),
		Dir:       filepath.Join(r.cfg.RunDir, "sandboxes", id),
		LogDir:    cfg.GetLogDirectory(),
		config:    cfg,
	}
	nsOpts := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	st.Pid = nsOpts.GetPid()
	st.CgroupParent = cfg.GetLinux().GetCgroupParent()
	if st.CgroupParent == "" {
		st.CgroupParent = filepath.Join(r.cfg.CgroupParent, "pod-"+id[:16])
		st.OwnCgroup = true
	}
	if err := r.setupSandbox(ctx, &st, nsOpts); err != nil {
		r.undoSandbox(ctx, &st)
		return nil, grpcError(fmt.Errorf("run pod sandbox %s/%s: %w", md.GetNamespace(), md.GetName(), err))
	}
	st.Ready = true
	if err := r.saveSandbox(&st); err != nil {
		r.undoSandbox(ctx, &st)
		return nil, grpcError(err)
	}
	r.mu.Lock()
	r.sandboxes[id] = &sandbox{st: st}
	r.mu.Unlock()
	r.log.Info("runtime: sandbox ready", "id", id, "pod", md.GetNamespace()+"/"+md.GetName())
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

func (r *Runtime) setupSandbox(ctx context.Context, st *sandboxState, ns *runtimeapi.NamespaceOption) error {
	if err := os.MkdirAll(r.sandboxStateDir(st.ID), 0o700); err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(st.Dir, "shm"), 0o755); err != nil {
		return err
	}
	cfg := st.config
	hostNet := ns.GetNetwork() == runtimeapi.NamespaceMode_NODE
	hostIPC := ns.GetIpc() == runtimeapi.NamespaceMode_NODE
	// As containerd: no hostname means the node's. A longer one than
	// the kernel holds is cut, as the kubelet cuts pod hostnames.
	hostname := cfg.GetHostname()
	if len(hostname) > 63 {
		hostname = strings.TrimRight(hostname[:63], "-.")
	}
	if hostname == "" || hostNet {
		h, err := os.Hostname()
		if err != nil {
			return err
		}
		hostname = h
	}
	files, err := createNamespaces(st.Dir, nsRequest{net: !hostNet, ipc: !hostIPC, uts: !hostNet, hostname: hostname})
	if err != nil {
		return err
	}
	st.NetNS, st.IPCNS, st.UTSNS = files["net"], files["ipc"], files["uts"]
	if !hostIPC {
		if err := unix.Mount("shm", filepath.Join(st.Dir, "shm"), "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
			return fmt.Errorf("mount /dev/shm: %w", err)
		}
		st.ShmMounted = true
	}
	if err := writeFileAtomic(filepath.Join(st.Dir, "hostname"), []byte(hostname+"\n"), 0o644); err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(st.Dir, "resolv.conf"), resolvConf(cfg.GetDnsConfig()), 0o644); err != nil {
		return err
	}
	if st.NetNS != "" && r.cfg.Network != nil {
		ips, err := r.cfg.Network.Setup(ctx, st.ID, st.NetNS, cfg)
		if err != nil {
			return fmt.Errorf("network setup: %w", err)
		}
		st.IPs = ips
	}
	hosts := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	if hostNet {
		if b, err := os.ReadFile("/etc/hosts"); err == nil {
			hosts = string(b)
		}
	} else if len(st.IPs) > 0 {
		hosts += st.IPs[0] + "\t" + hostname + "\n"
	}
	return writeFileAtomic(filepath.Join(st.Dir, "hosts"), []byte(hosts), 0o644)
}

// undoSandbox removes what a failed RunPodSandbox made.
func (r *Runtime) undoSandbox(ctx context.Context, st *sandboxState) {
	ctx = context.WithoutCancel(ctx)
	if err := r.teardownSandbox(ctx, st); err != nil {
		r.log.Error("runtime: undoing a failed sandbox", "id", st.ID, "err", err)
		return // the directories hold mounts still
	}
	os.RemoveAll(st.Dir)
	os.RemoveAll(r.sandboxStateDir(st.ID))
}

// resolvConf renders the pod's resolv.conf, or copies the host's when
// the kubelet sent no DNS config.
func resolvConf(dns *runtimeapi.DNSConfig) []byte {
	if dns == nil || (len(dns.Servers) == 0 && len(dns.Searches) == 0 && len(dns.Options) == 0) {
		if b, err := os.ReadFile("/etc/resolv.conf"); err == nil {
			return b
		}
		return nil
	}
	var b strings.Builder
	if len(dns.Searches) > 0 {
		b.WriteString("search " + strings.Join(dns.Searches, " ") + "\n")
	}
	for _, s := range dns.Servers {
		b.WriteString("nameserver " + s + "\n")
	}
	if len(dns.Options) > 0 {
		b.WriteString("options " + strings.Join(dns.Options, " ") + "\n")
	}
	return []byte(b.String())
}

// teardownSandbox releases the network, namespaces and /dev/shm; it is
// idempotent and keeps the sandbox's files (removeSandboxFiles).
func (r *Runtime) teardownSandbox(ctx context.Context, st *sandboxState) error {
	var errs []error
	if st.NetNS != "" && r.cfg.Network != nil {
		if err := r.cfg.Network.Teardown(ctx, st.ID, st.NetNS); err != nil {
			errs = append(errs, fmt.Errorf("network teardown: %w", err))
		}
	}
	for _, p := range []*string{&st.NetNS, &st.IPCNS, &st.UTSNS} {
		if err := releaseNamespace(*p); err != nil {
			errs = append(errs, err)
		} else {
			*p = ""
		}
	}
	if st.ShmMounted {
		if err := unix.Unmount(filepath.Join(st.Dir, "shm"), unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
			errs = append(errs, fmt.Errorf("unmount shm: %w", err))
		} else {
			st.ShmMounted = false
		}
	}
	return errors.Join(errs...)
}

// StopPodSandbox stops every container of the sandbox and releases its
// network and namespaces. Stopping twice, or a removed sandbox, is fine.
func (r *Runtime) StopPodSandbox(ctx context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	s, err := r.lookupSandbox(req.GetPodSandboxId())
	if errors.Is(err, errNotFound) {
		return &runtimeapi.StopPodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, grpcError(err)
	}
	if err := r.stopSandbox(ctx, s); err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (r *Runtime) stopSandbox(ctx context.Context, s *sandbox) error {
	for _, c := range r.sandboxContainers(s.st.ID) {
		if err := r.stopContainer(ctx, c, 0); err != nil {
			return err
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r.mu.Lock()
	st := s.st
	r.mu.Unlock()
	err := r.teardownSandbox(ctx, &st)
	st.Ready = false
	if serr := r.saveSandbox(&st); err == nil {
		err = serr
	}
	r.mu.Lock()
	s.st = st
	r.mu.Unlock()
	return err
}

// RemovePodSandbox stops and removes the sandbox's containers, then
// removes everything the sandbox held on the host.
func (r *Runtime) RemovePodSandbox(ctx context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	s, err := r.lookupSandbox(req.GetPodSandboxId())
	if errors.Is(err, errNotFound) {
		return &runtimeapi.RemovePodSandboxResponse{}, nil
	}
	if err != nil {
		return nil, grpcError(err)
	}
	if err := r.stopSandbox(ctx, s); err != nil {
		return nil, grpcError(err)
	}
	for _, c := range r.sandboxContainers(s.st.ID) {
		if err := r.removeContainer(ctx, c); err != nil {
			return nil, grpcError(err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.OwnCgroup {
		if err := r.host.removeCgroupTree(s.st.CgroupParent); err != nil {
			return nil, grpcError(err)
		}
	}
	if err := os.RemoveAll(s.st.Dir); err != nil {
		return nil, grpcError(err)
	}
	if err := os.RemoveAll(r.sandboxStateDir(s.st.ID)); err != nil {
		return nil, grpcError(err)
	}
	r.mu.Lock()
	delete(r.sandboxes, s.st.ID)
	delete(r.cpuSamples, "pod:"+s.st.ID)
	r.mu.Unlock()
	r.log.Info("runtime: sandbox removed", "id", s.st.ID)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (r *Runtime) sandboxContainers(id string) []*container {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*container
	for _, c := range r.containers {
		if c.st.SandboxID == id {
			out = append(out, c)
		}
	}
	return out
}

// PodSandboxStatus reports the sandbox's state, IPs and namespace modes.
func (r *Runtime) PodSandboxStatus(ctx context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	s, err := r.lookupSandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, grpcError(err)
	}
	r.mu.Lock()
	st := s.st
	r.mu.Unlock()
	cfg := st.config
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if st.Ready {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	netw := &runtimeapi.PodSandboxNetworkStatus{}
	ips := st.IPs
	if len(ips) == 0 && st.NetNS != "" && st.Ready {
		ips = netnsIPs(st.NetNS)
	}
	if len(ips) > 0 {
		netw.Ip = ips[0]
		for _, ip := range ips[1:] {
			netw.AdditionalIps = append(netw.AdditionalIps, &runtimeapi.PodIP{Ip: ip})
		}
	}
	resp := &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
		Id:             st.ID,
		Metadata:       cfg.GetMetadata(),
		State:          state,
		CreatedAt:      st.CreatedAt,
		Network:        netw,
		Linux:          &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()}},
		Labels:         cfg.GetLabels(),
		Annotations:    cfg.GetAnnotations(),
		RuntimeHandler: "",
	}}
	if req.GetVerbose() {
		resp.Info = map[string]string{"netns": st.NetNS, "cgroupParent": st.CgroupParent, "dir": st.Dir}
	}
	for _, c := range r.sandboxContainers(st.ID) {
		cs := r.containerStatus(c)
		resp.ContainersStatuses = append(resp.ContainersStatuses, cs)
	}
	resp.Timestamp = time.Now().UnixNano()
	return resp, nil
}

// ListPodSandbox lists sandboxes matching the filter, oldest first.
func (r *Runtime) ListPodSandbox(ctx context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	var out []*runtimeapi.PodSandbox
	for _, s := range r.sandboxes {
		st := s.st
		if f.GetId() != "" && !strings.HasPrefix(st.ID, f.GetId()) {
			continue
		}
		state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		if st.Ready {
			state = runtimeapi.PodSandboxState_SANDBOX_READY
		}
		if f.GetState() != nil && f.GetState().GetState() != state {
			continue
		}
		if !labelsMatch(st.config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		out = append(out, &runtimeapi.PodSandbox{
			Id: st.ID, Metadata: st.config.GetMetadata(), State: state, CreatedAt: st.CreatedAt,
			Labels: st.config.GetLabels(), Annotations: st.config.GetAnnotations(),
		})
	}
	r.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt < out[j].CreatedAt })
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

func labelsMatch(labels, sel map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}
