package network

import (
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// VXLANDevice is the tunnel device's name.
const VXLANDevice = "rudder.vxlan"

// AnnotationVTEPMAC is the Node annotation where a node publishes its
// VXLAN device's MAC address, for other nodes' forwarding entries.
const AnnotationVTEPMAC = "network.rudder.dev/vtep-mac"

// vxlanDev is the node's VXLAN tunnel endpoint, as flannel's vxlan
// backend builds it: no learning; for each remote node a route to its
// pod CIDR via the CIDR's network address (onlink), a permanent
// neighbour entry mapping that address to the remote device's MAC, and
// a forwarding entry sending that MAC to the remote node's IP.
type vxlanDev struct {
	link netlink.Link
}

func (v *vxlanDev) mac() net.HardwareAddr { return v.link.Attrs().HardwareAddr }

// ensureVXLAN creates (or adopts) the tunnel device with local address
// ip, on the link holding ip, up.
func ensureVXLAN(h *netlink.Handle, cfg Config, ip netip.Addr, mtu int) (*vxlanDev, error) {
	local := net.IP(ip.AsSlice())
	want := &netlink.Vxlan{
		LinkAttrs: netlink.LinkAttrs{Name: VXLANDevice, MTU: mtu},
		VxlanId:   cfg.VXLANID,
		SrcAddr:   local,
		Port:      cfg.VXLANPort,
		Learning:  false,
	}
	if addrs, err := h.AddrList(nil, unix.AF_INET); err == nil {
		for _, a := range addrs {
			if a.IP.Equal(local) {
				want.VtepDevIndex = a.LinkIndex
			}
		}
	}
	l, err := h.LinkByName(VXLANDevice)
	if err == nil {
		old, ok := l.(*netlink.Vxlan)
		if !ok || old.VxlanId != want.VxlanId || !old.SrcAddr.Equal(local) || old.Port != want.Port {
			if err := h.LinkDel(l); err != nil {
				return nil, fmt.Errorf("network: replace %s: %w", VXLANDevice, err)
			}
			l = nil
		}
	} else {
		var nf netlink.LinkNotFoundError
		if !errors.As(err, &nf) {
			return nil, fmt.Errorf("network: %s: %w", VXLANDevice, err)
		}
		l = nil
	}
	if l == nil {
		if err := h.LinkAdd(want); err != nil {
			return nil, fmt.Errorf("network: create %s: %w", VXLANDevice, err)
		}
		if l, err = h.LinkByName(VXLANDevice); err != nil {
			return nil, fmt.Errorf("network: %s: %w", VXLANDevice, err)
		}
	}
	if l.Attrs().MTU != mtu {
		if err := h.LinkSetMTU(l, mtu); err != nil {
			return nil, fmt.Errorf("network: %s mtu: %w", VXLANDevice, err)
		}
	}
	if err := h.LinkSetUp(l); err != nil {
		return nil, fmt.Errorf("network: %s up: %w", VXLANDevice, err)
	}
	return &vxlanDev{link: l}, nil
}

// setAddress gives the device the network address of each IPv4 pod CIDR
// as a /32: the source of packets this node itself sends through the
// tunnel, and the next hop other nodes name for this node's pods.
func (v *vxlanDev) setAddress(h *netlink.Handle, ranges []netip.Prefix) error {
	for _, r := range ranges {
		if !r.Addr().Is4() {
			continue
		}
		a := &netlink.Addr{IPNet: ipNet(netip.PrefixFrom(r.Masked().Addr(), 32))}
		if err := h.AddrReplace(v.link, a); err != nil {
			return fmt.Errorf("network: %s address: %w", VXLANDevice, err)
		}
	}
	return nil
}
