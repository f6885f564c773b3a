package runtime

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// nsFiles are the namespaces a sandbox holds, by the name of their file
// under /proc/thread-self/ns.
type nsRequest struct {
	net, ipc, uts bool
	hostname      string
}

// createNamespaces creates the requested namespaces and pins each with
// a bind mount of /proc/thread-self/ns/<kind> onto dir/<kind>, so they
// outlive every process (there is no pause process). It runs on a
// locked OS thread that unshares and is never unlocked: when the
// goroutine returns, the Go runtime kills the thread instead of handing
// its namespaces to other goroutines. It returns the files made.
func createNamespaces(dir string, req nsRequest) (map[string]string, error) {
	type result struct {
		files map[string]string
		err   error
	}
	wait := make(chan struct{})
	done := make(chan result, 1)
	var run func()
	run = func() {
		runtime.LockOSThread() // never unlocked after unshare: the thread dies with the goroutine
		if unix.Gettid() == unix.Getpid() {
			// The main thread is parked, not killed, when its locked
			// goroutine exits: it would keep the namespaces alive (and
			// /proc/self would show them). Hold it while another
			// goroutine, on another thread, does the work.
			go run()
			<-wait
			runtime.UnlockOSThread()
			return
		}
		files, err := unshareAndPin(dir, req)
		done <- result{files, err}
		close(wait)
	}
	go run()
	res := <-done
	if res.err != nil {
		for _, f := range res.files {
			releaseNamespace(f)
		}
		return nil, res.err
	}
	return res.files, nil
}

func unshareAndPin(dir string, req nsRequest) (map[string]string, error) {
	files := map[string]string{}
	flags := 0
	var kinds []string
	if req.net {
		flags |= unix.CLONE_NEWNET
		kinds = append(kinds, "net")
	}
	if req.ipc {
		flags |= unix.CLONE_NEWIPC
		kinds = append(kinds, "ipc")
	}
	if req.uts {
		flags |= unix.CLONE_NEWUTS
		kinds = append(kinds, "uts")
	}
	if flags == 0 {
		return files, nil
	}
	if err := unix.Unshare(flags); err != nil {
		return files, fmt.Errorf("unshare: %w", err)
	}
	if req.uts && req.hostname != "" {
		if err := unix.Sethostname([]byte(req.hostname)); err != nil {
			return files, fmt.Errorf("sethostname %q: %w", req.hostname, err)
		}
	}
	if req.net {
		// A netlink socket opened on this thread lives in the new netns.
		lo, err := netlink.LinkByName("lo")
		if err == nil {
			err = netlink.LinkSetUp(lo)
		}
		if err != nil {
			return files, fmt.Errorf("loopback up: %w", err)
		}
	}
	for _, k := range kinds {
		target := filepath.Join(dir, k)
		f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_RDONLY, 0o444)
		if err != nil {
			return files, fmt.Errorf("namespace file: %w", err)
		}
		f.Close()
		files[k] = target
		if err := unix.Mount("/proc/thread-self/ns/"+k, target, "", unix.MS_BIND, ""); err != nil {
			return files, fmt.Errorf("pin %s namespace: %w", k, err)
		}
	}
	return files, nil
}

// releaseNamespace unmounts and removes a namespace file; the namespace
// dies with its last user. Missing files are not an error.
func releaseNamespace(path string) error {
	if path == "" {
		return nil
	}
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// inNetNS runs fn on a thread inside the network namespace at path.
// Sockets fn creates stay in that namespace after fn returns. The thread
// returns to its namespace afterwards, or dies if it cannot.
func inNetNS(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			errc <- err
			return // the locked thread is discarded
		}
		defer orig.Close()
		target, err := os.Open(path)
		if err != nil {
			errc <- fmt.Errorf("netns %s: %w", path, err)
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("setns %s: %w", path, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- ferr
			return // leave the thread locked: it dies with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// dialInNetNS connects to addr over TCP from inside the netns at path.
func dialInNetNS(path, addr string) (net.Conn, error) {
	var c net.Conn
	err := inNetNS(path, func() error {
		var err error
		c, err = net.Dial("tcp", addr)
		return err
	})
	return c, err
}

// netnsIPs lists the global unicast addresses inside the network
// namespace at path, IPv4 first: the pod's IPs when something other
// than Config.Network configured them.
func netnsIPs(path string) []string {
	var v4, v6 []string
	inNetNS(path, func() error {
		addrs, err := net.InterfaceAddrs()
		if err != nil {
			return err
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || !ipn.IP.IsGlobalUnicast() {
				continue
			}
			if ipn.IP.To4() != nil {
				v4 = append(v4, ipn.IP.String())
			} else {
				v6 = append(v6, ipn.IP.String())
			}
		}
		return nil
	})
	return append(v4, v6...)
}
