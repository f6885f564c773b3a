package dns

import (
	"errors"
	"math"
	"net/netip"
	"strings"

	"github.com/miekg/dns"
)

// The cluster zone's name scheme, as CoreDNS's kubernetes plugin answers
// it (the Kubernetes DNS specification, schema 1.1.0):
//
//	<svc>.<ns>.svc.<zone>                      A/AAAA: cluster IPs; headless: ready endpoints
//	<host>.<svc>.<ns>.svc.<zone>               one endpoint (hostname, or its address dashed)
//	_<port>._<proto>.<svc>.<ns>.svc.<zone>     SRV per port (named port and protocol)
//	<a-b-c-d>.<ns>.pod.<zone>                  A for that address ("pods insecure")
//	dns-version.<zone>                         TXT "1.1.0"
//	<reverse of an IP>.in-addr.arpa / ip6.arpa PTR to its service or endpoint name
//
// A name is first resolved to targets (what CoreDNS calls services); each
// query type then turns the targets into records. A name that cannot
// exist is errName (NXDOMAIN); a name that exists with no records of the
// type asked is an empty answer (NODATA). Both carry the zone's SOA.

// dnsSchemaVersion is the TXT of dns-version.<zone>.
const dnsSchemaVersion = "1.1.0"

// errName: the name does not exist (NXDOMAIN).
var errName = errors.New("no such name")

// target is one thing a name resolves to: an address (ip valid) or, for
// an ExternalName service, the name it points at (host).
type target struct {
	ip   netip.Addr
	host string
	port int32
	// name is the target's own name: the SRV target and the owner of its
	// additional address record.
	name string
	text string // dns-version's TXT
	ttl  uint32
}

// query is one question as the cluster zone sees it.
type query struct {
	qname string // as asked
	name  string // lower-cased
	qtype uint16
	zone  string // the zone, in the case it was asked in
}

// recordRequest is a parsed cluster name; empty fields were not in it.
type recordRequest struct {
	port, protocol, endpoint, service, namespace, podOrSvc string
}

// parseName splits name (lower case) below zone into its parts.
func parseName(name, zone string) (recordRequest, error) {
	var r recordRequest
	base := trimZone(name, zone)
	if base == "" || base == "svc" || base == "pod" {
		return r, nil // the apex and the two subtrees: NODATA
	}
	var buf [6]string
	segs := splitLabels(base, buf[:0])
	last := len(segs) - 1
	r.podOrSvc = segs[last]
	if r.podOrSvc != "pod" && r.podOrSvc != "svc" {
		return r, errName
	}
	if last--; last < 0 {
		return r, nil
	}
	r.namespace = segs[last]
	if last--; last < 0 {
		return r, nil
	}
	r.service = segs[last]
	if last--; last < 0 {
		return r, nil
	}
	switch last {
	case 0:
		r.endpoint = segs[0]
	case 1:
		r.protocol = strings.TrimPrefix(segs[1], "_")
		r.port = strings.TrimPrefix(segs[0], "_")
	default:
		return r, errName // too long
	}
	return r, nil
}

// splitLabels appends base's labels to out; dns.SplitDomainName, without
// allocating for the short names of the cluster zone.
func splitLabels(base string, out []string) []string {
	if strings.IndexByte(base, '\\') >= 0 {
		return dns.SplitDomainName(base) // escaped dots: the library's parse
	}
	for {
		i := strings.IndexByte(base, '.')
		if i < 0 {
			return append(out, base)
		}
		out = append(out, base[:i])
		base = base[i+1:]
	}
}

// trimZone is name without its last labels that make zone ("" for the
// zone itself).
func trimZone(name, zone string) string {
	i, end := dns.PrevLabel(name, dns.CountLabel(zone))
	if end || i-1 < 0 {
		return ""
	}
	return name[:i-1]
}

// targets resolves a cluster name (CoreDNS's Records).
func (k *kube) targets(q query) ([]target, error) {
	r, err := parseName(q.name, q.zone)
	if err != nil {
		return nil, err
	}
	if r.podOrSvc == "" {
		return nil, nil
	}
	if strings.HasSuffix(q.name, ".in-addr.arpa.") || strings.HasSuffix(q.name, ".ip6.arpa.") {
		return nil, errName
	}
	k.ix.mu.RLock()
	defer k.ix.mu.RUnlock()
	if _, ok := k.ix.namespaces[r.namespace]; !ok {
		return nil, errName
	}
	if r.podOrSvc == "pod" {
		return k.pods(r, q.zone)
	}
	return k.services(r, q.zone)
}

