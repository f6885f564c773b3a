package network

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"time"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// routeProtocol marks the routes the network owns (rtnetlink protocol
// numbers above the kernel's are free for routing daemons), so it lists,
// replaces and removes its own routes and no one else's.
const routeProtocol = netlink.RouteProtocol(0x52)

// peer is one route to another node's pods.
type peer struct {
	node   string
	dst    netip.Prefix
	nodeIP netip.Addr
	vxlan  bool             // else host-gw: via nodeIP directly
	mac    net.HardwareAddr // the remote VTEP, for vxlan
}

// via is the route's next hop: the node itself, or for VXLAN the
// remote device's address (the CIDR's network address).
func (p peer) via() netip.Addr {
	if p.vxlan {
		return p.dst.Masked().Addr()
	}
	return p.nodeIP
}

// planPeers decides the route to every other node's pod CIDRs: host-gw
// when the node's IP is on a subnet of this node (local), else VXLAN when
// this node has the tunnel and the other published its VTEP; else none.
// Nodes on loopback addresses (simulated nodes) have no pods to reach.
// It is pure: nodes and facts in, routes out, sorted by destination.
func planPeers(selfName string, nodes []*corev1.Node, local []netip.Prefix, backend Backend, haveVXLAN bool) []peer {
	var out []peer
	for _, nd := range nodes {
		if nd.Name == selfName {
			continue
		}
		for _, c := range podCIDRs(nd) {
			ip, ok := nodeAddress(nd, c.Addr().Is4())
			if !ok || ip.IsLoopback() || ip.IsUnspecified() {
				continue
			}
			p := peer{node: nd.Name, dst: c, nodeIP: ip}
			onLink := slices.ContainsFunc(local, func(l netip.Prefix) bool { return l.Contains(ip) })
			mac, macErr := net.ParseMAC(nd.Annotations[AnnotationVTEPMAC])
			switch {
			case onLink && backend != BackendVXLAN:
			case haveVXLAN && c.Addr().Is4() && macErr == nil && backend != BackendHostGW:
				p.vxlan, p.mac = true, mac
			default:
				continue
			}
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b peer) int { return cmp.Compare(a.dst.String(), b.dst.String()) })
	return out
}

// podCIDRs parses a node's spec.podCIDRs (or podCIDR); bad ones are
// skipped.
func podCIDRs(nd *corev1.Node) []netip.Prefix {
	list := nd.Spec.PodCIDRs
	if len(list) == 0 && nd.Spec.PodCIDR != "" {
		list = []string{nd.Spec.PodCIDR}
	}
	var out []netip.Prefix
	for _, s := range list {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		}
	}
	return out
}

// nodeAddress is the node's first InternalIP of the family.
func nodeAddress(nd *corev1.Node, v4 bool) (netip.Addr, bool) {
	for _, a := range nd.Status.Addresses {
		if a.Type != corev1.NodeInternalIP {
			continue
		}
		if ip, err := netip.ParseAddr(a.Address); err == nil && ip.Is4() == v4 {
			return ip, true
		}
	}
	return netip.Addr{}, false
}

// localSubnets are the subnets of the node's own links, but for loopback
// and the network's own devices: where host-gw can reach a node.
func localSubnets(h *netlink.Handle, bridge string) ([]netip.Prefix, error) {
	addrs, err := h.AddrList(nil, unix.AF_UNSPEC)
	if err != nil {
		return nil, fmt.Errorf("network: list addresses: %w", err)
	}
	var out []netip.Prefix
	for _, a := range addrs {
		l, err := h.LinkByIndex(a.LinkIndex)
		if err != nil {
			continue
		}
		name := l.Attrs().Name
		if name == "lo" || name == bridge || name == VXLANDevice {
			continue
		}
		ip, ok := netip.AddrFromSlice(a.IP)
		ones, _ := a.Mask.Size()
		if ok {
			out = append(out, netip.PrefixFrom(ip.Unmap(), ones).Masked())
		}
	}
	return out, nil
}

// syncPeers makes the node's routes (of routeProtocol) and VXLAN entries
// exactly want; nil want removes them all.
func syncPeers(h *netlink.Handle, v *vxlanDev, want []peer) error {
	var errs []error
	keep := map[string]bool{}
	for _, p := range want {
		keep[p.dst.String()] = true
	}
	for _, fam := range []int{unix.AF_INET, unix.AF_INET6} {
		have, err := h.RouteListFiltered(fam, &netlink.Route{Protocol: routeProtocol}, netlink.RT_FILTER_PROTOCOL)
		if err != nil {
			errs = append(errs, fmt.Errorf("network: list routes: %w", err))
			continue
		}
		for _, r := range have {
			if r.Dst == nil || !keep[r.Dst.String()] {
				if err := h.RouteDel(&r); err != nil && !errors.Is(err, unix.ESRCH) {
					errs = append(errs, fmt.Errorf("network: remove route %s: %w", r.Dst, err))
				}
			}
		}
	}
	if v != nil {
		errs = append(errs, syncVXLANEntries(h, v, want))
	}
	for _, p := range want {
		r := &netlink.Route{Dst: ipNet(p.dst), Gw: net.IP(p.via().AsSlice()), Protocol: routeProtocol}
		if p.vxlan {
			if v == nil {
				continue
			}
			r.LinkIndex, r.Flags = v.link.Attrs().Index, int(netlink.FLAG_ONLINK)
		}
		if err := h.RouteReplace(r); err != nil {
			errs = append(errs, fmt.Errorf("network: route %s via %s (node %s): %w", p.dst, p.via(), p.node, err))
		}
	}
	return errors.Join(errs...)
}

