package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupHost is the host's cgroup layout: under v1 (or hybrid) one
// mount per hierarchy, under v2 the unified one. A cgroup
// path ("/a/b") exists once per hierarchy; a cluster's tree is made,
// filled and removed in all of them, as runc places containers.
type cgroupHost struct {
	v2     bool
	mounts []string // hierarchy mount points
}

// detectCgroups reads the cgroup mounts from /proc/self/mountinfo: every
// hierarchy, named ones (name=systemd) and the hybrid layout's empty v2
// one included, because runc places each container in all of them and
// a cluster's tree must be found and removed in each.
func detectCgroups() (cgroupHost, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return cgroupHost{}, err
	}
	var h cgroupHost
	v1 := false
	for line := range strings.SplitSeq(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		fields, after := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(after) < 1 {
			continue
		}
		switch after[0] {
		case "cgroup":
			v1 = true
			h.mounts = append(h.mounts, unescapeMountPath(fields[4]))
		case "cgroup2":
			h.mounts = append(h.mounts, unescapeMountPath(fields[4]))
		}
	}
	if len(h.mounts) == 0 {
		return h, errors.New("no cgroup hierarchy is mounted")
	}
	h.v2 = !v1
	slices.Sort(h.mounts)
	h.mounts = slices.Compact(h.mounts)
	return h, nil
}

// ownCgroup is this process's cgroup: the memory controller's under v1
// (as the agent and runc place pods), the unified one under v2.
func (h cgroupHost) ownCgroup() (string, error) {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if h.v2 && parts[0] == "0" || !h.v2 && slices.Contains(strings.Split(parts[1], ","), "memory") {
			return parts[2], nil
		}
	}
	return "", errors.New("cannot find this process's cgroup in /proc/self/cgroup")
}

// create makes path in every hierarchy. A v1 cpuset cgroup takes no
// process until it has CPUs and memory nodes: each new level copies its
// parent's.
func (h cgroupHost) create(path string) error {
	for _, m := range h.mounts {
		if err := os.MkdirAll(filepath.Join(m, path), 0o755); err != nil {
			return fmt.Errorf("cgroup %s: %w", path, err)
		}
		if h.v2 {
			continue
		}
		if _, err := os.Stat(filepath.Join(m, "cpuset.cpus")); err != nil {
			continue
		}
		dir := m
		for part := range strings.SplitSeq(strings.Trim(path, "/"), "/") {
			parent := dir
			dir = filepath.Join(dir, part)
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if err := copyIfEmpty(filepath.Join(dir, f), filepath.Join(parent, f)); err != nil {
					return fmt.Errorf("cgroup %s: %w", path, err)
				}
			}
		}
	}
	return nil
}

func copyIfEmpty(dst, src string) error {
	cur, err := os.ReadFile(dst)
	if err != nil {
		return err
	}
	if strings.TrimSpace(string(cur)) != "" {
		return nil
	}
	val, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, val, 0o644)
}

// addProc moves pid (its whole thread group) into path in every
// hierarchy.
func (h cgroupHost) addProc(path string, pid int) error {
	for _, m := range h.mounts {
		if err := os.WriteFile(filepath.Join(m, path, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0o644); err != nil {
			return fmt.Errorf("moving pid %d into cgroup %s: %w", pid, filepath.Join(m, path), err)
		}
	}
	return nil
}

// dirs lists path and every cgroup below it in every hierarchy, deepest
// first; a missing path lists nothing.
func (h cgroupHost) dirs(path string) []string {
	if strings.Trim(path, "/") == "" {
		return nil // never a whole hierarchy
	}
	var out []string
	for _, m := range h.mounts {
		filepath.WalkDir(filepath.Join(m, path), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				out = append(out, p)
			}
			return nil
		})
	}
	slices.SortFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return out
}

// procs lists the processes anywhere in path's subtree.
func (h cgroupHost) procs(path string) []int {
	seen := map[int]bool{}
	var out []int
	for _, d := range h.dirs(path) {
		f, err := os.Open(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if pid, err := strconv.Atoi(strings.TrimSpace(sc.Text())); err == nil && !seen[pid] {
				seen[pid] = true
				out = append(out, pid)
			}
		}
		f.Close()
	}
	return out
}

// killAll kills every process in path's subtree and waits until none is
// left. Each is signalled through a pidfd opened while it is seen in the
// subtree, so a PID reused by an unrelated process is never signalled.
// Frozen cgroups are thawed first (a frozen process does not die).
func (h cgroupHost) killAll(path string, timeout time.Duration) error {
	for _, d := range h.dirs(path) {
		os.WriteFile(filepath.Join(d, "freezer.state"), []byte("THAWED"), 0o644)
		os.WriteFile(filepath.Join(d, "cgroup.freeze"), []byte("0"), 0o644)
	}
	deadline := time.Now().Add(timeout)
	for {
		pids := h.procs(path)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup %s: processes %v still alive after %v", path, pids, timeout)
		}
		for _, pid := range pids {
			killIfIn(pid, path)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// killIfIn sends SIGKILL to pid if, once pinned by a pidfd, it is still
// in a cgroup at or below path.
func killIfIn(pid int, path string) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return
	}
	if !inCgroup(string(data), path) {
		return
	}
	unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
}

// inCgroup reports whether a /proc/<pid>/cgroup text places the process
// at or below path in some hierarchy.
func inCgroup(procCgroup, path string) bool {
	for line := range strings.SplitSeq(procCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[2] == path || strings.HasPrefix(parts[2], path+"/")) {
			return true
		}
	}
	return false
}

// remove deletes path and everything below it, deepest first. A cgroup
// whose last process has just died may refuse for a moment (EBUSY).
func (h cgroupHost) remove(path string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var left []string
		for _, d := range h.dirs(path) {
			if err := unix.Rmdir(d); err != nil && !errors.Is(err, unix.ENOENT) {
				left = append(left, d)
			}
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroups not removed: %s", strings.Join(left, ", "))
		}
		time.Sleep(20 * time.Millisecond)
	}
}