// pods answers <ip-with-dashes>.<ns>.pod.<zone> for any address, as
// CoreDNS's "pods insecure" does.
func (k *kube) pods(r recordRequest, zone string) ([]target, error) {
	if r.service == "" {
		return nil, nil
	}
	ip := strings.ReplaceAll(r.service, "-", ":")
	if strings.Count(r.service, "-") == 3 && !strings.Contains(r.service, "--") {
		ip = strings.ReplaceAll(r.service, "-", ".")
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || a.Zone() != "" {
		return nil, errName
	}
	return []target{{ip: a.Unmap(), port: 0, ttl: k.ttl, name: r.service + "." + r.namespace + ".pod." + zone}}, nil
}

// services resolves names below svc.<zone>; k.ix.mu is held.
func (k *kube) services(r recordRequest, zone string) ([]target, error) {
	if r.service == "" {
		return nil, nil
	}
	key := serviceKey(r.service, r.namespace)
	svc := k.ix.services[key]
	if svc == nil {
		return nil, errName
	}
	base := svc.name + "." + svc.namespace + ".svc." + zone
	var out []target
	found := false
	switch {
	case svc.externalName != "":
		if r.endpoint != "" || r.port != "" || r.protocol != "" {
			return nil, errName
		}
		if _, err := netip.ParseAddr(svc.externalName); err == nil {
			return nil, errName // an address is no CNAME target
		}
		return []target{{host: svc.externalName, ttl: k.ttl, name: base}}, nil
	case svc.headless || r.endpoint != "":
		for _, s := range k.ix.byService[key] {
			for _, e := range s.endpoints {
				if r.endpoint != "" && !strings.EqualFold(r.endpoint, e.name()) {
					continue
				}
				for _, p := range s.ports {
					if !matchPort(r, p) {
						continue
					}
					found = true
					out = append(out, target{ip: e.ip, port: p.num, ttl: k.ttl, name: e.name() + "." + base})
				}
			}
		}
	default:
		for _, p := range svc.ports {
			if !matchPort(r, p) {
				continue
			}
			found = true
			for _, ip := range svc.clusterIPs {
				out = append(out, target{ip: ip, port: p.num, ttl: k.ttl, name: base})
			}
		}
	}
	if !found {
		return nil, errName
	}
	return out, nil
}

func matchPort(r recordRequest, p port) bool {
	return (r.port == "" || strings.EqualFold(r.port, p.name)) && (r.protocol == "" || strings.EqualFold(r.protocol, p.proto))
}

// reverse resolves an address to its service's name, else to the names
// of the endpoints that have it (CoreDNS's Reverse).
func (k *kube) reverse(q query) ([]string, error) {
	ip, ok := reverseAddr(q.name)
	if !ok {
		_, err := k.targets(q)
		return nil, err
	}
	k.ix.mu.RLock()
	defer k.ix.mu.RUnlock()
	if svc := k.ix.serviceByIP[ip]; svc != nil {
		return []string{svc.name + "." + svc.namespace + ".svc." + k.domain}, nil
	}
	var names []string
	for _, s := range k.ix.byIP[ip] {
		svc, _, _ := strings.Cut(s.service, ".")
		for _, e := range s.endpoints {
			if e.ip == ip {
				names = append(names, e.name()+"."+svc+"."+s.namespace+".svc."+k.domain)
			}
		}
	}
	if len(names) == 0 {
		return nil, errName
	}
	return names, nil
}

// reverseAddr reads the address of a full in-addr.arpa or ip6.arpa name.
func reverseAddr(name string) (netip.Addr, bool) {
	var labels []string
	v6 := false
	switch {
	case strings.HasSuffix(name, ".in-addr.arpa."):
		labels = strings.Split(strings.TrimSuffix(name, ".in-addr.arpa."), ".")
	case strings.HasSuffix(name, ".ip6.arpa."):
		labels = strings.Split(strings.TrimSuffix(name, ".ip6.arpa."), ".")
		v6 = true
	default:
		return netip.Addr{}, false
	}
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	if !v6 {
		a, err := netip.ParseAddr(strings.Join(labels, "."))
		return a, err == nil && a.Is4()
	}
	if len(labels) != 32 {
		return netip.Addr{}, false
	}
	var b strings.Builder
	for i, l := range labels {
		if i > 0 && i%4 == 0 {
			b.WriteByte(':')
		}
		b.WriteString(l)
	}
	a, err := netip.ParseAddr(b.String())
	return a, err == nil && a.Is6()
}

// srvWeights gives each SRV record its weight as CoreDNS does: 100
// shared evenly among all targets (duplicates and port-less ones count).
func srvWeight(n int) uint16 {
	if n == 0 {
		return 100
	}
	w := uint16(math.Floor(100.0 / float64(100*n) * 100))
	if w == 0 {
		w = 1
	}
	return w
}
