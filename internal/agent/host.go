package agent

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// The host facts a node agent needs, checked before anything starts so
// that a machine that cannot run containers is told so in one line that
// names what is missing, rather than failing later on the first pod.

// ErrHost is wrapped by every preflight failure.
var ErrHost = errors.New("this host cannot run a rudder node")

// CgroupMode is how the host mounts cgroups.
type CgroupMode string

const (
	// CgroupV1 covers the legacy layout and the hybrid one (v1
	// controllers plus an empty v2 hierarchy at /sys/fs/cgroup/unified):
	// runc places containers by the v1 controllers.
	CgroupV1 CgroupMode = "v1"
	// CgroupV2 is the unified hierarchy alone at /sys/fs/cgroup.
	CgroupV2 CgroupMode = "v2"
)

// Host is what preflight learned.
type Host struct {
	Cgroups CgroupMode
	// OwnCgroup is the agent process's cgroup path (of the memory
	// controller under v1), e.g. "/" or "/user.slice/session-1.scope";
	// pods go in a kubepods tree below it.
	OwnCgroup string
	// OCIRuntime is the path of runc (or crun), "" when not needed.
	OCIRuntime string
}

// KubepodsRoot is the default cgroup parent of every pod on this node:
// <own cgroup>/kubepods, so pods nest inside the agent's own subtree
// (Config.CgroupRoot moves it).
func (h Host) KubepodsRoot() string {
	return filepath.Join(h.OwnCgroup, "kubepods")
}

// preflight checks the host: root, the kernel features containers use,
// and the OCI runtime unless another CRI runtime is used.
func preflight(needOCI bool, ociRuntime string) (Host, error) {
	var h Host
	if os.Geteuid() != 0 {
		return h, fmt.Errorf("%w: the node agent must run as root (it creates namespaces, cgroups and mounts); run `rudder server --simulated-nodes N` for a cluster without root", ErrHost)
	}
	fs, err := os.ReadFile("/proc/filesystems")
	if err != nil {
		return h, fmt.Errorf("%w: reading /proc/filesystems: %w", ErrHost, err)
	}
	if !bytes.Contains(fs, []byte("\toverlay\n")) {
		return h, fmt.Errorf("%w: the kernel has no overlay filesystem (modprobe overlay)", ErrHost)
	}
	for _, ns := range []string{"net", "ipc", "uts", "pid", "mnt"} {
		if _, err := os.Stat("/proc/self/ns/" + ns); err != nil {
			return h, fmt.Errorf("%w: the kernel has no %s namespaces", ErrHost, ns)
		}
	}
	h.Cgroups, h.OwnCgroup, err = detectCgroups()
	if err != nil {
		return h, err
	}
	if needOCI {
		if ociRuntime == "" {
			ociRuntime = "runc"
		}
		p, err := exec.LookPath(ociRuntime)
		if err != nil {
			return h, fmt.Errorf("%w: OCI runtime %q not found (apt-get install runc)", ErrHost, ociRuntime)
		}
		h.OCIRuntime = p
	}
	return h, nil
}

// detectCgroups tells v2 (cgroup.controllers at the root of
// /sys/fs/cgroup) from v1/hybrid (a memory controller hierarchy), and
// reads the agent's own cgroup from /proc/self/cgroup.
func detectCgroups() (CgroupMode, string, error) {
	mode := CgroupV1
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		mode = CgroupV2
	} else if _, err := os.Stat("/sys/fs/cgroup/memory"); err != nil {
		return "", "", fmt.Errorf("%w: no cgroup hierarchy with a memory controller under /sys/fs/cgroup", ErrHost)
	}
	f, err := os.Open("/proc/self/cgroup")
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrHost, err)
	}
	defer f.Close()
	own := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// hierarchy-ID:controller-list:cgroup-path
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case mode == CgroupV2 && parts[0] == "0":
			own = parts[2]
		case mode == CgroupV1 && hasController(parts[1], "memory"):
			own = parts[2]
		}
	}
	if own == "" {
		return "", "", fmt.Errorf("%w: cannot find the agent's own cgroup in /proc/self/cgroup", ErrHost)
	}
	return mode, own, sc.Err()
}

func hasController(list, name string) bool {
	for c := range strings.SplitSeq(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}

// makeShared makes dir a mount point of its own with shared propagation
// (recursively), so that volume mounts made below it by the kubelet
// reach the containers' mount namespaces (bidirectional and
// host-to-container propagation need a shared source). A host whose /
// is private (this one) has no shared mount otherwise. It returns
// whether it mounted something the caller must unmount at stop.
func makeShared(dir string) (mounted bool, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return false, err
	}
	isMount, err := isMountPoint(dir)
	if err != nil {
		return false, err
	}
	if !isMount {
		if err := unix.Mount(dir, dir, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return false, fmt.Errorf("bind-mounting %s on itself: %w", dir, err)
		}
		mounted = true
	}
	if err := unix.Mount("", dir, "", unix.MS_SHARED|unix.MS_REC, ""); err != nil {
		if mounted {
			unix.Unmount(dir, unix.MNT_DETACH)
		}
		return false, fmt.Errorf("making %s a shared mount: %w", dir, err)
	}
	return mounted, nil
}

// isMountPoint reports whether dir is the mount point of an entry in
// /proc/self/mountinfo.
func isMountPoint(dir string) (bool, error) {
	abs, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false, err
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && unescapeMountPath(fields[4]) == abs {
			return true, nil
		}
	}
	return false, nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			ok := true
			for _, c := range s[i+1 : i+4] {
				if c < '0' || c > '7' {
					ok = false
					break
				}
				v = v*8 + byte(c-'0')
			}
			if ok {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
