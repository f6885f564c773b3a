package proxy

import (
	"log/slog"
	"net/netip"
	"slices"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
)

// udpFlows matches the conntrack entries a changed UDP service leaves
// stale. UDP has no connection to end, so a client sending to a
// ClusterIP keeps its entry (and its DNAT to the old endpoint, or to
// nothing) for as long as it keeps sending; kube-proxy deletes them.
type udpFlows struct {
	gone      map[netip.AddrPort]bool // endpoints removed: replies came from them
	nowServed map[netip.AddrPort]bool // service addresses that had no endpoints
}

func (f *udpFlows) MatchConntrackFlow(fl *netlink.ConntrackFlow) bool {
	if fl.Forward.Protocol != uint8(protoUDP) {
		return false
	}
	if a, ok := netip.AddrFromSlice(fl.Reverse.SrcIP); ok && f.gone[netip.AddrPortFrom(a.Unmap(), fl.Reverse.SrcPort)] {
		return true
	}
	if a, ok := netip.AddrFromSlice(fl.Forward.DstIP); ok && f.nowServed[netip.AddrPortFrom(a.Unmap(), fl.Forward.DstPort)] {
		return true
	}
	return false
}

// staleUDP works out which flows the change from old to new plans of
// the changed services leaves stale.
func staleUDP(old, changed map[string][]PortPlan) *udpFlows {
	f := &udpFlows{gone: map[netip.AddrPort]bool{}, nowServed: map[netip.AddrPort]bool{}}
	for key, news := range changed {
		for _, o := range old[key] {
			if o.Proto != protoUDP {
				continue
			}
			var n *PortPlan
			for i := range news {
				if news[i].Key == o.Key {
					n = &news[i]
				}
			}
			for _, ep := range o.Endpoints {
				if n == nil || !slices.Contains(n.Endpoints, ep) {
					f.gone[ep] = true
				}
			}
		}
		for _, n := range news {
			if n.Proto != protoUDP || len(n.Endpoints) == 0 {
				continue
			}
			hadEndpoints := false
			for _, o := range old[key] {
				if o.Key == n.Key && len(o.Endpoints) > 0 {
					hadEndpoints = true
				}
			}
			if !hadEndpoints {
				for _, e := range n.ServiceIPs {
					f.nowServed[netip.AddrPortFrom(e.IP, e.Port)] = true
				}
			}
		}
	}
	return f
}

// flushStaleUDP deletes the stale UDP entries in the namespace's
// conntrack table. Failures are logged: the rules are right either way,
// only old flows linger.
func flushStaleUDP(nsPath string, old, changed map[string][]PortPlan) {
	f := staleUDP(old, changed)
	if len(f.gone) == 0 && len(f.nowServed) == 0 {
		return
	}
	ns := netns.None()
	if nsPath != "" {
		h, err := netns.GetFromPath(nsPath)
		if err != nil {
			slog.Warn("proxy: conntrack cleanup", "err", err)
			return
		}
		defer h.Close()
		ns = h
	}
	var h *netlink.Handle
	var err error
	if ns.IsOpen() {
		h, err = netlink.NewHandleAt(ns)
	} else {
		h, err = netlink.NewHandle()
	}
	if err != nil {
		slog.Warn("proxy: conntrack cleanup", "err", err)
		return
	}
	defer h.Close()
	n, err := h.ConntrackDeleteFilters(netlink.ConntrackTable, netlink.FAMILY_V4, f)
	if err != nil {
		slog.Warn("proxy: conntrack cleanup", "err", err)
		return
	}
	if n > 0 {
		slog.Debug("proxy: stale UDP flows deleted", "count", n)
	}
}
