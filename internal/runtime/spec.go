package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/runtime/image"
)

// defaultCaps is Docker's default capability set, which Kubernetes
// containers start from.
var defaultCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// defaultMaskedPaths and defaultReadonlyPaths are what every runtime
// hides from unprivileged containers unless the kubelet says otherwise.
var defaultMaskedPaths = []string{
	"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
	"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
	"/sys/firmware", "/sys/devices/virtual/powercap",
}

var defaultReadonlyPaths = []string{
	"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
}

// specInput is everything a container's OCI config is made from.
type specInput struct {
	id          string
	cfg         *runtimeapi.ContainerConfig
	sb          *sandboxState
	img         image.RunConfig
	rootfs      string
	cgroupsPath string
	pidNS       string // a pid namespace to join ("" = new, "host" = the host's)
}

// processArgs merges the CRI command and args with the image's
// Entrypoint and Cmd as Kubernetes defines: command replaces the
// entrypoint (and drops the image's Cmd), args replace Cmd.
func processArgs(cmd, args []string, img image.RunConfig) []string {
	if len(cmd) == 0 {
		if len(args) == 0 {
			args = img.Cmd
		}
		if !(len(img.Entrypoint) == 1 && img.Entrypoint[0] == "") {
			cmd = img.Entrypoint
		}
	}
	return append(append([]string{}, cmd...), args...)
}

// mergeEnv lays the CRI envs over the image's; a CRI variable replaces
// the image's of the same name in place.
func mergeEnv(imageEnv []string, envs []*runtimeapi.KeyValue) []string {
	out := append([]string{}, imageEnv...)
	idx := map[string]int{}
	for i, e := range out {
		k, _, _ := strings.Cut(e, "=")
		idx[k] = i
	}
	for _, kv := range envs {
		e := kv.GetKey() + "=" + string(kv.GetValue())
		if i, ok := idx[kv.GetKey()]; ok {
			out[i] = e
		} else {
			idx[kv.GetKey()] = len(out)
			out = append(out, e)
		}
	}
	return out
}

func hasEnv(env []string, key string) bool {
	for _, e := range env {
		if strings.HasPrefix(e, key+"=") {
			return true
		}
	}
	return false
}

// capabilities computes the container's capability set: the default
// set plus adds minus drops ("ALL" works on either side), clipped to
// the host's bounding set. It returns what was clipped.
func (r *Runtime) capabilities(sc *runtimeapi.LinuxContainerSecurityContext) (caps, clipped []string) {
	set := map[string]bool{}
	if sc.GetPrivileged() {
		for c := range r.host.capBound {
			set[c] = true
		}
	} else {
		for _, c := range defaultCaps {
			set[c] = true
		}
		norm := func(c string) string {
			c = strings.ToUpper(c)
			if c != "ALL" && !strings.HasPrefix(c, "CAP_") {
				c = "CAP_" + c
			}
			return c
		}
		for _, c := range sc.GetCapabilities().GetAddCapabilities() {
			if c = norm(c); c == "ALL" {
				for _, n := range capNames {
					set[n] = true
				}
			} else {
				set[c] = true
			}
		}
		for _, c := range sc.GetCapabilities().GetDropCapabilities() {
			if c = norm(c); c == "ALL" {
				set = map[string]bool{}
			} else {
				delete(set, c)
			}
		}
	}
	for c := range set {
		if r.host.capBound[c] {
			caps = append(caps, c)
		} else {
			clipped = append(clipped, c)
		}
	}
	sort.Strings(caps)
	sort.Strings(clipped)
	return caps, clipped
}

