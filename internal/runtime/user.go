package runtime

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// openInRoot opens path inside rootfs, resolving symlinks as if rootfs
// were "/", so an image cannot point us at the host's files.
func openInRoot(rootfs, path string) (*os.File, error) {
	dir, err := unix.Open(rootfs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dir)
	fd, err := unix.Openat2(dir, strings.TrimPrefix(path, "/"), &unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS,
	})
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(fd), path), nil
}

type passwdEntry struct {
	name     string
	uid, gid uint32
}

type groupEntry struct {
	name    string
	gid     uint32
	members []string
}

// readColonFile parses /etc/passwd or /etc/group of a rootfs; a missing
// file is empty.
func readColonFile(rootfs, path string, fields int, fn func([]string)) error {
	f, err := openInRoot(rootfs, path)
	if err != nil {
		if os.IsNotExist(err) || err == unix.ENOENT {
			return nil
		}
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, 16<<20))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, ":")
		if len(parts) < fields {
			continue
		}
		fn(parts)
	}
	return sc.Err()
}

func readPasswd(rootfs string) ([]passwdEntry, error) {
	var out []passwdEntry
	err := readColonFile(rootfs, "/etc/passwd", 4, func(p []string) {
		uid, err1 := strconv.ParseUint(p[2], 10, 32)
		gid, err2 := strconv.ParseUint(p[3], 10, 32)
		if err1 == nil && err2 == nil {
			out = append(out, passwdEntry{name: p[0], uid: uint32(uid), gid: uint32(gid)})
		}
	})
	return out, err
}

func readGroup(rootfs string) ([]groupEntry, error) {
	var out []groupEntry
	err := readColonFile(rootfs, "/etc/group", 3, func(p []string) {
		gid, err := strconv.ParseUint(p[2], 10, 32)
		if err != nil {
			return
		}
		g := groupEntry{name: p[0], gid: uint32(gid)}
		if len(p) > 3 && p[3] != "" {
			g.members = strings.Split(p[3], ",")
		}
		out = append(out, g)
	})
	return out, err
}

// processUser is who the container's process runs as.
type processUser struct {
	uid, gid   uint32
	additional []uint32
}

// resolveUser applies Kubernetes' rules: RunAsUser/RunAsUsername from the
// security context win over the image's User; RunAsGroup over the
// user's primary group; the user's groups in /etc/group and the
// supplemental groups are added.
func resolveUser(rootfs string, sc *runtimeapi.LinuxContainerSecurityContext, imageUser string) (processUser, error) {
	var pu processUser
	// A group alone would pair with the image's user, which the pod's
	// author did not choose: refused, as containerd and CRI-O do.
	if sc.GetRunAsGroup() != nil && sc.GetRunAsUser() == nil && sc.GetRunAsUsername() == "" {
		return pu, fmt.Errorf("runAsGroup is set without runAsUser or runAsUsername: %w", errInvalid)
	}
	passwd, err := readPasswd(rootfs)
	if err != nil {
		return pu, err
	}
	groups, err := readGroup(rootfs)
	if err != nil {
		return pu, err
	}
	userSpec, groupSpec := "", ""
	switch {
	case sc.GetRunAsUser() != nil:
		userSpec = strconv.FormatInt(sc.GetRunAsUser().GetValue(), 10)
	case sc.GetRunAsUsername() != "":
		userSpec = sc.GetRunAsUsername()
	default:
		userSpec, groupSpec, _ = strings.Cut(imageUser, ":")
	}
	if userSpec == "" {
		userSpec = "0"
	}
	name := ""
	if n, err := strconv.ParseUint(userSpec, 10, 32); err == nil {
		pu.uid = uint32(n)
		for _, p := range passwd {
			if p.uid == pu.uid {
				pu.gid, name = p.gid, p.name
				break
			}
		}
	} else {
		found := false
		for _, p := range passwd {
			if p.name == userSpec {
				pu.uid, pu.gid, name, found = p.uid, p.gid, p.name, true
				break
			}
		}
		if !found {
			return pu, fmt.Errorf("user %q not found in the image's /etc/passwd: %w", userSpec, errInvalid)
		}
	}
	switch {
	case sc.GetRunAsGroup() != nil:
		pu.gid = uint32(sc.GetRunAsGroup().GetValue())
	case groupSpec != "":
		if n, err := strconv.ParseUint(groupSpec, 10, 32); err == nil {
			pu.gid = uint32(n)
		} else {
			found := false
			for _, g := range groups {
				if g.name == groupSpec {
					pu.gid, found = g.gid, true
					break
				}
			}
			if !found {
				return pu, fmt.Errorf("group %q not found in the image's /etc/group: %w", groupSpec, errInvalid)
			}
		}
	}
	seen := map[uint32]bool{pu.gid: true}
	add := func(g uint32) {
		if !seen[g] {
			seen[g] = true
			pu.additional = append(pu.additional, g)
		}
	}
	if name != "" && sc.GetSupplementalGroupsPolicy() != runtimeapi.SupplementalGroupsPolicy_Strict {
		for _, g := range groups {
			for _, m := range g.members {
				if m == name {
					add(g.gid)
				}
			}
		}
	}
	for _, g := range sc.GetSupplementalGroups() {
		add(uint32(g))
	}
	return pu, nil
}
