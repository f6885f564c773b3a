package network

import (
	"fmt"
	"os"
	"runtime"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// nsfsMagic is the statfs type of a network namespace file (a bind mount
// of /proc/<pid>/ns/net or the file itself).
const nsfsMagic = 0x6e736673

// isNetNS reports whether path is a live namespace file.
func isNetNS(path string) bool {
	if path == "" {
		return false
	}
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return false
	}
	return st.Type == nsfsMagic
}

// openNS opens the namespace file path; "" is the process's own network
// namespace (as of the process, not of any thread that setns'd).
func openNS(path string) (netns.NsHandle, error) {
	if path == "" {
		h, err := netns.GetFromPath(fmt.Sprintf("/proc/%d/ns/net", os.Getpid()))
		if err != nil {
			return netns.None(), fmt.Errorf("network: open own netns: %w", err)
		}
		return h, nil
	}
	h, err := netns.GetFromPath(path)
	if err != nil {
		return netns.None(), fmt.Errorf("network: open netns %s: %w", path, err)
	}
	return h, nil
}

// handleAt returns a netlink handle whose sockets live in the namespace
// at path. The handle works from any thread: the socket was opened in
// that namespace once (netlink does that on a locked thread it restores).
func handleAt(path string) (*netlink.Handle, error) {
	ns, err := openNS(path)
	if err != nil {
		return nil, err
	}
	defer ns.Close()
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return nil, fmt.Errorf("network: netlink handle in %s: %w", nsName(path), err)
	}
	return h, nil
}

func nsName(path string) string {
	if path == "" {
		return "the process's netns"
	}
	return "netns " + path
}

// inNetNS runs fn on a fresh OS thread switched into the network
// namespace at path ("" runs fn in place). Whatever fn creates there —
// sockets, child processes — belongs to that namespace. The thread is
// switched back afterwards; if that fails it is left locked, so the Go
// runtime destroys it rather than reuse a thread in the wrong namespace.
// fn must not start goroutines that expect to run in the namespace.
func inNetNS(path string, fn func() error) error {
	if path == "" {
		return fn()
	}
	target, err := openNS(path)
	if err != nil {
		return err
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("network: current netns: %w", err)
			return
		}
		defer orig.Close()
		if err := netns.Set(target); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("network: enter %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := netns.Set(orig); err != nil {
			// Stay locked: the thread dies with this goroutine.
			errc <- fmt.Errorf("network: leave %s: %w (after: %v)", path, err, ferr)
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// writeSysctl writes a /proc/sys value in the namespace at path: the
// net.* tree shows the namespace of the thread that opens it.
func writeSysctl(nsPath, key, value string) error {
	return inNetNS(nsPath, func() error {
		if err := os.WriteFile("/proc/sys/"+key, []byte(value), 0o644); err != nil {
			return fmt.Errorf("network: sysctl %s=%s: %w", key, value, err)
		}
		return nil
	})
}