// syncVXLANEntries makes the tunnel's neighbour and forwarding entries
// those of want's VXLAN peers.
func syncVXLANEntries(h *netlink.Handle, v *vxlanDev, want []peer) error {
	var errs []error
	idx := v.link.Attrs().Index
	neigh, fdb := map[string]bool{}, map[string]bool{}
	for _, p := range want {
		if p.vxlan {
			neigh[p.via().String()+"/"+p.mac.String()] = true
			fdb[p.mac.String()+"/"+p.nodeIP.String()] = true
		}
	}
	if have, err := h.NeighList(idx, unix.AF_INET); err == nil {
		for _, n := range have {
			if !neigh[n.IP.String()+"/"+n.HardwareAddr.String()] {
				h.NeighDel(&n)
			}
		}
	} else {
		errs = append(errs, fmt.Errorf("network: list %s neighbours: %w", VXLANDevice, err))
	}
	if have, err := h.NeighList(idx, unix.AF_BRIDGE); err == nil {
		for _, n := range have {
			if !fdb[n.HardwareAddr.String()+"/"+n.IP.String()] {
				h.NeighDel(&n)
			}
		}
	} else {
		errs = append(errs, fmt.Errorf("network: list %s forwarding entries: %w", VXLANDevice, err))
	}
	for _, p := range want {
		if !p.vxlan {
			continue
		}
		if err := h.NeighSet(&netlink.Neigh{LinkIndex: idx, Family: unix.AF_INET, State: netlink.NUD_PERMANENT,
			IP: net.IP(p.via().AsSlice()), HardwareAddr: p.mac}); err != nil {
			errs = append(errs, fmt.Errorf("network: neighbour %s of node %s: %w", p.via(), p.node, err))
		}
		if err := h.NeighSet(&netlink.Neigh{LinkIndex: idx, Family: unix.AF_BRIDGE, State: netlink.NUD_PERMANENT,
			Flags: netlink.NTF_SELF, IP: net.IP(p.nodeIP.AsSlice()), HardwareAddr: p.mac}); err != nil {
			errs = append(errs, fmt.Errorf("network: forwarding entry for node %s: %w", p.node, err))
		}
	}
	return errors.Join(errs...)
}

// run watches Nodes and keeps the node's side and the routes to other
// nodes in step with them until ctx ends. Every event asks for one full
// sync (level-based); a failed sync is retried after a pause.
func (b *bridgeNet) run(ctx context.Context) {
	n := b.n
	f := informers.NewSharedInformerFactory(n.cfg.Client, 0)
	inf := f.Core().V1().Nodes()
	kick := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case kick <- struct{}{}:
		default:
		}
	}
	inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: poke, DeleteFunc: poke, UpdateFunc: func(_, o any) { poke(o) },
	})
	lister := inf.Lister()
	f.Start(ctx.Done())
	defer f.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced) {
		return
	}
	n.log.Info("network: waiting for this node's spec.podCIDR (assigned by the node-ipam controller from --cluster-cidr)", "node", n.cfg.NodeName)
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	poke(nil)
	for {
		select {
		case <-ctx.Done():
			return
		case <-kick:
		case <-retry.C:
		}
		nodes, err := lister.List(labels.Everything())
		if err == nil {
			err = b.sync(ctx, nodes)
		}
		if err != nil {
			n.log.Warn("network: sync failed; retrying", "err", err)
			retry.Reset(2 * time.Second)
		}
	}
}

// sync is one pass over the Nodes.
func (b *bridgeNet) sync(ctx context.Context, nodes []*corev1.Node) error {
	n := b.n
	var me *corev1.Node
	for _, nd := range nodes {
		if nd.Name == n.cfg.NodeName {
			me = nd
		}
	}
	if me == nil {
		n.setErrIfNotReady(fmt.Errorf("node %s is not registered yet", n.cfg.NodeName))
		return nil
	}
	ranges := podCIDRs(me)
	if len(ranges) == 0 {
		n.setErrIfNotReady(fmt.Errorf("node %s has no spec.podCIDR yet (is the node-ipam controller running?)", me.Name))
		return nil
	}
	s := self{ranges: ranges}
	if ip, ok := netip.AddrFromSlice(n.cfg.NodeIP); ok {
		s.ip = ip.Unmap()
	} else if ip, ok := nodeAddress(me, true); ok {
		s.ip = ip
	}
	if err := b.apply(s); err != nil {
		return err
	}
	b.mu.Lock()
	v := b.vxlan
	b.mu.Unlock()
	if v != nil && me.Annotations[AnnotationVTEPMAC] != v.mac().String() {
		if err := b.annotate(ctx, v.mac().String()); err != nil {
			return err
		}
	}
	local, err := localSubnets(n.nl, n.cfg.BridgeName)
	if err != nil {
		return err
	}
	return syncPeers(n.nl, v, planPeers(me.Name, nodes, local, n.cfg.Backend, v != nil))
}

// annotate publishes this node's VTEP MAC on its Node.
func (b *bridgeNet) annotate(ctx context.Context, mac string) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationVTEPMAC: mac}}})
	_, err := b.n.cfg.Client.CoreV1().Nodes().Patch(ctx, b.n.cfg.NodeName, types.MergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("network: annotate node %s: %w", b.n.cfg.NodeName, err)
	}
	return nil
}

// setErrIfNotReady records why the network is not ready, unless it is:
// a node whose CIDR is known keeps working while its Node is replaced.
func (n *Network) setErrIfNotReady(err error) {
	select {
	case <-n.ready:
	default:
		n.setErr(err)
	}
}
