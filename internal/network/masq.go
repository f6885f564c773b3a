package network

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/google/nftables"
	"github.com/google/nftables/expr"
	"golang.org/x/sys/unix"
)

// TableName is the nftables table (family inet) the network owns: the
// masquerade rules, nothing else. It is replaced whole on every sync and
// deleted on Stop.
const TableName = "rudder-network"

// masqRule is one rule as data: traffic from src leaving for anything
// outside dst is masqueraded to the node's address.
type masqRule struct {
	src, notDst netip.Prefix
}

func (r masqRule) String() string {
	v := "ip"
	if r.src.Addr().Is6() {
		v = "ip6"
	}
	return fmt.Sprintf("%s saddr %s %s daddr != %s masquerade", v, r.src, v, r.notDst)
}

// masqRules renders the rules: for every pod CIDR of the node, traffic
// to outside each cluster CIDR of its family is masqueraded. Pod-to-pod
// traffic (inside the cluster CIDR) keeps its source address.
func masqRules(podCIDRs, clusterCIDRs []netip.Prefix) []masqRule {
	var out []masqRule
	for _, p := range podCIDRs {
		for _, c := range clusterCIDRs {
			if p.Addr().Is4() == c.Addr().Is4() {
				out = append(out, masqRule{src: p.Masked(), notDst: c.Masked()})
			}
		}
	}
	return out
}

// nft writes the table through a netlink connection bound to the node's
// namespace.
type nft struct {
	nsFd int // 0: the process's own namespace
}

func (n nft) conn() (*nftables.Conn, error) {
	if n.nsFd < 0 {
		return nil, errors.New("network: nftables: the node namespace is closed")
	}
	var opts []nftables.ConnOption
	if n.nsFd > 0 {
		opts = append(opts, nftables.WithNetNSFd(n.nsFd))
	}
	c, err := nftables.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("network: nftables: %w", err)
	}
	return c, nil
}

var table = &nftables.Table{Name: TableName, Family: nftables.TableFamilyINet}

// sync replaces the table with one holding rules, in one transaction:
// adding the table first makes the delete succeed when it did not exist.
func (n nft) sync(rules []masqRule) error {
	c, err := n.conn()
	if err != nil {
		return err
	}
	c.AddTable(table)
	c.DelTable(table)
	c.AddTable(table)
	ch := c.AddChain(&nftables.Chain{
		Name:     "postrouting",
		Table:    table,
		Type:     nftables.ChainTypeNAT,
		Hooknum:  nftables.ChainHookPostrouting,
		Priority: nftables.ChainPriorityNATSource,
	})
	for _, r := range rules {
		c.AddRule(&nftables.Rule{Table: table, Chain: ch, Exprs: r.exprs()})
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("network: nftables: write table %s: %w", TableName, err)
	}
	return nil
}

// remove deletes the table; a table already gone is fine.
func (n nft) remove() error {
	c, err := n.conn()
	if err != nil {
		return err
	}
	c.AddTable(table)
	c.DelTable(table)
	if err := c.Flush(); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("network: nftables: delete table %s: %w", TableName, err)
	}
	return nil
}

// exprs compiles the rule: nfproto, then the masked source and
// destination addresses compared to the prefixes.
func (r masqRule) exprs() []expr.Any {
	proto, off, size := byte(unix.NFPROTO_IPV4), uint32(12), uint32(4)
	if r.src.Addr().Is6() {
		proto, off, size = byte(unix.NFPROTO_IPV6), 8, 16
	}
	match := func(p netip.Prefix, offset uint32, op expr.CmpOp) []expr.Any {
		mask := ipNet(p).Mask
		return []expr.Any{
			&expr.Payload{DestRegister: 1, Base: expr.PayloadBaseNetworkHeader, Offset: offset, Len: size},
			&expr.Bitwise{SourceRegister: 1, DestRegister: 1, Len: size, Mask: mask, Xor: make([]byte, size)},
			&expr.Cmp{Op: op, Register: 1, Data: p.Masked().Addr().AsSlice()},
		}
	}
	out := []expr.Any{
		&expr.Meta{Key: expr.MetaKeyNFPROTO, Register: 1},
		&expr.Cmp{Op: expr.CmpOpEq, Register: 1, Data: []byte{proto}},
	}
	out = append(out, match(r.src, off, expr.CmpOpEq)...)
	out = append(out, match(r.notDst, off+size, expr.CmpOpNeq)...)
	return append(out, &expr.Masq{})
}

// rules lists the rules of the table's postrouting chain (for tests and
// for telling whether the table is there).
func (n nft) rules() ([]*nftables.Rule, error) {
	c, err := n.conn()
	if err != nil {
		return nil, err
	}
	return c.GetRules(table, &nftables.Chain{Name: "postrouting", Table: table})
}
