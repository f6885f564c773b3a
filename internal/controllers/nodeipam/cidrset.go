package nodeipam

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
)

// ErrFull is returned when every node subnet of a cluster CIDR is taken.
var ErrFull = errors.New("no node CIDR left in the cluster CIDR")

// cidrSet cuts one cluster CIDR into node subnets of maskBits and tracks
// which node holds each. It is pure: no I/O, no clock.
type cidrSet struct {
	cluster  netip.Prefix
	maskBits int
	count    uint64 // subnets in the cluster CIDR
	owner    map[uint64]string
	next     uint64 // where the next search starts (round-robin)
}

// maxSubnetBits bounds the subnets per cluster CIDR (2^20, a million
// nodes) so a careless mask cannot ask for a gigantic set.
const maxSubnetBits = 20

func newCIDRSet(cluster netip.Prefix, maskBits int) (*cidrSet, error) {
	cluster = cluster.Masked()
	if maskBits < cluster.Bits() || maskBits > cluster.Addr().BitLen() {
		return nil, fmt.Errorf("node mask /%d does not fit the cluster CIDR %s", maskBits, cluster)
	}
	if maskBits-cluster.Bits() > maxSubnetBits {
		return nil, fmt.Errorf("node mask /%d cuts %s into more than 2^%d subnets", maskBits, cluster, maxSubnetBits)
	}
	return &cidrSet{cluster: cluster, maskBits: maskBits, count: 1 << (maskBits - cluster.Bits()), owner: map[uint64]string{}}, nil
}

// index is the subnet number of p, which must be a node subnet of the set.
func (s *cidrSet) index(p netip.Prefix) (uint64, error) {
	if p.Addr().Is4() != s.cluster.Addr().Is4() || !s.cluster.Contains(p.Addr()) || p.Bits() != s.maskBits {
		return 0, fmt.Errorf("%s is not a /%d subnet of %s", p, s.maskBits, s.cluster)
	}
	off := new(big.Int).Sub(new(big.Int).SetBytes(p.Masked().Addr().AsSlice()), new(big.Int).SetBytes(s.cluster.Addr().AsSlice()))
	return off.Rsh(off, uint(s.cluster.Addr().BitLen()-s.maskBits)).Uint64(), nil
}

// subnet is the subnet numbered i.
func (s *cidrSet) subnet(i uint64) netip.Prefix {
	base := new(big.Int).SetBytes(s.cluster.Addr().AsSlice())
	off := new(big.Int).Lsh(new(big.Int).SetUint64(i), uint(s.cluster.Addr().BitLen()-s.maskBits))
	b := base.Add(base, off).FillBytes(make([]byte, s.cluster.Addr().BitLen()/8))
	a, _ := netip.AddrFromSlice(b)
	return netip.PrefixFrom(a, s.maskBits)
}

// occupy records p as node's. A subnet another node holds stays that
// node's (ok false: a duplicate the API already has).
func (s *cidrSet) occupy(p netip.Prefix, node string) (ok bool, err error) {
	i, err := s.index(p)
	if err != nil {
		return false, err
	}
	if o, taken := s.owner[i]; taken && o != node {
		return false, nil
	}
	s.owner[i] = node
	return true, nil
}

// allocate gives node the next free subnet.
func (s *cidrSet) allocate(node string) (netip.Prefix, error) {
	for k := uint64(0); k < s.count; k++ {
		i := (s.next + k) % s.count
		if _, taken := s.owner[i]; !taken {
			s.owner[i] = node
			s.next = (i + 1) % s.count
			return s.subnet(i), nil
		}
	}
	return netip.Prefix{}, fmt.Errorf("%w %s", ErrFull, s.cluster)
}

// release frees p if node holds it.
func (s *cidrSet) release(p netip.Prefix, node string) {
	if i, err := s.index(p); err == nil && s.owner[i] == node {
		delete(s.owner, i)
	}
}

func (s *cidrSet) contains(p netip.Prefix) bool {
	return p.Addr().Is4() == s.cluster.Addr().Is4() && s.cluster.Contains(p.Addr())
}
