package localcluster

import (
	"errors"
	"fmt"
	"net/netip"
	"sync"

	"github.com/vishvananda/netlink"
)

// The hub reaches the pods too: the API server dials pods from the hub
// for pods/proxy and services/proxy (as upstream's API server reaches the
// pod network), so the hub routes each node's pod CIDR to that node's
// address on the bridge. The routes follow the Node objects (SetPodRoutes)
// and go with the hub namespace.

// podRoutes is what SetPodRoutes last installed.
type podRoutes struct {
	mu  sync.Mutex
	set map[netip.Prefix]netip.Addr
}

// SetPodRoutes makes the hub's routes to pod CIDRs exactly routes (pod
// CIDR → the node address it lives behind): new ones added, changed ones
// replaced, the rest removed.
func (c *Cluster) SetPodRoutes(routes map[netip.Prefix]netip.Addr) error {
	c.routes.mu.Lock()
	defer c.routes.mu.Unlock()
	for p, via := range routes {
		if !c.topo.Subnet.Contains(via) {
			return fmt.Errorf("pod CIDR %s: %s is not on the node subnet %s", p, via, c.topo.Subnet)
		}
	}
	return c.topo.Hub.Do(func() error {
		h, err := netlink.NewHandle()
		if err != nil {
			return err
		}
		defer h.Close()
		var errs []error
		for p, via := range routes {
			if c.routes.set[p] == via {
				continue
			}
			r := &netlink.Route{Dst: ipNet(p.Addr(), p.Bits()), Gw: via.AsSlice()}
			if err := h.RouteReplace(r); err != nil {
				errs = append(errs, fmt.Errorf("route %s via %s: %w", p, via, err))
			}
		}
		for p, via := range c.routes.set {
			if _, keep := routes[p]; keep {
				continue
			}
			if err := h.RouteDel(&netlink.Route{Dst: ipNet(p.Addr(), p.Bits()), Gw: via.AsSlice()}); err != nil {
				errs = append(errs, fmt.Errorf("removing route %s: %w", p, err))
			}
		}
		c.routes.set = routes
		return errors.Join(errs...)
	})
}
