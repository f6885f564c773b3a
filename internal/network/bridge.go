package network

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// podIfName is the pod's side of its veth pair.
const podIfName = "eth0"

// hostVethName is the node's side of id's veth pair: "rv" and 13 hex
// digits of the ID's hash, so any ID gives a valid, stable, 15-byte name
// that Teardown and the GC can find again without state.
func hostVethName(id string) string {
	sum := sha256.Sum256([]byte(id))
	return "rv" + hex.EncodeToString(sum[:7])[:13]
}

// gateway is the first host address of a pod CIDR: the bridge's.
func gateway(r netip.Prefix) netip.Prefix {
	return netip.PrefixFrom(r.Masked().Addr().Next(), r.Bits())
}

func ipNet(p netip.Prefix) *net.IPNet {
	return &net.IPNet{IP: net.IP(p.Addr().AsSlice()), Mask: net.CIDRMask(p.Bits(), p.Addr().BitLen())}
}

func family(a netip.Addr) int {
	if a.Is4() {
		return unix.AF_INET
	}
	return unix.AF_INET6
}

// ensureBridge creates (or adopts) the bridge with the gateway address of
// each pod CIDR, at mtu, up. Addresses of other CIDRs (a pod CIDR the
// node had before) are removed.
func ensureBridge(h *netlink.Handle, name string, mtu int, ranges []netip.Prefix) (netlink.Link, error) {
	br, err := h.LinkByName(name)
	if err != nil {
		var nf netlink.LinkNotFoundError
		if !errors.As(err, &nf) {
			return nil, fmt.Errorf("network: bridge %s: %w", name, err)
		}
		la := netlink.NewLinkAttrs()
		la.Name, la.MTU = name, mtu
		if err := h.LinkAdd(&netlink.Bridge{LinkAttrs: la}); err != nil && !errors.Is(err, unix.EEXIST) {
			return nil, fmt.Errorf("network: create bridge %s: %w", name, err)
		}
		if br, err = h.LinkByName(name); err != nil {
			return nil, fmt.Errorf("network: bridge %s: %w", name, err)
		}
	}
	if _, ok := br.(*netlink.Bridge); !ok {
		return nil, fmt.Errorf("network: %s exists and is a %s, not a bridge", name, br.Type())
	}
	if br.Attrs().MTU != mtu {
		if err := h.LinkSetMTU(br, mtu); err != nil {
			return nil, fmt.Errorf("network: bridge %s mtu: %w", name, err)
		}
	}
	want := map[string]bool{}
	for _, r := range ranges {
		gw := gateway(r)
		want[gw.String()] = true
		addr := &netlink.Addr{IPNet: ipNet(gw)}
		if gw.Addr().Is6() {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := h.AddrReplace(br, addr); err != nil {
			return nil, fmt.Errorf("network: bridge %s address %s: %w", name, gw, err)
		}
	}
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
		addrs, err := h.AddrList(br, fam)
		if err != nil {
			return nil, fmt.Errorf("network: bridge %s addresses: %w", name, err)
		}
		for _, a := range addrs {
			if a.IP.IsLinkLocalUnicast() {
				continue
			}
			p, ok := netip.AddrFromSlice(a.IP)
			ones, _ := a.Mask.Size()
			if ok && !want[netip.PrefixFrom(p.Unmap(), ones).String()] {
				if err := h.AddrDel(br, &a); err != nil {
					return nil, fmt.Errorf("network: bridge %s: remove stale address %s: %w", name, a.IPNet, err)
				}
			}
		}
	}
	if err := h.LinkSetUp(br); err != nil {
		return nil, fmt.Errorf("network: bridge %s up: %w", name, err)
	}
	return br, nil
}

// attach creates id's veth pair — the node side on the bridge with
// hairpin on, eth0 in the pod's namespace with addrs and default routes
// via each range's gateway. On error the pair is removed (deleting one
// side deletes both), so a failed attach leaves no link behind.
func attach(node *netlink.Handle, br netlink.Link, id, podNS string, mtu int, addrs []netip.Prefix) (err error) {
	name := hostVethName(id)
	// A pair left by a crash between here and the IPAM's release.
	if old, lerr := node.LinkByName(name); lerr == nil {
		if derr := node.LinkDel(old); derr != nil {
			return fmt.Errorf("network: remove stale veth %s: %w", name, derr)
		}
	}
	podHandle, err := openNS(podNS)
	if err != nil {
		return err
	}
	defer podHandle.Close()
	la := netlink.NewLinkAttrs()
	la.Name, la.MTU, la.MasterIndex = name, mtu, br.Attrs().Index
	veth := &netlink.Veth{LinkAttrs: la, PeerName: podIfName, PeerNamespace: netlink.NsFd(int(podHandle))}
	if err := node.LinkAdd(veth); err != nil {
		return fmt.Errorf("network: create veth %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			if l, lerr := node.LinkByName(name); lerr == nil {
				node.LinkDel(l)
			}
		}
	}()
	host, err := node.LinkByName(name)
	if err != nil {
		return fmt.Errorf("network: veth %s: %w", name, err)
	}
	if err := node.LinkSetHairpin(host, true); err != nil {
		return fmt.Errorf("network: hairpin on %s: %w", name, err)
	}
	if err := node.LinkSetUp(host); err != nil {
		return fmt.Errorf("network: veth %s up: %w", name, err)
	}
	return configurePod(podHandle, addrs)
}

// configurePod gives the pod's eth0 its addresses and default routes.
func configurePod(podNS netns.NsHandle, addrs []netip.Prefix) error {
	h, err := netlink.NewHandleAt(podNS)
	if err != nil {
		return fmt.Errorf("network: netlink in pod netns: %w", err)
	}
	defer h.Close()
	eth, err := h.LinkByName(podIfName)
	if err != nil {
		return fmt.Errorf("network: pod %s: %w", podIfName, err)
	}
	for _, a := range addrs {
		addr := &netlink.Addr{IPNet: ipNet(a)}
		if a.Addr().Is6() {
			addr.Flags = unix.IFA_F_NODAD
		}
		if err := h.AddrAdd(eth, addr); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("network: pod address %s: %w", a, err)
		}
	}
	if err := h.LinkSetUp(eth); err != nil {
		return fmt.Errorf("network: pod %s up: %w", podIfName, err)
	}
	for _, a := range addrs {
		gw := gateway(netip.PrefixFrom(a.Addr(), a.Bits()))
		rt := &netlink.Route{LinkIndex: eth.Attrs().Index, Gw: net.IP(gw.Addr().AsSlice()), Family: family(a.Addr())}
		if err := h.RouteReplace(rt); err != nil {
			return fmt.Errorf("network: pod default route via %s: %w", gw.Addr(), err)
		}
	}
	return nil
}

// detach removes id's veth pair from the node; a pair already gone is
// fine.
func detach(node *netlink.Handle, id string) error {
	l, err := node.LinkByName(hostVethName(id))
	if err != nil {
		var nf netlink.LinkNotFoundError
		if errors.As(err, &nf) {
			return nil
		}
		return fmt.Errorf("network: veth of %s: %w", id, err)
	}
	if err := node.LinkDel(l); err != nil && !errors.Is(err, unix.ENODEV) {
		return fmt.Errorf("network: delete veth %s: %w", l.Attrs().Name, err)
	}
	return nil
}
