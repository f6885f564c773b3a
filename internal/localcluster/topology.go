package localcluster

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"

	"github.com/rudder-dev/rudder/internal/netns"
)

// The wiring of a local cluster, all of it inside namespaces this
// process creates:
//
//	hub netns:   lo, bridge rudder0 (<prefix>.1/N), veth-<node> ... (ports of rudder0)
//	node netns:  lo, eth0 (<prefix>.<1+i>/N)  ── peer of veth-<node-i> in the hub
//
// No link reaches the host's namespace and no namespace has a default
// route: the nodes and the hub reach each other on the bridge and
// nothing else.

const (
	// BridgeName is the hub's bridge.
	BridgeName = "rudder0"
	// NodeLinkName is each node's link to the hub.
	NodeLinkName = "eth0"
)

// DefaultSubnet is where the hub and the nodes get their addresses.
var DefaultSubnet = netip.MustParsePrefix("172.30.0.0/24")

// Topology is the hub and the nodes' namespaces, wired.
type Topology struct {
	Subnet netip.Prefix
	Hub    *netns.NS
	HubIP  netip.Addr
	Nodes  []*NodeNet
}

// NodeNet is one node's namespace and address.
type NodeNet struct {
	Name string
	IP   netip.Addr
	NS   *netns.NS
}

// hubLinkName is the hub end of a node's veth (at most 15 bytes).
func hubLinkName(node string) string {
	name := "veth-" + node
	if len(name) > 15 {
		name = name[:15]
	}
	return name
}

// nodeAddr is the address of the i-th node (0-based): the hub has the
// first address of the subnet, the nodes the ones after it.
func nodeAddr(subnet netip.Prefix, i int) (netip.Addr, error) {
	a := subnet.Masked().Addr().Next() // the hub
	for range i + 1 {
		a = a.Next()
	}
	if !subnet.Contains(a) || !subnet.Contains(a.Next()) { // the last address is broadcast
		return netip.Addr{}, fmt.Errorf("subnet %s has no address for node %d", subnet, i+1)
	}
	return a, nil
}

// BuildTopology creates the hub and one namespace per name, wired to the
// hub's bridge. On error nothing it created is left (the namespaces are
// closed, so the kernel frees them and their links).
func BuildTopology(subnet netip.Prefix, names []string) (_ *Topology, err error) {
	if err := checkSubnet(subnet, len(names)); err != nil {
		return nil, err
	}
	subnet = subnet.Masked()
	t := &Topology{Subnet: subnet, HubIP: subnet.Addr().Next()}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	if t.Hub, err = netns.New(); err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	if err := t.Hub.Do(func() error { return addBridge(t.HubIP, subnet.Bits()) }); err != nil {
		return nil, fmt.Errorf("hub: %w", err)
	}
	for i, name := range names {
		ip, err := nodeAddr(subnet, i)
		if err != nil {
			return nil, err
		}
		ns, err := netns.New()
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
		n := &NodeNet{Name: name, IP: ip, NS: ns}
		t.Nodes = append(t.Nodes, n)
		if err := t.wire(n); err != nil {
			return nil, fmt.Errorf("node %s: %w", name, err)
		}
	}
	return t, nil
}

// checkSubnet refuses a subnet that is not IPv4 or has no room for the
// hub and n nodes.
func checkSubnet(subnet netip.Prefix, n int) error {
	if !subnet.IsValid() || !subnet.Addr().Is4() || subnet.Bits() > 30 {
		return fmt.Errorf("node subnet %s: an IPv4 prefix of /30 or wider is needed", subnet)
	}
	if _, err := nodeAddr(subnet.Masked(), n-1); err != nil {
		return fmt.Errorf("node subnet %s has room for fewer than %d nodes", subnet, n)
	}
	return nil
}

// addBridge creates the hub's bridge, with the hub's address, on the
// calling thread's namespace.
func addBridge(ip netip.Addr, bits int) error {
	h, err := netlink.NewHandle()
	if err != nil {
		return err
	}
	defer h.Close()
	br := &netlink.Bridge{LinkAttrs: netlink.LinkAttrs{Name: BridgeName}}
	if err := h.LinkAdd(br); err != nil {
		return fmt.Errorf("creating bridge %s: %w", BridgeName, err)
	}
	if err := h.AddrAdd(br, &netlink.Addr{IPNet: ipNet(ip, bits)}); err != nil {
		return fmt.Errorf("addressing bridge %s: %w", BridgeName, err)
	}
	if err := h.LinkSetUp(br); err != nil {
		return fmt.Errorf("bringing bridge %s up: %w", BridgeName, err)
	}
	return nil
}

// wire creates n's veth pair from the hub, its hub end a port of the
// bridge and its other end eth0 in n's namespace, and addresses it.
func (t *Topology) wire(n *NodeNet) error {
	hubEnd := hubLinkName(n.Name)
	err := t.Hub.Do(func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		br, err := h.LinkByName(BridgeName)
		if err != nil {
			return err
		}
		veth := &netlink.Veth{
			LinkAttrs:     netlink.LinkAttrs{Name: hubEnd, MasterIndex: br.Attrs().Index},
			PeerName:      NodeLinkName,
			PeerNamespace: netlink.NsFd(n.NS.Fd()),
		}
		if err := h.LinkAdd(veth); err != nil {
			return fmt.Errorf("creating veth %s: %w", hubEnd, err)
		}
		if err := h.LinkSetUp(veth); err != nil {
			return fmt.Errorf("bringing %s up: %w", hubEnd, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return n.NS.Do(func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		link, err := h.LinkByName(NodeLinkName)
		if err != nil {
			return err
		}
		if err := h.AddrAdd(link, &netlink.Addr{IPNet: ipNet(n.IP, t.Subnet.Bits())}); err != nil {
			return fmt.Errorf("addressing %s: %w", NodeLinkName, err)
		}
		if err := h.LinkSetUp(link); err != nil {
			return fmt.Errorf("bringing %s up: %w", NodeLinkName, err)
		}
		return nil
	})
}

func ipNet(ip netip.Addr, bits int) *net.IPNet {
	return &net.IPNet{IP: net.IP(ip.AsSlice()), Mask: net.CIDRMask(bits, ip.BitLen())}
}

// Close drops every namespace; the kernel frees them, and their links,
// once no process or socket is left in them.
func (t *Topology) Close() error {
	var errs []error
	for _, n := range t.Nodes {
		errs = append(errs, n.NS.Close())
	}
	if t.Hub != nil {
		errs = append(errs, t.Hub.Close())
	}
	return errors.Join(errs...)
}
