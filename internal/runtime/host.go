package runtime

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// hostInfo is what the runtime learns about the machine once, at New:
// the kernel's limits that clip what containers may ask for.
type hostInfo struct {
	// capBound is the capability bounding set, as names ("CAP_CHOWN").
	capBound map[string]bool
	// oomMin is the lowest oom_score_adj this process may give.
	oomMin int
	// cgroupV2 is true on a pure cgroup v2 host.
	cgroupV2 bool
	// hierarchies are the mounted cgroup hierarchies.
	hierarchies []hierarchy
	// swapLimit is whether the memory controller limits swap.
	swapLimit bool
}

// hierarchy is one cgroup mount: v1 for some controllers, or v2.
type hierarchy struct {
	mount       string
	controllers []string // v1 super options ("cpu", "name=systemd"); nil for v2
	v2          bool
	own         string // this process's cgroup in it
}

func probeHost() (hostInfo, error) {
	var h hostInfo
	bnd, err := readCapBound()
	if err != nil {
		return h, err
	}
	h.capBound = bnd
	b, err := os.ReadFile("/proc/self/oom_score_adj")
	if err != nil {
		return h, fmt.Errorf("oom_score_adj: %w", err)
	}
	h.oomMin, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	var st unix.Statfs_t
	if err := unix.Statfs("/sys/fs/cgroup", &st); err == nil && st.Type == unix.CGROUP2_SUPER_MAGIC {
		h.cgroupV2 = true
	}
	h.hierarchies, err = cgroupHierarchies()
	if err != nil {
		return h, err
	}
	if h.cgroupV2 {
		_, err = os.Stat("/sys/fs/cgroup/memory.swap.max")
		h.swapLimit = err == nil
		if !h.swapLimit {
			// The root has no memory.swap.max; any child tells.
			ents, _ := filepath.Glob("/sys/fs/cgroup/*/memory.swap.max")
			h.swapLimit = len(ents) > 0
		}
	} else {
		_, err = os.Stat("/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes")
		h.swapLimit = err == nil
	}
	return h, nil
}

func readCapBound() (map[string]bool, error) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), "CapBnd:")
		if !ok {
			continue
		}
		mask, err := strconv.ParseUint(strings.TrimSpace(v), 16, 64)
		if err != nil {
			return nil, fmt.Errorf("CapBnd: %w", err)
		}
		out := map[string]bool{}
		for i, name := range capNames {
			if mask&(1<<uint(i)) != 0 {
				out[name] = true
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("no CapBnd in /proc/self/status")
}

// cgroupHierarchies pairs /proc/self/mountinfo's cgroup mounts with
// /proc/self/cgroup's membership.
func cgroupHierarchies() ([]hierarchy, error) {
	own := map[string]string{} // controller list -> path
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 {
			own[parts[1]] = parts[2]
		}
	}
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var hs []hierarchy
	for _, line := range strings.Split(string(mi), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f := strings.Fields(pre)
		p := strings.Fields(post)
		if len(f) < 5 || len(p) < 3 {
			continue
		}
		switch p[0] {
		case "cgroup2":
			hs = append(hs, hierarchy{mount: f[4], v2: true, own: own[""]})
		case "cgroup":
			var ctrls []string
			for _, o := range strings.Split(p[2], ",") {
				switch o {
				case "rw", "ro", "relatime", "noatime", "nosuid", "nodev", "noexec", "clone_children", "xattr":
					continue
				}
				if strings.HasPrefix(o, "release_agent=") {
					continue
				}
				ctrls = append(ctrls, o)
			}
			hs = append(hs, hierarchy{mount: f[4], controllers: ctrls, own: own[strings.Join(ctrls, ",")]})
		}
	}
	return hs, nil
}

// has reports whether the v1 hierarchy carries controller c.
func (h hierarchy) has(c string) bool {
	for _, x := range h.controllers {
		if x == c {
			return true
		}
	}
	return false
}

// dir resolves cgroupsPath as runc's cgroupfs driver does: absolute
// paths from the hierarchy's root; relative ones from this process's
// own cgroup in v1 and from its parent in v2.
func (h hierarchy) dir(cgroupsPath string) string {
	if filepath.IsAbs(cgroupsPath) {
		return filepath.Join(h.mount, cgroupsPath)
	}
	base := h.own
	if h.v2 {
		base = filepath.Dir(base)
	}
	return filepath.Join(h.mount, base, cgroupsPath)
}

// controllerDir is the directory of cgroupsPath for a controller
// ("memory", "cpuacct", "pids"); "" when not mounted.
func (hi *hostInfo) controllerDir(controller, cgroupsPath string) string {
	for _, h := range hi.hierarchies {
		if hi.cgroupV2 && h.v2 {
			return h.dir(cgroupsPath)
		}
		if !hi.cgroupV2 && h.has(controller) {
			return h.dir(cgroupsPath)
		}
	}
	return ""
}

// removeCgroupTree removes cgroupsPath and everything under it in every
// hierarchy, deepest first. Cgroup directories with tasks refuse.
func (hi *hostInfo) removeCgroupTree(cgroupsPath string) error {
	var firstErr error
	for _, h := range hi.hierarchies {
		root := h.dir(cgroupsPath)
		var dirs []string
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := unix.Rmdir(dirs[i]); err != nil && err != unix.ENOENT && firstErr == nil {
				firstErr = fmt.Errorf("remove cgroup %s: %w", dirs[i], err)
			}
		}
	}
	return firstErr
}

// capNames indexes capability names by number.
var capNames = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
	"CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK",
	"CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE",
	"CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_RESOURCE",
	"CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE", "CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN", "CAP_SYSLOG",
	"CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
}
