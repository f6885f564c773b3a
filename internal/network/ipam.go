package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sync"
)

// ErrRangeFull is returned by Setup when the node's pod CIDR has no free
// address left.
var ErrRangeFull = errors.New("network: no free address in the node's pod CIDR")

// allocation is what the IPAM keeps about one address: who holds it and
// in which namespace, so a restart can tell a live holder from a dead
// one.
type allocation struct {
	ID    string `json:"id"`
	NetNS string `json:"netns"`
}

// ipam hands out addresses from the node's pod CIDRs (one per family),
// as CNI's host-local plugin does: one file per address under dir,
// created with O_EXCL, holding the sandbox ID. The files are the truth;
// the maps are their index. Addresses are handed out round-robin (after
// the last one given) so a released address is not reused at once while
// stale conntrack entries or peers' caches may still name it.
type ipam struct {
	dir string

	mu     sync.Mutex
	ranges []netip.Prefix
	byIP   map[netip.Addr]allocation
	last   map[netip.Prefix]netip.Addr
}

// openIPAM loads the allocations under dir (created if missing).
func openIPAM(dir string) (*ipam, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("network: ipam: %w", err)
	}
	m := &ipam{dir: dir, byIP: map[netip.Addr]allocation{}, last: map[netip.Prefix]netip.Addr{}}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("network: ipam: %w", err)
	}
	for _, e := range ents {
		ip, err := netip.ParseAddr(e.Name())
		if err != nil {
			continue // a temp file or something not ours
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("network: ipam: %w", err)
		}
		var a allocation
		if err := json.Unmarshal(b, &a); err != nil || a.ID == "" {
			// A half-written file from a crash: the address is nobody's.
			os.Remove(filepath.Join(dir, e.Name()))
			continue
		}
		m.byIP[ip] = a
	}
	return m, nil
}

// setRanges sets the pod CIDRs to allocate from. Addresses held outside
// them (the node's CIDR changed under running pods) stay held until
// released, and are reported.
func (m *ipam) setRanges(r []netip.Prefix) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ranges = slices.Clone(r)
	outside := 0
	for ip := range m.byIP {
		if !slices.ContainsFunc(r, func(p netip.Prefix) bool { return p.Contains(ip) }) {
			outside++
		}
	}
	if outside > 0 {
		return fmt.Errorf("%d addresses outside %v", outside, r)
	}
	return nil
}

// lookup returns id's addresses, as prefixes of their range's length,
// in range order.
func (m *ipam) lookup(id string) []netip.Prefix {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.lookupLocked(id)
}

func (m *ipam) lookupLocked(id string) []netip.Prefix {
	var out []netip.Prefix
	for _, r := range m.ranges {
		for ip, a := range m.byIP {
			if a.ID == id && r.Contains(ip) {
				out = append(out, netip.PrefixFrom(ip, r.Bits()))
				break
			}
		}
	}
	return out
}

// allocate gives id one address from each range; an id that holds
// addresses already gets the same ones back (Setup may run twice).
// On error nothing stays allocated to id that was not before.
func (m *ipam) allocate(id, nsPath string) ([]netip.Prefix, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.ranges) == 0 {
		return nil, errors.New("network: ipam: no pod CIDR yet")
	}
	var out, made []netip.Prefix
	for _, r := range m.ranges {
		if p, ok := m.heldIn(id, r); ok {
			out = append(out, p)
			continue
		}
		ip, err := m.next(r)
		if err == nil {
			err = m.write(ip, allocation{ID: id, NetNS: nsPath})
		}
		if err != nil {
			for _, p := range made {
				m.removeLocked(p.Addr())
			}
			return nil, fmt.Errorf("%w (%s)", err, r)
		}
		m.last[r] = ip
		p := netip.PrefixFrom(ip, r.Bits())
		out, made = append(out, p), append(made, p)
	}
	return out, nil
}

func (m *ipam) heldIn(id string, r netip.Prefix) (netip.Prefix, bool) {
	for ip, a := range m.byIP {
		if a.ID == id && r.Contains(ip) {
			return netip.PrefixFrom(ip, r.Bits()), true
		}
	}
	return netip.Prefix{}, false
}

// next finds the first free address after the last one handed out in r,
// wrapping once; the network address, the gateway (first host) and the
// IPv4 broadcast address are never handed out.
func (m *ipam) next(r netip.Prefix) (netip.Addr, error) {
	r = r.Masked()
	first := r.Addr().Next().Next() // .0 network, .1 gateway
	start := first
	if l, ok := m.last[r]; ok && r.Contains(l) {
		if n := l.Next(); r.Contains(n) {
			start = n
		}
	}
	for ip, wrapped := start, false; ; {
		if !r.Contains(ip) || (ip.Is4() && ip == lastAddr(r)) {
			if wrapped {
				return netip.Addr{}, ErrRangeFull
			}
			ip, wrapped = first, true
			continue
		}
		if wrapped && ip == start {
			return netip.Addr{}, ErrRangeFull
		}
		if _, taken := m.byIP[ip]; !taken {
			return ip, nil
		}
		ip = ip.Next()
	}
}

// lastAddr is r's last address (the IPv4 broadcast).
func lastAddr(r netip.Prefix) netip.Addr {
	b := r.Masked().Addr().AsSlice()
	for i := r.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 1 << (7 - i%8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

func (m *ipam) write(ip netip.Addr, a allocation) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(m.dir, ip.String()), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("network: ipam: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("network: ipam: %w", err)
	}
	m.byIP[ip] = a
	return nil
}

// release frees every address id holds; releasing nothing is fine.
func (m *ipam) release(id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for ip, a := range m.byIP {
		if a.ID == id {
			errs = append(errs, m.removeLocked(ip))
		}
	}
	return errors.Join(errs...)
}

func (m *ipam) removeLocked(ip netip.Addr) error {
	if err := os.Remove(filepath.Join(m.dir, ip.String())); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("network: ipam: %w", err)
	}
	delete(m.byIP, ip)
	return nil
}

// holders returns every sandbox ID holding an address, with the netns
// it was given for.
func (m *ipam) holders() map[string]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]string{}
	for _, a := range m.byIP {
		out[a.ID] = a.NetNS
	}
	return out
}