// buildSpec renders the OCI runtime config of a container.
func (r *Runtime) buildSpec(in specInput) (*specs.Spec, error) {
	cfg := in.cfg
	sc := cfg.GetLinux().GetSecurityContext()
	args := processArgs(cfg.GetCommand(), cfg.GetArgs(), in.img)
	if len(args) == 0 {
		return nil, fmt.Errorf("no command: the container sets none and the image has no entrypoint or cmd: %w", errInvalid)
	}
	user, err := resolveUser(in.rootfs, sc, in.img.User)
	if err != nil {
		return nil, err
	}
	env := mergeEnv(in.img.Env, cfg.GetEnvs())
	if !hasEnv(env, "PATH") {
		env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, env...)
	}
	if !hasEnv(env, "HOSTNAME") {
		if h, err := os.ReadFile(filepath.Join(in.sb.Dir, "hostname")); err == nil {
			env = append(env, "HOSTNAME="+strings.TrimSpace(string(h)))
		}
	}
	if cfg.GetTty() && !hasEnv(env, "TERM") {
		env = append(env, "TERM=xterm")
	}
	cwd := cfg.GetWorkingDir()
	if cwd == "" {
		cwd = in.img.WorkingDir
	}
	if cwd == "" {
		cwd = "/"
	}
	caps, clipped := r.capabilities(sc)
	if len(clipped) > 0 {
		r.log.Warn("runtime: capabilities missing from the host's bounding set were dropped", "container", in.id, "dropped", clipped)
	}
	res := cfg.GetLinux().GetResources()
	oom := int(res.GetOomScoreAdj())
	if oom < r.host.oomMin {
		oom = r.host.oomMin
	}
	privileged := sc.GetPrivileged()
	s := &specs.Spec{
		Version: specs.Version,
		Root:    &specs.Root{Path: in.rootfs, Readonly: sc.GetReadonlyRootfs()},
		Process: &specs.Process{
			Terminal: cfg.GetTty(),
			User: specs.User{
				UID: user.uid, GID: user.gid, AdditionalGids: user.additional,
			},
			Args: args,
			Env:  env,
			Cwd:  cwd,
			Capabilities: &specs.LinuxCapabilities{
				Bounding: caps, Effective: caps, Permitted: caps,
			},
			NoNewPrivileges: sc.GetNoNewPrivs() && !privileged,
			OOMScoreAdj:     &oom,
		},
		Annotations: map[string]string{"io.kubernetes.cri.container-type": "container", "io.kubernetes.cri.sandbox-id": in.sb.ID},
		Linux: &specs.Linux{
			CgroupsPath: in.cgroupsPath,
			Sysctl:      in.sb.config.GetLinux().GetSysctls(),
			Resources:   r.linuxResources(res),
		},
	}
	if !privileged {
		s.Linux.MaskedPaths = defaultMaskedPaths
		if sc.GetMaskedPaths() != nil {
			s.Linux.MaskedPaths = sc.GetMaskedPaths()
		}
		ro := defaultReadonlyPaths
		if sc.GetReadonlyPaths() != nil {
			ro = sc.GetReadonlyPaths()
		}
		s.Linux.ReadonlyPaths = append([]string{"/sys"}, ro...)
	}
	if s.Linux.Seccomp, err = seccompFor(sc); err != nil {
		return nil, err
	}
	s.Linux.Namespaces = namespacesFor(in)
	mounts, propagation, err := mountsFor(in, privileged)
	if err != nil {
		return nil, err
	}
	s.Mounts = mounts
	s.Linux.RootfsPropagation = propagation
	if err := devicesFor(s, cfg.GetDevices(), privileged); err != nil {
		return nil, err
	}
	return s, nil
}

func namespacesFor(in specInput) []specs.LinuxNamespace {
	ns := []specs.LinuxNamespace{{Type: specs.MountNamespace}}
	switch in.pidNS {
	case "":
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace})
	case "host":
	default:
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace, Path: in.pidNS})
	}
	if in.sb.NetNS != "" {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: in.sb.NetNS})
	}
	if in.sb.IPCNS != "" {
		ns = append(ns, specs.LinuxNamespace{Type: specs.IPCNamespace, Path: in.sb.IPCNS})
	}
	if in.sb.UTSNS != "" {
		ns = append(ns, specs.LinuxNamespace{Type: specs.UTSNamespace, Path: in.sb.UTSNS})
	}
	return ns
}

// linuxResources maps CRI resources onto the OCI ones. Swap is limited
// to the memory limit (no swap) when the host can limit swap.
func (r *Runtime) linuxResources(res *runtimeapi.LinuxContainerResources) *specs.LinuxResources {
	out := &specs.LinuxResources{}
	if res == nil {
		return out
	}
	cpu := &specs.LinuxCPU{Cpus: res.GetCpusetCpus(), Mems: res.GetCpusetMems()}
	if v := res.GetCpuShares(); v > 0 {
		u := uint64(v)
		cpu.Shares = &u
	}
	if v := res.GetCpuQuota(); v != 0 {
		cpu.Quota = &v
	}
	if v := res.GetCpuPeriod(); v > 0 {
		u := uint64(v)
		cpu.Period = &u
	}
	out.CPU = cpu
	if v := res.GetMemoryLimitInBytes(); v > 0 {
		out.Memory = &specs.LinuxMemory{Limit: &v}
		if r.host.swapLimit {
			swap := v
			if s := res.GetMemorySwapLimitInBytes(); s > 0 {
				swap = s
			}
			out.Memory.Swap = &swap
		}
	}
	if r.host.cgroupV2 && len(res.GetUnified()) > 0 {
		out.Unified = res.GetUnified()
	}
	return out
}

