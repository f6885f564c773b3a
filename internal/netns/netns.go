package netns

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NS is a network namespace this process holds.
type NS struct {
	f   *os.File
	pin string // the bind mount that also holds it, if any
}

// onThread runs fn on a locked OS thread and puts the thread back in
// the namespace it started in before unlocking it. (A thread that was
// simply left to die would not do: the goroutine may be running on the
// process's main thread, which the Go runtime never ends, and whose
// namespace /proc/<pid>/ns/net shows.) If the way back fails the thread
// stays locked and the runtime retires it with the goroutine.
func onThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("opening this thread's network namespace: %w", err)
			return
		}
		defer orig.Close()
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("returning to the original network namespace: %w", err))
			return // still locked: the thread goes with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// New creates an empty network namespace with its loopback up.
func New() (*NS, error) {
	var ns *NS
	err := onThread(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("creating a network namespace: %w", err)
		}
		f, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			return fmt.Errorf("opening the new network namespace: %w", err)
		}
		if err := loopbackUp(); err != nil {
			f.Close()
			return err
		}
		ns = &NS{f: f}
		return nil
	})
	return ns, err
}

// Pinned creates a namespace as New does and also bind-mounts it on
// dir/name, which Close unmounts and removes.
func Pinned(dir, name string) (*NS, error) {
	ns, err := New()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, name)
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
	if err != nil {
		ns.Close()
		return nil, fmt.Errorf("netns pin file: %w", err)
	}
	f.Close()
	if err := unix.Mount(ns.fdPath(), path, "", unix.MS_BIND, ""); err != nil {
		os.Remove(path)
		ns.Close()
		return nil, fmt.Errorf("pinning network namespace at %s: %w", path, err)
	}
	ns.pin = path
	return ns, nil
}

func loopbackUp() error {
	h, err := netlink.NewHandle()
	if err != nil {
		return err
	}
	defer h.Close()
	lo, err := h.LinkByName("lo")
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	if err := h.LinkSetUp(lo); err != nil {
		return fmt.Errorf("bringing lo up: %w", err)
	}
	return nil
}

func (n *NS) fdPath() string { return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), n.f.Fd()) }

// Path names the namespace for code that opens it by path (netlink,
// nftables, runtime.Network): the pin when there is one, else this
// process's descriptor, which only this process can open.
func (n *NS) Path() string {
	if n.pin != "" {
		return n.pin
	}
	return n.fdPath()
}

// Fd is the descriptor holding the namespace (for setns, or an nftables
// connection bound to it); it stays valid until Close.
func (n *NS) Fd() int { return int(n.f.Fd()) }

// Do runs fn on a thread inside n. A process forked by fn starts in n.
func (n *NS) Do(fn func() error) error {
	return onThread(func() error {
		if err := unix.Setns(int(n.f.Fd()), unix.CLONE_NEWNET); err != nil {
			return fmt.Errorf("entering network namespace: %w", err)
		}
		return fn()
	})
}

// Listen opens a listener inside n; it serves connections made to n's
// addresses whatever thread later accepts them.
func (n *NS) Listen(network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := n.Do(func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// ListenPacket opens a packet socket (UDP) inside n.
func (n *NS) ListenPacket(network, addr string) (net.PacketConn, error) {
	var pc net.PacketConn
	err := n.Do(func() error {
		var err error
		pc, err = net.ListenPacket(network, addr)
		return err
	})
	return pc, err
}

// DialContext dials from inside n. The dial runs whole on the locked
// thread (a literal IP address needs no resolver, and the dial of one
// address creates its socket on the calling goroutine's thread).
func (n *NS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	var conn net.Conn
	err := n.Do(func() error {
		var err error
		var d net.Dialer
		conn, err = d.DialContext(ctx, network, addr)
		return err
	})
	return conn, err
}

// Inode identifies the namespace, as /proc/<pid>/ns/net shows it
// ("net:[<inode>]").
func (n *NS) Inode() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(n.f.Fd()), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// Close drops this process's hold on the namespace (and its pin); the
// kernel frees it once no process or socket is left in it.
func (n *NS) Close() error {
	var errs []error
	if n.pin != "" {
		errs = append(errs, unix.Unmount(n.pin, unix.MNT_DETACH), os.Remove(n.pin))
	}
	errs = append(errs, n.f.Close())
	return errors.Join(errs...)
}

// Enter moves the calling thread into n, for a caller that keeps its
// goroutine on that thread for as long as it needs the namespace (a
// supervisor whose children must be forked there, and die with the
// thread that forked them): it must have called runtime.LockOSThread and
// never unlock, so that the thread goes with the goroutine.
func (n *NS) Enter() error {
	if err := unix.Setns(int(n.f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("entering network namespace: %w", err)
	}
	return nil
}
