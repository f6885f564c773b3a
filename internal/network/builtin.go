package network

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/vishvananda/netlink"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// bridgeNet is the built-in network: IPAM, bridge, veths, masquerade,
// routes to other nodes.
type bridgeNet struct {
	n    *Network
	ipam *ipam

	mu     sync.Mutex // guards what follows, set by the node watch
	ranges []netip.Prefix
	br     netlink.Link
	mtu    int
	vxlan  *vxlanDev
}

func (b *bridgeNet) setup(ctx context.Context, id, nsPath string, _ *runtimeapi.PodSandboxConfig) ([]string, error) {
	if !isNetNS(nsPath) {
		return nil, fmt.Errorf("network: %s is not a network namespace", nsPath)
	}
	b.mu.Lock()
	br, mtu := b.br, b.mtu
	b.mu.Unlock()
	addrs, err := b.ipam.allocate(id, nsPath)
	if err != nil {
		return nil, err
	}
	if err := attach(b.n.nl, br, id, nsPath, mtu, addrs); err != nil {
		if rerr := b.ipam.release(id); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	out := make([]string, len(addrs))
	for i, a := range addrs {
		out[i] = a.Addr().String()
	}
	b.n.log.Debug("network: sandbox attached", "id", id, "ips", out)
	return out, nil
}

func (b *bridgeNet) teardown(_ context.Context, id, _ string) error {
	// The veth goes first: an address is free only once nothing uses it.
	if err := detach(b.n.nl, id); err != nil {
		return err
	}
	return b.ipam.release(id)
}

// gc releases the addresses (and removes the veths) of sandboxes whose
// namespace is gone or, when live is not nil, that are not in live.
func (b *bridgeNet) gc(ctx context.Context, live map[string]bool) error {
	var errs []error
	for id, ns := range b.ipam.holders() {
		if isNetNS(ns) && (live == nil || live[id]) {
			continue
		}
		b.n.log.Info("network: releasing the address of a gone sandbox", "id", id, "netns", ns)
		errs = append(errs, b.teardown(ctx, id, ns))
	}
	return errors.Join(errs...)
}

// self is this node's part of the configuration, from its Node.
type self struct {
	ranges []netip.Prefix
	ip     netip.Addr
}

// apply makes the node's side match s: bridge, forwarding, masquerade
// and the VXLAN device. It runs on every change of this node's Node and
// marks the network ready once it succeeded.
func (b *bridgeNet) apply(s self) error {
	n := b.n
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.br != nil && slices.Equal(b.ranges, s.ranges) {
		return nil
	}
	mtu := n.cfg.MTU
	if mtu <= 0 {
		mtu = defaultMTU(n.nl, s.ip)
	}
	br, err := ensureBridge(n.nl, n.cfg.BridgeName, mtu, s.ranges)
	if err != nil {
		return err
	}
	for _, r := range s.ranges {
		key := "net/ipv4/ip_forward"
		if r.Addr().Is6() {
			key = "net/ipv6/conf/all/forwarding"
		}
		if err := writeSysctl(n.cfg.NodeNetNS, key, "1"); err != nil {
			return err
		}
	}
	// Bridged traffic must pass the IP hooks, or a pod's reply to
	// another pod on the same bridge skips the service proxy's conntrack
	// (same-node ClusterIP traffic then hangs), as with every bridge CNI.
	// The setting lives in br_netfilter: without the module it is absent
	// and only warned about.
	for _, r := range s.ranges {
		key := "net/bridge/bridge-nf-call-iptables"
		if r.Addr().Is6() {
			key = "net/bridge/bridge-nf-call-ip6tables"
		}
		if err := writeSysctl(n.cfg.NodeNetNS, key, "1"); err != nil {
			n.log.Warn("network: same-node Service traffic needs br_netfilter (modprobe br_netfilter)", "sysctl", key, "err", err)
		}
	}
	if err := (nft{nsFd: n.nftFd()}).sync(masqRules(s.ranges, n.clusters)); err != nil {
		return err
	}
	if b.vxlan == nil && n.cfg.Backend != BackendHostGW && s.ip.Is4() && !s.ip.IsLoopback() {
		v, err := ensureVXLAN(n.nl, n.cfg, s.ip, mtu)
		if err != nil {
			return err
		}
		b.vxlan = v
	}
	if b.vxlan != nil {
		if err := b.vxlan.setAddress(n.nl, s.ranges); err != nil {
			return err
		}
	}
	if err := b.ipam.setRanges(s.ranges); err != nil {
		n.log.Warn("network: addresses outside the node's pod CIDR are still held", "err", err)
	}
	b.ranges, b.br, b.mtu = s.ranges, br, mtu
	n.log.Info("network: pod network ready", "node", n.cfg.NodeName, "podCIDRs", fmt.Sprint(s.ranges), "bridge", n.cfg.BridgeName, "mtu", mtu)
	n.markReady()
	return nil
}

// nftFd is the node namespace's fd for nftables: 0 for the process's
// own, -1 once closed (nft refuses it rather than fall back to ours).
func (n *Network) nftFd() int {
	if n.cfg.NodeNetNS == "" {
		return 0
	}
	if !n.nodeNS.IsOpen() {
		return -1
	}
	return int(n.nodeNS)
}

// defaultMTU is the MTU of the link holding ip less the VXLAN header.
func defaultMTU(h *netlink.Handle, ip netip.Addr) int {
	if ip.IsValid() {
		addrs, err := h.AddrList(nil, family(ip))
		if err == nil {
			for _, a := range addrs {
				if a.IP.Equal(net.IP(ip.AsSlice())) {
					if l, err := h.LinkByIndex(a.LinkIndex); err == nil && l.Attrs().MTU > 68+50 && l.Attrs().Name != "lo" {
						return l.Attrs().MTU - 50
					}
				}
			}
		}
	}
	return 1450
}

// stop removes the masquerade table, the routes to other nodes and the
// VXLAN forwarding entries.
func (b *bridgeNet) stop() {
	n := b.n
	if err := (nft{nsFd: n.nftFd()}).remove(); err != nil {
		n.log.Warn("network: removing the masquerade table", "err", err)
	}
	b.mu.Lock()
	v := b.vxlan
	b.mu.Unlock()
	if err := syncPeers(n.nl, v, nil); err != nil {
		n.log.Warn("network: removing routes to other nodes", "err", err)
	}
}
