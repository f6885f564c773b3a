package proxy_test

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/rudder-dev/rudder/internal/netns"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// testNode is a "node": a network namespace with a bridge (the pods'
// gateway, 10.42.0.1/24) and pods, each its own namespace attached by
// a veth. Nothing in it routes anywhere else.
type testNode struct {
	ns   *netns.NS
	dir  string
	pods map[string]*netns.NS
	ips  map[string]string
}

func newTestNode(t *testing.T) *testNode {
	t.Helper()
	requireRoot(t)
	n := &testNode{dir: t.TempDir(), pods: map[string]*netns.NS{}, ips: map[string]string{}}
	n.ns = tempNetNSIn(t, n.dir, "node")
	err := n.ns.Do(func() error {
		lo, err := netlink.LinkByName("lo")
		if err != nil {
			return err
		}
		if err := netlink.LinkSetUp(lo); err != nil {
			return err
		}
		br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: "br0"}}
		if err := netlink.LinkAdd(br); err != nil {
			return fmt.Errorf("bridge: %w", err)
		}
		addr, _ := netlink.ParseAddr("10.42.0.1/24")
		if err := netlink.AddrAdd(br, addr); err != nil {
			return err
		}
		if err := netlink.LinkSetUp(br); err != nil {
			return err
		}
		// Service addresses have no route but must not be unreachable
		// before the nat hooks see them (traffic from the node itself).
		_, svcNet, _ := net.ParseCIDR("10.96.0.0/12")
		if err := netlink.RouteAdd(&netlink.Route{LinkIndex: br.Attrs().Index, Dst: svcNet}); err != nil {
			return err
		}
		for file, v := range map[string]string{
			"/proc/sys/net/ipv4/ip_forward":                "1",
			"/proc/sys/net/bridge/bridge-nf-call-iptables": "1",
		} {
			if err := os.WriteFile(file, []byte(v), 0o644); err != nil {
				return fmt.Errorf("%s: %w", file, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("node namespace: %v", err)
	}
	return n
}

func tempNetNSIn(t testing.TB, dir, name string) *netns.NS {
	t.Helper()
	ns, err := netns.Pinned(dir, name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })
	return ns
}

// addPod creates a pod namespace with address ip (in 10.42.0.0/24) on
// the node's bridge.
func (n *testNode) addPod(t *testing.T, name, ip string) *netns.NS {
	t.Helper()
	pod := tempNetNSIn(t, n.dir, name)
	podFd, err := unix.Open(pod.Path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(podFd)
	err = n.ns.Do(func() error {
		br, err := netlink.LinkByName("br0")
		if err != nil {
			return err
		}
		veth := &netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v-" + name, MasterIndex: br.Attrs().Index}, PeerName: "eth0", PeerNamespace: netlink.NsFd(podFd)}
		if err := netlink.LinkAdd(veth); err != nil {
			return fmt.Errorf("veth: %w", err)
		}
		host, err := netlink.LinkByName("v-" + name)
		if err != nil {
			return err
		}
		if err := netlink.LinkSetHairpin(host, true); err != nil {
			return err
		}
		return netlink.LinkSetUp(host)
	})
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	err = pod.Do(func() error {
		for _, l := range []string{"lo", "eth0"} {
			link, err := netlink.LinkByName(l)
			if err != nil {
				return err
			}
			if err := netlink.LinkSetUp(link); err != nil {
				return err
			}
		}
		eth, _ := netlink.LinkByName("eth0")
		addr, _ := netlink.ParseAddr(ip + "/24")
		if err := netlink.AddrAdd(eth, addr); err != nil {
			return err
		}
		return netlink.RouteAdd(&netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.ParseIP("10.42.0.1")})
	})
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
	n.pods[name], n.ips[name] = pod, ip
	return pod
}

// addOutside creates a namespace outside the cluster's range, linked
// to the node by its own veth: node side nodeIP/24, its side ip/24.
func (n *testNode) addOutside(t *testing.T, name, ip, nodeIP string) {
	t.Helper()
	out := tempNetNSIn(t, n.dir, name)
	fd, err := unix.Open(out.Path(), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	setup := func(link, addr string) error {
		l, err := netlink.LinkByName(link)
		if err != nil {
			return err
		}
		a, _ := netlink.ParseAddr(addr + "/24")
		if err := netlink.AddrAdd(l, a); err != nil {
			return err
		}
		return netlink.LinkSetUp(l)
	}
	err = n.ns.Do(func() error {
		if err := netlink.LinkAdd(&netlink.Veth{LinkAttrs: netlink.LinkAttrs{Name: "v-" + name}, PeerName: "eth0", PeerNamespace: netlink.NsFd(fd)}); err != nil {
			return err
		}
		return setup("v-"+name, nodeIP)
	})
	if err == nil {
		err = out.Do(func() error { return setup("eth0", ip) })
	}
	if err != nil {
		t.Fatalf("outside %s: %v", name, err)
	}
	n.pods[name], n.ips[name] = out, ip
}

// serve runs a TCP and a UDP server on port in the pod that answer
// every connection or datagram with the pod's name.
func (n *testNode) serve(t *testing.T, pod string, port int) {
	t.Helper()
	var ln net.Listener
	var pc net.PacketConn
	err := n.pods[pod].Do(func() error {
		var err error
		if ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port)); err != nil {
			return err
		}
		pc, err = net.ListenPacket("udp4", fmt.Sprintf(":%d", port))
		return err
	})
	if err != nil {
		t.Fatalf("listen in %s: %v", pod, err)
	}
	t.Cleanup(func() { ln.Close(); pc.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			fmt.Fprintf(c, "%s %s\n", pod, c.RemoteAddr().(*net.TCPAddr).IP)
			c.Close()
		}
	}()
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			pc.WriteTo([]byte(pod), from)
		}
	}()
}

