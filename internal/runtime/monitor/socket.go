package monitor

import (
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// The monitor's unix sockets are made with golang.org/x/sys/unix, not
// package net: net's dependencies (vendor/golang.org/x/net/dns/...) sort
// last in the initialisation order, so importing net would make this
// package's init wait for hundreds of other packages (see doc.go). A
// non-blocking socket in an *os.File is still served by the runtime's
// poller: reads, writes and deadlines work as on a net.Conn.

// listener is a listening unix stream socket.
type listener struct {
	f  *os.File
	rc syscall.RawConn
}

func listenUnix(path string) (*listener, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("socket: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := unix.Listen(fd, 64); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	f := os.NewFile(uintptr(fd), path)
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &listener{f: f, rc: rc}, nil
}

// accept waits for a connection; it fails once the listener is closed.
func (l *listener) accept() (*os.File, error) {
	var nfd int
	var aerr error
	err := l.rc.Read(func(fd uintptr) bool {
		for {
			nfd, _, aerr = unix.Accept4(int(fd), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
			if aerr != unix.EINTR && aerr != unix.ECONNABORTED {
				return aerr != unix.EAGAIN
			}
		}
	})
	if err == nil {
		err = aerr
	}
	if err != nil {
		return nil, fmt.Errorf("accept: %w", err)
	}
	return os.NewFile(uintptr(nfd), "conn"), nil
}

func (l *listener) Close() error { return l.f.Close() }

// receiveFd reads one message from conn and returns the one file
// descriptor it carries (SCM_RIGHTS), as a non-blocking *os.File.
func receiveFd(conn *os.File, name string) (*os.File, error) {
	rc, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	buf := make([]byte, 4096)
	oob := make([]byte, unix.CmsgSpace(4))
	var oobn int
	var rerr error
	err = rc.Read(func(fd uintptr) bool {
		for {
			_, oobn, _, _, rerr = unix.Recvmsg(int(fd), buf, oob, unix.MSG_CMSG_CLOEXEC)
			if rerr != unix.EINTR {
				return rerr != unix.EAGAIN
			}
		}
	})
	if err == nil {
		err = rerr
	}
	if err != nil {
		return nil, fmt.Errorf("receive %s: %w", name, err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		return nil, fmt.Errorf("receive %s: %d control messages (%v)", name, len(msgs), err)
	}
	fds, err := unix.ParseUnixRights(&msgs[0])
	if err != nil || len(fds) != 1 {
		for _, fd := range fds {
			unix.Close(fd)
		}
		return nil, fmt.Errorf("receive %s: %d descriptors (%v)", name, len(fds), err)
	}
	// Non-blocking, the poller waits for it instead of a blocked thread.
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		return nil, fmt.Errorf("receive %s: %w", name, err)
	}
	return os.NewFile(uintptr(fds[0]), name), nil
}
