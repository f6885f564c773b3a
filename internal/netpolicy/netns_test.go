package netpolicy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// netNS is a network namespace kept alive by a bind mount of its nsfs
// file, for benchmarks and tests that run a whole node's rules apart
// from the host. It has only a loopback device, down.
type netNS struct {
	Path string
}

// newNetNS creates a namespace pinned at dir/name. The calling thread
// is locked while it unshares and is put back in its own namespace
// before it is unlocked; if that fails the thread is left locked, so
// the runtime retires it instead of reusing it.
func newNetNS(dir, name string) (*netNS, error) {
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		return nil, fmt.Errorf("netns pin file: %w", err)
	}
	f.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(orig)
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("unshare: %w", err)
			return
		}
		err = unix.Mount("/proc/thread-self/ns/net", path, "", unix.MS_BIND, "")
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(err, fmt.Errorf("returning to the original namespace: %w", err))
			return // thread stays locked: it dies with this goroutine
		}
		runtime.UnlockOSThread()
		errc <- err
	}()
	if err := <-errc; err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("creating network namespace: %w", err)
	}
	return &netNS{Path: path}, nil
}

// Do runs fn on a locked thread inside the namespace.
func (n *netNS) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer unix.Close(orig)
		fd, err := unix.Open(n.Path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		err = unix.Setns(fd, unix.CLONE_NEWNET)
		unix.Close(fd)
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		ferr := fn()
		if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, err)
			return // thread stays locked and is retired
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// Close unpins the namespace; it goes away once nothing uses it.
func (n *netNS) Close() error {
	err := unix.Unmount(n.Path, unix.MNT_DETACH)
	if rerr := os.Remove(n.Path); err == nil {
		err = rerr
	}
	return err
}
