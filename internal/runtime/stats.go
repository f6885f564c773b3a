package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// cpuSample is a cumulative CPU reading; nanocores need two of them.
type cpuSample struct {
	at    time.Time
	usage uint64 // ns
}

// cgroupStats reads cpu and memory of a cgroup (v1 or v2). key names the
// previous CPU sample to rate against.
func (r *Runtime) cgroupStats(key, cgroupsPath string) (*runtimeapi.CpuUsage, *runtimeapi.MemoryUsage) {
	now := time.Now()
	ts := now.UnixNano()
	cpu := &runtimeapi.CpuUsage{Timestamp: ts}
	mem := &runtimeapi.MemoryUsage{Timestamp: ts}
	var usage uint64
	var ok bool
	if r.host.cgroupV2 {
		dir := r.host.controllerDir("", cgroupsPath)
		if kv := readKV(filepath.Join(dir, "cpu.stat")); kv != nil {
			usage, ok = kv["usage_usec"]*1000, true
		}
		cur, err := readUint(filepath.Join(dir, "memory.current"))
		if err == nil {
			st := readKV(filepath.Join(dir, "memory.stat"))
			fillMemory(mem, cur, st["inactive_file"], st["anon"], st["pgfault"], st["pgmajfault"])
			if max, err := readUint(filepath.Join(dir, "memory.max")); err == nil && max > cur {
				mem.AvailableBytes = &runtimeapi.UInt64Value{Value: max - cur}
			}
		}
	} else {
		if v, err := readUint(filepath.Join(r.host.controllerDir("cpuacct", cgroupsPath), "cpuacct.usage")); err == nil {
			usage, ok = v, true
		}
		dir := r.host.controllerDir("memory", cgroupsPath)
		cur, err := readUint(filepath.Join(dir, "memory.usage_in_bytes"))
		if err == nil {
			st := readKV(filepath.Join(dir, "memory.stat"))
			fillMemory(mem, cur, st["total_inactive_file"], st["total_rss"], st["total_pgfault"], st["total_pgmajfault"])
			if lim, err := readUint(filepath.Join(dir, "memory.limit_in_bytes")); err == nil && lim < 1<<62 && lim > cur {
				mem.AvailableBytes = &runtimeapi.UInt64Value{Value: lim - cur}
			}
		}
	}
	if ok {
		cpu.UsageCoreNanoSeconds = &runtimeapi.UInt64Value{Value: usage}
		r.mu.Lock()
		prev, had := r.cpuSamples[key]
		r.cpuSamples[key] = cpuSample{at: now, usage: usage}
		r.mu.Unlock()
		if had && now.After(prev.at) && usage >= prev.usage {
			nc := float64(usage-prev.usage) / now.Sub(prev.at).Seconds()
			cpu.UsageNanoCores = &runtimeapi.UInt64Value{Value: uint64(nc)}
		}
	}
	return cpu, mem
}

// fillMemory: the working set is usage minus inactive file pages, as
// the kubelet's eviction manager counts it.
func fillMemory(m *runtimeapi.MemoryUsage, usage, inactiveFile, rss, faults, major uint64) {
	ws := uint64(0)
	if usage > inactiveFile {
		ws = usage - inactiveFile
	}
	m.UsageBytes = &runtimeapi.UInt64Value{Value: usage}
	m.WorkingSetBytes = &runtimeapi.UInt64Value{Value: ws}
	m.RssBytes = &runtimeapi.UInt64Value{Value: rss}
	m.PageFaults = &runtimeapi.UInt64Value{Value: faults}
	m.MajorPageFaults = &runtimeapi.UInt64Value{Value: major}
}

func readUint(path string) (uint64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return 1 << 63, nil
	}
	return strconv.ParseUint(s, 10, 64)
}

func readKV(path string) map[string]uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		if ok {
			n, _ := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			out[k] = n
		}
	}
	return out
}

