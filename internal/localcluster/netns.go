package localcluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"
)

// NetNS is a network namespace this process holds by a file descriptor.
// Nothing else names it — no bind mount under /run/netns — so the kernel
// frees it, with every link in it, once the descriptor is closed and the
// last process and socket in it are gone: a crash of this process cannot
// leave a namespace behind that nothing uses.
//
// A network namespace is a property of an OS thread, not of a goroutine
// or a process. Everything here that must happen inside a namespace runs
// on a thread of its own (onThread): the goroutine locks its thread,
// enters the namespace and exits without unlocking, which makes the Go
// runtime end the thread, so no other goroutine ever runs in a namespace
// it did not ask for. What such a thread creates keeps its namespace
// after the thread is gone: a socket stays in the namespace it was
// created in, and a child process forked there starts there.
type NetNS struct {
	f *os.File
}

// onThread runs fn on an OS thread that is thrown away afterwards.
func onThread(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		// Never unlocked: the goroutine's exit ends the thread.
		runtime.LockOSThread()
		errc <- fn()
	}()
	return <-errc
}

// NewNetNS creates an empty network namespace with its loopback up.
func NewNetNS() (*NetNS, error) {
	var ns *NetNS
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
		ns = &NetNS{f: f}
		return nil
	})
	return ns, err
}

// enter moves the calling thread into n. The caller has locked the
// thread and never unlocks it.
func (n *NetNS) enter() error {
	if err := unix.Setns(int(n.f.Fd()), unix.CLONE_NEWNET); err != nil {
		return fmt.Errorf("entering network namespace: %w", err)
	}
	return nil
}

// Do runs fn on a thread inside n.
func (n *NetNS) Do(fn func() error) error {
	return onThread(func() error {
		if err := n.enter(); err != nil {
			return err
		}
		return fn()
	})
}

// Listen opens a listener inside n; it serves connections made to n's
// addresses whatever thread later accepts them.
func (n *NetNS) Listen(network, addr string) (net.Listener, error) {
	var ln net.Listener
	err := n.Do(func() error {
		var err error
		ln, err = net.Listen(network, addr)
		return err
	})
	return ln, err
}

// DialContext dials from inside n. The dial runs whole on the locked
// thread (a literal IP address needs no resolver, and the dial of one
// address creates its socket on the calling goroutine's thread).
func (n *NetNS) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
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
func (n *NetNS) Inode() (uint64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(n.f.Fd()), &st); err != nil {
		return 0, err
	}
	return st.Ino, nil
}

// Close drops this process's hold on the namespace.
func (n *NetNS) Close() error { return n.f.Close() }
