package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// What a cluster leaves on the host while it runs, and how it goes:
//
//   - processes (node agents, container monitors, containers) — all in
//     the cluster's cgroup subtree; killed through it;
//   - mounts (each node directory's shared bind mount, overlay root
//     filesystems, volumes, the sandboxes' namespace files) — all under
//     <data-dir>/nodes or a node's run directory; unmounted, deepest
//     first;
//   - cgroups — the subtree <own>/rudder-<id>; removed, deepest first;
//   - run directories — /run/rudder/<hash> per node; removed once no
//     mount is left below them;
//   - network namespaces, veths, the bridge — held only by this
//     process's descriptors and by the processes in them; the kernel
//     frees them when those are gone.
//
// The state file (<data-dir>/nodes/state.json) records the cgroup and
// run directories before any is made, so a later start on the same
// data directory finds what a crashed one left (sweep), whatever cgroup
// the new process runs in.

// state is what a sweep needs to find a cluster's leftovers.
type state struct {
	Cgroup  string   `json:"cgroup"`
	RunDirs []string `json:"runDirs"`
}

const stateFile = "state.json"

func readState(nodesDir string) (state, error) {
	var st state
	data, err := os.ReadFile(filepath.Join(nodesDir, stateFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return st, fmt.Errorf("%s: %w", stateFile, err)
	}
	return st, nil
}

func writeState(nodesDir string, st state) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	tmp := filepath.Join(nodesDir, stateFile+".tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(nodesDir, stateFile))
}

// sweep removes what st names and every mount under nodesDir: processes
// first (they hold mounts and namespaces), then mounts, cgroups and run
// directories. It goes on past a failure and returns them all.
func sweep(cg cgroupHost, nodesDir string, st state) error {
	var errs []error
	if validCgroup(st.Cgroup) {
		if err := cg.killAll(st.Cgroup, 15*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	prefixes := append([]string{nodesDir}, st.RunDirs...)
	if err := unmountUnder(prefixes); err != nil {
		errs = append(errs, err)
	}
	if validCgroup(st.Cgroup) {
		if err := cg.remove(st.Cgroup, 5*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range st.RunDirs {
		if err := removeRunDir(d); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// validCgroup guards the kill and the removal: only a cluster's own
// subtree, never a hierarchy's root.
func validCgroup(path string) bool {
	return strings.HasPrefix(filepath.Base(path), "rudder-") && strings.Trim(path, "/") != ""
}

// unmountUnder unmounts every mount at or below one of the prefixes,
// deepest first, detached (a mount still busy goes once unused).
func unmountUnder(prefixes []string) error {
	var errs []error
	// A detached parent can hide children from a first pass; a second
	// pass catches what the first one uncovered.
	for range 3 {
		mounts, err := mountsUnder(prefixes)
		if err != nil {
			return err
		}
		if len(mounts) == 0 {
			return nil
		}
		errs = errs[:0]
		for _, m := range mounts {
			if err := unix.Unmount(m, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", m, err))
			}
		}
	}
	if mounts, err := mountsUnder(prefixes); err == nil && len(mounts) > 0 {
		errs = append(errs, fmt.Errorf("still mounted: %s", strings.Join(mounts, ", ")))
	}
	return errors.Join(errs...)
}

// mountsUnder lists this namespace's mount points at or below the
// prefixes, deepest first.
func mountsUnder(prefixes []string) ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		for _, p := range prefixes {
			if p != "" && p != "/" && (mp == p || strings.HasPrefix(mp, p+"/")) {
				out = append(out, mp)
				break
			}
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return strings.Count(b, "/") - strings.Count(a, "/") })
	return slices.Compact(out), nil
}

// removeRunDir removes a node's run directory, unless a mount is left
// below it: removing through a mount would delete what it shows.
func removeRunDir(dir string) error {
	if mounts, err := mountsUnder([]string{dir}); err != nil || len(mounts) > 0 {
		return fmt.Errorf("run directory %s kept: mounts left below it (%v)", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing %s: %w", dir, err)
	}
	slog.Debug("removed run directory", "dir", dir)
	return nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) && isOctal(s[i+1]) && isOctal(s[i+2]) && isOctal(s[i+3]) {
			b.WriteByte((s[i+1]-'0')<<6 | (s[i+2]-'0')<<3 | (s[i+3] - '0'))
			i += 3
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isOctal(c byte) bool { return c >= '0' && c <= '7' }
