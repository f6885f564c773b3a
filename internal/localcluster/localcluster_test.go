package localcluster

import (
	"context"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/vishvananda/netlink"

	"github.com/rudder-dev/rudder/internal/netns"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (network namespaces, cgroups)")
	}
}

func TestNodeAddr(t *testing.T) {
	for _, tc := range []struct {
		subnet  string
		i       int
		want    string
		wantErr bool
	}{
		{"172.30.0.0/24", 0, "172.30.0.2", false},
		{"172.30.0.0/24", 252, "172.30.0.254", false},
		{"172.30.0.0/24", 253, "", true}, // .255 is the broadcast address
		{"10.1.2.0/30", 0, "10.1.2.2", false},
		{"10.1.2.0/30", 1, "", true},
	} {
		t.Run(tc.subnet+"/"+strconv.Itoa(tc.i), func(t *testing.T) {
			got, err := nodeAddr(netip.MustParsePrefix(tc.subnet), tc.i)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("got %v, want an error", got)
				}
				return
			}
			if err != nil || got.String() != tc.want {
				t.Fatalf("got %v, %v; want %s", got, err, tc.want)
			}
		})
	}
}

func TestInCgroup(t *testing.T) {
	proc := "4:memory:/a/rudder-x/node-1/agent\n1:cpu:/\n0::/other\n"
	for _, tc := range []struct {
		path string
		want bool
	}{
		{"/a/rudder-x", true},
		{"/a/rudder-x/node-1/agent", true},
		{"/a/rudder", false}, // a prefix of a name is not a parent
		{"/other/x", false},
	} {
		t.Run(tc.path, func(t *testing.T) {
			if got := inCgroup(proc, tc.path); got != tc.want {
				t.Errorf("inCgroup(%q) = %v, want %v", tc.path, got, tc.want)
			}
		})
	}
}

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{
		`/plain`:         "/plain",
		`/with\040space`: "/with space",
		`/tab\011end`:    "/tab\tend",
		`/bad\09x`:       `/bad\09x`,
		`/short\04`:      `/short\04`,
		`/back\134slash`: `/back\slash`,
		`/two\040\040sp`: "/two  sp",
	} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidCgroup(t *testing.T) {
	for path, want := range map[string]bool{"/": false, "": false, "/a/rudder-1234": true, "/a/b": false, "/rudder-x": true} {
		if got := validCgroup(path); got != want {
			t.Errorf("validCgroup(%q) = %v, want %v", path, got, want)
		}
	}
}

// TestTopology builds the hub and two nodes and checks what they can
// reach: each node the hub's listener and the other node, over the
// bridge, with no route anywhere else, and nothing in the host's
// namespace.
func TestTopology(t *testing.T) {
	requireRoot(t)
	before, _ := net.Interfaces()
	topo, err := BuildTopology(netip.MustParsePrefix("172.31.7.0/24"), []string{"node-1", "node-2"})
	if err != nil {
		t.Fatal(err)
	}
	defer topo.Close()
	if topo.HubIP.String() != "172.31.7.1" || topo.Nodes[0].IP.String() != "172.31.7.2" || topo.Nodes[1].IP.String() != "172.31.7.3" {
		t.Fatalf("addresses: hub %v, nodes %v %v", topo.HubIP, topo.Nodes[0].IP, topo.Nodes[1].IP)
	}
	hubLn, err := topo.Hub.Listen("tcp", "172.31.7.1:6443")
	if err != nil {
		t.Fatal(err)
	}
	defer hubLn.Close()
	n2Ln, err := topo.Nodes[1].NS.Listen("tcp", "172.31.7.3:10250")
	if err != nil {
		t.Fatal(err)
	}
	defer n2Ln.Close()
	for _, ln := range []net.Listener{hubLn, n2Ln} {
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				c.Write([]byte("hi"))
				c.Close()
			}
		}()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name string
		from *netns.NS
		addr string
	}{
		{"node-1 to the hub", topo.Nodes[0].NS, "172.31.7.1:6443"},
		{"node-1 to node-2", topo.Nodes[0].NS, "172.31.7.3:10250"},
		{"the hub to node-2 (the kubelet dialer's way)", topo.Hub, "172.31.7.3:10250"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.from.DialContext(ctx, "tcp", tc.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			buf := make([]byte, 2)
			if _, err := c.Read(buf); err != nil || string(buf) != "hi" {
				t.Fatalf("read %q, %v", buf, err)
			}
		})
	}
	t.Run("the host's namespace cannot reach the hub", func(t *testing.T) {
		// The routing table only: nothing is sent.
		routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range routes {
			if r.Dst != nil && r.Dst.Contains(net.ParseIP("172.31.7.1")) && r.Dst.String() != "0.0.0.0/0" {
				t.Errorf("the host has a route to the node subnet: %v", r)
			}
		}
	})
	t.Run("the nodes have no route out", func(t *testing.T) {
		for _, n := range topo.Nodes {
			n.NS.Do(func() error {
				routes, err := netlink.RouteList(nil, netlink.FAMILY_V4)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range routes {
					if r.Dst == nil || r.Dst.String() != "172.31.7.0/24" {
						t.Errorf("node %s has route %v", n.Name, r)
					}
				}
				return nil
			})
		}
	})
	after, _ := net.Interfaces()
	if len(after) != len(before) {
		t.Errorf("the host's links changed: %v, were %v", after, before)
	}
}

// TestCgroupTree makes a tree, puts a process in it, kills everything
// in it and removes it, in every hierarchy, leaving a process outside
// alone.
func TestCgroupTree(t *testing.T) {
	requireRoot(t)
	cg, err := detectCgroups()
	if err != nil {
		t.Skip(err)
	}
	own, err := cg.ownCgroup()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(own, "rudder-test"+strconv.Itoa(os.Getpid()))
	leaf := filepath.Join(root, "node-1", "agent")
	if err := cg.create(leaf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cg.killAll(root, 5*time.Second); cg.remove(root, 5*time.Second) })
	inside := exec.Command("sleep", "300")
	outside := exec.Command("sleep", "300")
	for _, c := range []*exec.Cmd{inside, outside} {
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
	}
	defer outside.Process.Kill()
	if err := cg.addProc(leaf, inside.Process.Pid); err != nil {
		t.Fatal(err)
	}
	if got := cg.procs(root); !slices.Equal(got, []int{inside.Process.Pid}) {
		t.Fatalf("procs = %v, want [%d]", got, inside.Process.Pid)
	}
	if err := cg.killAll(root, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := inside.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("the process inside: %v, want killed", err)
	}
	if err := outside.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process outside is gone: %v", err)
	}
	if err := cg.remove(root, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	for _, m := range cg.mounts {
		if _, err := os.Stat(filepath.Join(m, root)); err == nil {
			t.Errorf("%s left in %s", root, m)
		}
	}
}

func TestLockDir(t *testing.T) {
	dir := t.TempDir()
	first, err := lockDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lockDir(dir); err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Errorf("second lock: %v, want a refusal naming this process", err)
	}
	first.Close()
	again, err := lockDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	again.Close()
}
