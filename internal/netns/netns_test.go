package netns_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rudder-dev/rudder/internal/netns"
)

// A namespace of its own: a listener inside it is reached from inside and
// not from the host, its pin goes with Close, and nothing leaks to the
// calling goroutine's thread.
func TestNamespace(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("creating network namespaces needs root")
	}
	dir := t.TempDir()
	ns, err := netns.Pinned(dir, "a")
	if err != nil {
		t.Fatal(err)
	}
	var self unix.Stat_t
	if err := unix.Stat("/proc/self/ns/net", &self); err != nil {
		t.Fatal(err)
	}
	ino, err := ns.Inode()
	if err != nil || ino == self.Ino {
		t.Fatalf("namespace inode %d (host %d): %v", ino, self.Ino, err)
	}
	ln, err := ns.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprint(c, "inside")
			c.Close()
		}
	}()
	c, err := ns.DialContext(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("dial inside: %v", err)
	}
	buf := make([]byte, 6)
	if _, err := c.Read(buf); err != nil || string(buf) != "inside" {
		t.Errorf("read %q: %v", buf, err)
	}
	c.Close()
	// The same loopback address on the host is another socket space.
	if hc, err := (&netDialer{}).dial(ln.Addr().String()); err == nil {
		hc.Close()
		t.Errorf("the namespace's listener answered on the host's loopback")
	}
	var now unix.Stat_t
	if err := unix.Stat("/proc/thread-self/ns/net", &now); err != nil || now.Ino != self.Ino {
		t.Errorf("the test's thread is in namespace %d, want the host's %d", now.Ino, self.Ino)
	}
	if _, err := os.Stat(ns.Path()); err != nil {
		t.Errorf("pin %s: %v", ns.Path(), err)
	}
	if err := ns.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "a")); !os.IsNotExist(err) {
		t.Errorf("pin after Close: %v", err)
	}
}