// serveEcho runs a TCP line echo server on port in the pod.
func (n *testNode) serveEcho(t *testing.T, pod string, port int) {
	t.Helper()
	var ln net.Listener
	if err := n.pods[pod].Do(func() error {
		var err error
		ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", port))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					c.Write([]byte(line))
				}
			}()
		}
	}()
}

// connFrom opens a TCP connection from the pod (the socket lives in the
// pod's namespace after Do returns).
func (n *testNode) connFrom(pod, addr string) (net.Conn, error) {
	var c net.Conn
	err := n.nsOf(pod).Do(func() error {
		var err error
		c, err = net.DialTimeout("tcp4", addr, 2*time.Second)
		return err
	})
	return c, err
}

func echo(c net.Conn, msg string) error {
	c.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := fmt.Fprintln(c, msg); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(line) != msg {
		return fmt.Errorf("echo %q, want %q", line, msg)
	}
	return nil
}

// dialFrom connects from the pod to addr over TCP and returns the
// answering pod's name and the client address it saw.
func (n *testNode) dialFrom(pod, addr string) (backend, seenFrom string, err error) {
	err = n.nsOf(pod).Do(func() error {
		c, err := net.DialTimeout("tcp4", addr, 2*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil {
			return err
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return fmt.Errorf("answer %q", line)
		}
		backend, seenFrom = f[0], f[1]
		return nil
	})
	return backend, seenFrom, err
}

// udpFrom sends one datagram from the pod (from a fixed source port, so
// conntrack keeps one flow) and returns the answer.
func (n *testNode) udpFrom(pod, addr string, srcPort int) (string, error) {
	var answer string
	err := n.nsOf(pod).Do(func() error {
		raddr, err := net.ResolveUDPAddr("udp4", addr)
		if err != nil {
			return err
		}
		c, err := net.DialUDP("udp4", &net.UDPAddr{Port: srcPort}, raddr)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(500 * time.Millisecond))
		if _, err := c.Write([]byte("hi")); err != nil {
			return err
		}
		buf := make([]byte, 512)
		m, err := c.Read(buf)
		if err != nil {
			return err
		}
		answer = string(buf[:m])
		return nil
	})
	return answer, err
}

func (n *testNode) nsOf(pod string) *netns.NS {
	if pod == "node" {
		return n.ns
	}
	return n.pods[pod]
}
