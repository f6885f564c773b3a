package kubelet

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// Pod cgroups. The kubelet names each pod's cgroup (podCgroupParent) and
// the OCI runtime creates it with the pod's first container; as upstream's
// kubelet, this one removes it once the pod's last sandbox is gone, in
// every cgroup hierarchy the host mounts (v1 controllers, the hybrid
// layout's unified tree, or v2 alone), so a pod leaves nothing behind
// whichever CRI runtime ran it. Only empty cgroups can be removed: one
// still holding processes refuses, and is left for the next cleanup.

// removePodCgroups removes the cgroup of the pod uid under root, whatever
// its QoS class was, deepest directory first.
func removePodCgroups(root, uid string) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	for _, qos := range []string{"", "burstable", "besteffort"} {
		rel := path.Join(root, "kubepods", qos, "pod"+uid)
		for _, m := range mounts {
			errs = append(errs, rmdirTree(m.dir(rel)))
		}
	}
	return errors.Join(errs...)
}

// cgroupMount is one mounted cgroup hierarchy: where it is mounted and
// which of its cgroups is at that mount point.
type cgroupMount struct {
	point, root string
	v2          bool   // cgroup2
	opts        string // super options: the v1 controllers
}

// dir is the directory of the absolute cgroup path p in this mount, ""
// when the mount does not show it.
func (m cgroupMount) dir(p string) string {
	rel, ok := strings.CutPrefix(p, m.root)
	if !ok {
		return ""
	}
	return filepath.Join(m.point, rel)
}

// cgroupMounts reads the cgroup and cgroup2 mounts of /proc/self/mountinfo.
func cgroupMounts() ([]cgroupMount, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []cgroupMount
	for line := range strings.SplitSeq(string(data), "\n") {
		// id parent major:minor root mount-point options ... - fstype source super-options
		pre, post, ok := strings.Cut(line, " - ")
		if !ok {
			continue
		}
		f, p := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(p) < 1 || (p[0] != "cgroup" && p[0] != "cgroup2") {
			continue
		}
		m := cgroupMount{point: f[4], root: f[3], v2: p[0] == "cgroup2"}
		if len(p) > 2 {
			m.opts = p[2]
		}
		out = append(out, m)
	}
	return out, nil
}

// rmdirTree removes dir and the cgroups below it, deepest first; a dir
// that does not exist is not an error.
func rmdirTree(dir string) error {
	if dir == "" {
		return nil
	}
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	var errs []error
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := unix.Rmdir(dirs[i]); err != nil && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, &os.PathError{Op: "rmdir", Path: dirs[i], Err: err})
		}
	}
	return errors.Join(errs...)
}