// dirUsage sums the bytes and inodes under dir without crossing mounts.
func dirUsage(dir string) (bytes, inodes uint64) {
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		inodes++
		if info, err := d.Info(); err == nil && !d.IsDir() {
			bytes += uint64(info.Size())
		}
		return nil
	})
	return bytes, inodes
}

// upperDir finds the overlay upper directory of a mounted rootfs.
func upperDir(rootfs string) string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[4] != rootfs {
			continue
		}
		for _, o := range strings.Split(f[len(f)-1], ",") {
			if v, ok := strings.CutPrefix(o, "upperdir="); ok {
				return v
			}
		}
	}
	return ""
}

func (r *Runtime) containerStats(c *container) *runtimeapi.ContainerStats {
	c.mu.Lock()
	st := r.refresh(c)
	c.mu.Unlock()
	out := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{
		Id: st.ID, Metadata: st.config.GetMetadata(), Labels: st.config.GetLabels(), Annotations: st.config.GetAnnotations(),
	}}
	if st.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
		out.Cpu, out.Memory = r.cgroupStats(st.ID, st.CgroupsPath)
	}
	wl := &runtimeapi.FilesystemUsage{Timestamp: time.Now().UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: st.Rootfs}}
	if up := upperDir(st.Rootfs); up != "" {
		b, n := dirUsage(up)
		wl.UsedBytes, wl.InodesUsed = &runtimeapi.UInt64Value{Value: b}, &runtimeapi.UInt64Value{Value: n}
	}
	out.WritableLayer = wl
	return out
}

func (r *Runtime) ContainerStats(ctx context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	c, err := r.lookupContainer(req.GetContainerId())
	if err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.ContainerStatsResponse{Stats: r.containerStats(c)}, nil
}

func (r *Runtime) ListContainerStats(ctx context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	var cs []*container
	for _, c := range r.containers {
		st := c.st
		if f.GetId() != "" && !strings.HasPrefix(st.ID, f.GetId()) {
			continue
		}
		if f.GetPodSandboxId() != "" && !strings.HasPrefix(st.SandboxID, f.GetPodSandboxId()) {
			continue
		}
		if !labelsMatch(st.config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		cs = append(cs, c)
	}
	r.mu.Unlock()
	resp := &runtimeapi.ListContainerStatsResponse{}
	for _, c := range cs {
		resp.Stats = append(resp.Stats, r.containerStats(c))
	}
	return resp, nil
}

func (r *Runtime) podSandboxStats(s *sandbox) *runtimeapi.PodSandboxStats {
	r.mu.Lock()
	st := s.st
	r.mu.Unlock()
	out := &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{Id: st.ID, Metadata: st.config.GetMetadata(), Labels: st.config.GetLabels(), Annotations: st.config.GetAnnotations()},
		Linux:      &runtimeapi.LinuxPodSandboxStats{},
	}
	out.Linux.Cpu, out.Linux.Memory = r.cgroupStats("pod:"+st.ID, st.CgroupParent)
	for _, c := range r.sandboxContainers(st.ID) {
		out.Linux.Containers = append(out.Linux.Containers, r.containerStats(c))
	}
	return out
}

func (r *Runtime) PodSandboxStats(ctx context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	s, err := r.lookupSandbox(req.GetPodSandboxId())
	if err != nil {
		return nil, grpcError(err)
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: r.podSandboxStats(s)}, nil
}

func (r *Runtime) ListPodSandboxStats(ctx context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f := req.GetFilter()
	r.mu.Lock()
	var ss []*sandbox
	for _, s := range r.sandboxes {
		if f.GetId() != "" && !strings.HasPrefix(s.st.ID, f.GetId()) {
			continue
		}
		if !labelsMatch(s.st.config.GetLabels(), f.GetLabelSelector()) {
			continue
		}
		ss = append(ss, s)
	}
	r.mu.Unlock()
	resp := &runtimeapi.ListPodSandboxStatsResponse{}
	for _, s := range ss {
		resp.Stats = append(resp.Stats, r.podSandboxStats(s))
	}
	return resp, nil
}