// mountsFor lists the container's mounts: the standard filesystems, the
// sandbox's /etc files and /dev/shm, then the CRI mounts, which replace
// a standard mount of the same destination.
func mountsFor(in specInput, privileged bool) ([]specs.Mount, string, error) {
	// sysfs is mounted rw and made read-only per mount (readonlyPaths),
	// for all mounts of sysfs in one network namespace share one
	// superblock: a "ro" mount would make /sys read-only for the pod's
	// privileged containers too.
	sysOpts := []string{"nosuid", "noexec", "nodev", "rw"}
	std := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: sysOpts},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
	}
	shm := filepath.Join(in.sb.Dir, "shm")
	if in.sb.IPCNS == "" {
		shm = "/dev/shm"
	}
	std = append(std, specs.Mount{Destination: "/dev/shm", Type: "bind", Source: shm, Options: []string{"rbind", "nosuid", "nodev", "noexec"}})
	etcOpts := []string{"rbind", "rprivate"}
	if in.cfg.GetLinux().GetSecurityContext().GetReadonlyRootfs() {
		etcOpts = append(etcOpts, "ro")
	}
	for _, f := range []string{"hostname", "hosts", "resolv.conf"} {
		std = append(std, specs.Mount{Destination: "/etc/" + f, Type: "bind", Source: filepath.Join(in.sb.Dir, f), Options: etcOpts})
	}
	user := map[string]bool{}
	var extra []specs.Mount
	propagation := ""
	for _, m := range in.cfg.GetMounts() {
		dst := filepath.Clean(m.GetContainerPath())
		if !filepath.IsAbs(dst) {
			return nil, "", fmt.Errorf("mount destination %q is not absolute: %w", m.GetContainerPath(), errInvalid)
		}
		src := m.GetHostPath()
		if !filepath.IsAbs(src) {
			return nil, "", fmt.Errorf("mount %s: host path %q is not absolute: %w", dst, src, errInvalid)
		}
		if _, err := os.Stat(src); os.IsNotExist(err) {
			// As containerd: a missing host path becomes a directory.
			if err := os.MkdirAll(src, 0o755); err != nil {
				return nil, "", fmt.Errorf("mount %s: %w", dst, err)
			}
		}
		opts := []string{"rbind"}
		switch m.GetPropagation() {
		case runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL:
			opts = append(opts, "rshared")
			propagation = "rshared"
		case runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER:
			opts = append(opts, "rslave")
			if propagation == "" {
				propagation = "rslave"
			}
		default:
			opts = append(opts, "rprivate")
		}
		if m.GetReadonly() {
			opts = append(opts, "ro")
		} else {
			opts = append(opts, "rw")
		}
		user[dst] = true
		extra = append(extra, specs.Mount{Destination: dst, Type: "bind", Source: src, Options: opts})
	}
	var out []specs.Mount
	for _, m := range std {
		if !user[m.Destination] {
			out = append(out, m)
		}
	}
	return append(out, extra...), propagation, nil
}

// devicesFor adds the CRI devices, or every host device for privileged
// containers, to the spec and the devices cgroup.
func devicesFor(s *specs.Spec, devs []*runtimeapi.Device, privileged bool) error {
	deny := specs.LinuxDeviceCgroup{Allow: false, Access: "rwm"}
	s.Linux.Resources.Devices = []specs.LinuxDeviceCgroup{deny}
	if privileged {
		s.Linux.Resources.Devices = []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}
		hostDevs, err := hostDevices()
		if err != nil {
			return err
		}
		s.Linux.Devices = hostDevs
		return nil
	}
	for _, d := range devs {
		dev, err := deviceFromPath(d.GetHostPath(), d.GetContainerPath())
		if err != nil {
			return fmt.Errorf("device %s: %w", d.GetHostPath(), err)
		}
		perms := d.GetPermissions()
		if perms == "" {
			perms = "rwm"
		}
		s.Linux.Devices = append(s.Linux.Devices, dev)
		major, minor := dev.Major, dev.Minor
		s.Linux.Resources.Devices = append(s.Linux.Resources.Devices, specs.LinuxDeviceCgroup{
			Allow: true, Type: dev.Type, Major: &major, Minor: &minor, Access: perms,
		})
	}
	return nil
}

func deviceFromPath(host, ctr string) (specs.LinuxDevice, error) {
	var st unix.Stat_t
	if err := unix.Stat(host, &st); err != nil {
		return specs.LinuxDevice{}, err
	}
	t := ""
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFCHR:
		t = "c"
	case unix.S_IFBLK:
		t = "b"
	default:
		return specs.LinuxDevice{}, fmt.Errorf("not a device: %w", errInvalid)
	}
	mode := os.FileMode(st.Mode & 0o777)
	uid, gid := st.Uid, st.Gid
	return specs.LinuxDevice{
		Path: ctr, Type: t, Major: int64(unix.Major(uint64(st.Rdev))), Minor: int64(unix.Minor(uint64(st.Rdev))),
		FileMode: &mode, UID: &uid, GID: &gid,
	}, nil
}

// hostDevices lists /dev's device nodes for privileged containers,
// skipping the container's own pts and console.
func hostDevices() ([]specs.LinuxDevice, error) {
	var out []specs.LinuxDevice
	err := filepath.WalkDir("/dev", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			switch p {
			case "/dev/pts", "/dev/shm", "/dev/mqueue", "/dev/.lxc", "/dev/.udev":
				return filepath.SkipDir
			}
			return nil
		}
		if p == "/dev/console" || d.Type()&os.ModeDevice == 0 {
			return nil
		}
		dev, err := deviceFromPath(p, p)
		if err == nil {
			out = append(out, dev)
		}
		return nil
	})
	return out, err
}
