package simnode

import (
	"fmt"
	"math/big"
	"net/netip"
	"sync"
)

// maxPoolSize bounds one node's pool: a node runs at most a few hundred
// pods, so a wide (IPv6) podCIDR need not cost a wide bitmap.
const maxPoolSize = 1 << 16

// ipPool hands out pod IPs from one node's podCIDR, as a host-local IPAM
// plugin does: the network address, the gateway (.1) and the broadcast
// address are never given, and allocation moves round-robin so that an
// address just freed is not handed straight to the next pod. Safe for
// concurrent use.
type ipPool struct {
	mu    sync.Mutex
	first netip.Addr // first address handed out
	size  int
	used  []uint64 // bit i: first+i is in use
	next  int
	inUse int
}

func newIPPool(cidr string) (*ipPool, error) {
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("pod CIDR: %w", err)
	}
	prefix = prefix.Masked()
	hostBits := prefix.Addr().BitLen() - prefix.Bits()
	if hostBits < 2 {
		return nil, fmt.Errorf("pod CIDR %s has no room for pods", prefix)
	}
	size := maxPoolSize
	if hostBits < 17 {
		size = 1<<hostBits - 2 // network and gateway
		if prefix.Addr().Is4() {
			size-- // broadcast
		}
	}
	return &ipPool{first: addAddr(prefix.Addr(), 2), size: size, used: make([]uint64, (size+63)/64)}, nil
}

// allocate returns a free address, or false when the pool is exhausted.
func (p *ipPool) allocate() (netip.Addr, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inUse == p.size {
		return netip.Addr{}, false
	}
	for i := 0; i < p.size; i++ {
		n := (p.next + i) % p.size
		if p.used[n/64]&(1<<(n%64)) == 0 {
			p.used[n/64] |= 1 << (n % 64)
			p.inUse++
			p.next = (n + 1) % p.size
			return addAddr(p.first, uint64(n)), true
		}
	}
	return netip.Addr{}, false
}

// reserve marks an address as taken — one a pod already carries when the
// fleet restarts — and reports whether it belongs to the pool.
func (p *ipPool) reserve(a netip.Addr) bool {
	n, ok := p.offset(a)
	if !ok {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used[n/64]&(1<<(n%64)) == 0 {
		p.used[n/64] |= 1 << (n % 64)
		p.inUse++
	}
	return true
}

// release frees an address; freeing one not in use is a no-op.
func (p *ipPool) release(a netip.Addr) {
	n, ok := p.offset(a)
	if !ok {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used[n/64]&(1<<(n%64)) != 0 {
		p.used[n/64] &^= 1 << (n % 64)
		p.inUse--
	}
}

func (p *ipPool) offset(a netip.Addr) (int, bool) {
	if !a.IsValid() || a.BitLen() != p.first.BitLen() {
		return 0, false
	}
	d := new(big.Int).Sub(new(big.Int).SetBytes(a.AsSlice()), new(big.Int).SetBytes(p.first.AsSlice()))
	if d.Sign() < 0 || !d.IsInt64() || d.Int64() >= int64(p.size) {
		return 0, false
	}
	return int(d.Int64()), true
}

// addAddr returns a+n; callers keep n within the address's prefix.
func addAddr(a netip.Addr, n uint64) netip.Addr {
	b := a.As16()
	carry := n
	for i := 15; i >= 0 && carry > 0; i-- {
		sum := uint64(b[i]) + carry&0xff
		b[i] = byte(sum)
		carry = carry>>8 + sum>>8
	}
	out := netip.AddrFrom16(b)
	if a.Is4() {
		return out.Unmap()
	}
	return out
}

// nodeCIDR is the i-th subnet of maskBits in cluster.
func nodeCIDR(cluster netip.Prefix, maskBits, i int) netip.Prefix {
	step := new(big.Int).Lsh(big.NewInt(int64(i)), uint(cluster.Addr().BitLen()-maskBits))
	return netip.PrefixFrom(addBig(cluster.Masked().Addr(), step), maskBits)
}

func addBig(a netip.Addr, n *big.Int) netip.Addr {
	sum := new(big.Int).Add(new(big.Int).SetBytes(a.AsSlice()), n)
	buf := make([]byte, a.BitLen()/8)
	sum.FillBytes(buf)
	out, _ := netip.AddrFromSlice(buf)
	return out
}
