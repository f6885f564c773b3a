package dns

import (
	"context"
	"net/netip"
	"slices"
	"strings"

	"github.com/miekg/dns"
)

// kube answers the cluster zone and the reverse zones (CoreDNS's
// kubernetes plugin with "pods insecure" and "fallthrough in-addr.arpa
// ip6.arpa", the Corefile every kubeadm cluster runs).
type kube struct {
	ix     *index
	zones  []string // lower case, fully qualified; the first is the cluster domain
	domain string   // the cluster domain, for PTR targets
	ttl    uint32
	// localIPs are the addresses this server is reached on: the NS
	// records name the Services whose endpoints they are.
	localIPs []netip.Addr
	// resolve answers a name outside the cluster zone (an ExternalName's
	// target) as the whole server would; nil msg when nothing came back.
	resolve func(ctx context.Context, w dns.ResponseWriter, req *dns.Msg, name string, qtype uint16) *dns.Msg
}

// matchZone is the longest zone of k's that name (lower case) is in, ""
// if none.
func (k *kube) matchZone(name string) string {
	zone := ""
	for _, z := range k.zones {
		if inZone(name, z) && len(z) > len(zone) {
			zone = z
		}
	}
	return zone
}

// inZone: name is zone or below it (both lower case, fully qualified);
// dns.IsSubDomain without its allocations, on the hot path.
func inZone(name, zone string) bool {
	if len(name) == len(zone) {
		return name == zone
	}
	return len(name) > len(zone) && name[len(name)-len(zone)-1] == '.' && name[len(name)-len(zone):] == zone &&
		(len(name) < len(zone)+2 || name[len(name)-len(zone)-2] != '\\')
}

// fallthroughZone: a name error here is handed to the forwarder.
func fallthroughZone(zone string) bool { return zone == "in-addr.arpa." || zone == "ip6.arpa." }

// serve answers r for zone (lower case), writing the reply to w. It
// returns false with an rcode when the caller must write an error reply
// itself, and next when the name belongs to the forwarder.
func (k *kube) serve(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, zone string) (rcode int, written, next bool) {
	qname := r.Question[0].Name
	q := query{qname: qname, name: strings.ToLower(qname), qtype: r.Question[0].Qtype, zone: qname[len(qname)-len(zone):]}
	var records, extra []dns.RR
	var err error
	truncated := false
	switch q.qtype {
	case dns.TypeA, dns.TypeAAAA:
		records, truncated, err = k.address(ctx, w, r, q, nil)
	case dns.TypeTXT:
		records, err = k.txt(q)
	case dns.TypeCNAME:
		records, err = k.cname(q)
	case dns.TypePTR:
		records, err = k.ptr(q)
	case dns.TypeMX:
		_, err = k.lookup(q)
	case dns.TypeSRV:
		records, extra, err = k.srv(q)
	case dns.TypeSOA:
		if qname == q.zone {
			records = []dns.RR{k.soa(q.zone)}
		}
	case dns.TypeAXFR, dns.TypeIXFR:
		return dns.RcodeRefused, false, false
	case dns.TypeNS:
		if q.name == q.zone {
			records, extra = k.ns(q)
			break
		}
		fallthrough
	default:
		// An A lookup tells NODATA from NXDOMAIN for the other types.
		fake := q
		fake.qtype = dns.TypeA
		_, _, err = k.address(ctx, w, r, fake, nil)
	}
	if err == errName {
		if fallthroughZone(zone) {
			return 0, false, true
		}
		rc := dns.RcodeNameError
		if !k.ix.hasSynced() {
			rc = dns.RcodeServerFailure
		}
		k.negative(w, r, q.zone, rc)
		return rc, true, false
	}
	if err != nil {
		return dns.RcodeServerFailure, false, false
	}
	if len(records) == 0 {
		k.negative(w, r, q.zone, dns.RcodeSuccess)
		return dns.RcodeSuccess, true, false
	}
	m := new(dns.Msg)
	m.SetReply(r)
	m.Truncated = truncated
	m.Authoritative = true
	m.Answer = records
	m.Extra = extra
	w.WriteMsg(m)
	return dns.RcodeSuccess, true, false
}

// negative writes an empty answer with the zone's SOA: NXDOMAIN, NODATA
// (rcode success) or SERVFAIL before the first sync.
func (k *kube) negative(w dns.ResponseWriter, r *dns.Msg, zone string, rcode int) {
	m := new(dns.Msg)
	m.SetRcode(r, rcode)
	m.Authoritative = true
	m.Ns = []dns.RR{k.soa(zone)}
	w.WriteMsg(m)
}

// soa is the zone's SOA: its TTL and minimum (the negative-caching TTL)
// are the records' TTL; the serial is when the index last changed.
func (k *kube) soa(zone string) dns.RR {
	return &dns.SOA{
		Hdr:    dns.RR_Header{Name: zone, Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: min(k.ttl, 300)},
		Ns:     dnsJoin("ns.dns", zone),
		Mbox:   dnsJoin("hostmaster", zone),
		Serial: uint32(k.ix.modified.Load()), Refresh: 7200, Retry: 1800, Expire: 86400, Minttl: k.ttl,
	}
}

func dnsJoin(label, zone string) string {
	if zone == "." {
		return label + "."
	}
	return label + "." + zone
}

// lookup resolves q's name to targets as CoreDNS's Services does for
// every type but PTR.
func (k *kube) lookup(q query) ([]target, error) {
	switch q.qtype {
	case dns.TypeTXT:
		if trimZone(q.name, q.zone) == "dns-version" {
			return []target{{text: dnsSchemaVersion, ttl: 28800}}, nil
		}
		if t, _ := k.targets(q); len(t) > 0 {
			return nil, nil // the name has records of other types
		}
		return nil, errName
	case dns.TypeNS:
		return k.nsTargets(q.zone), nil
	}
	if strings.Index(q.name, "ns.dns.") == 0 && strings.Index(q.name, q.zone) == len("ns.dns.") {
		var out []target
		for _, t := range k.nsTargets(q.zone) {
			if (t.ip.Is4() && q.qtype == dns.TypeA) || (t.ip.Is6() && q.qtype == dns.TypeAAAA) {
				t.name = q.qname
				out = append(out, t)
			}
		}
		return out, nil
	}
	t, err := k.targets(q)
	if q.qtype != dns.TypeSRV {
		return t, err
	}
	internal := t[:0:0]
	for _, x := range t {
		if x.ip.IsValid() {
			internal = append(internal, x)
		}
	}
	return internal, err
}

// nsTargets are the name servers of the zone: the Services (their
// cluster IPs, or for a headless one the endpoint itself) whose endpoints
// are this server's addresses; ns.dns.<zone> with those addresses when
// none is.
func (k *kube) nsTargets(zone string) []target {
	var out []target
	found := false
	k.ix.mu.RLock()
	for _, ip := range k.localIPs {
		for _, s := range k.ix.byIP[ip] {
			found = true
			svc := k.ix.services[s.service]
			if svc == nil {
				continue
			}
			name := svc.name + "." + svc.namespace + ".svc." + zone
			if svc.headless {
				for _, e := range s.endpoints {
					out = append(out, target{ip: e.ip, ttl: k.ttl, name: e.name() + "." + name})
				}
				continue
			}
			for _, cip := range svc.clusterIPs {
				out = append(out, target{ip: cip, ttl: k.ttl, name: name})
			}
		}
	}
	k.ix.mu.RUnlock()
	if !found {
		for _, ip := range k.localIPs {
			out = append(out, target{ip: ip, ttl: k.ttl, name: "ns.dns." + zone})
		}
	}
	return out
}

func addressRR(name string, ip netip.Addr, ttl uint32) dns.RR {
	if ip.Is4() {
		return &dns.A{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: ttl}, A: ip.AsSlice()}
	}
	return &dns.AAAA{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: ttl}, AAAA: ip.AsSlice()}
}

// maxCNAMEChain bounds ExternalName services pointing at one another.
const maxCNAMEChain = 10

// address answers A and AAAA: the addresses of the family asked, and for
// an ExternalName its CNAME followed by the target's addresses (looked
// up in the cluster zone, or forwarded).
func (k *kube) address(ctx context.Context, w dns.ResponseWriter, r *dns.Msg, q query, chain []dns.RR) (records []dns.RR, truncated bool, err error) {
	targets, err := k.lookup(q)
	if err != nil {
		return nil, false, err
	}
	var seen []netip.Addr // few: a linear scan beats a map
	for _, t := range targets {
		if t.ip.IsValid() {
			if (q.qtype == dns.TypeA) != t.ip.Is4() || slices.Contains(seen, t.ip) {
				continue
			}
			seen = append(seen, t.ip)
			records = append(records, addressRR(q.qname, t.ip, t.ttl))
			continue
		}
		host := dns.Fqdn(t.host)
		if q.name == strings.ToLower(host) || dns.IsSubDomain(q.name, host) || len(chain) > maxCNAMEChain {
			continue
		}
		cname := &dns.CNAME{Hdr: dns.RR_Header{Name: q.qname, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: t.ttl}, Target: host}
		if duplicateCNAME(cname, chain) {
			continue
		}
		if dns.IsSubDomain(q.zone, host) {
			next := query{qname: host, name: strings.ToLower(host), qtype: q.qtype, zone: q.zone}
			more, tc, err := k.address(ctx, w, r, next, append(chain, cname))
			if err == nil && len(more) > 0 {
				records = append(append(records, cname), more...)
			}
			truncated = truncated || tc
			continue
		}
		m := k.resolve(ctx, w, r, host, q.qtype)
		if m == nil {
			continue
		}
		truncated = truncated || m.Truncated
		records = append(append(records, cname), m.Answer...)
	}
	return records, truncated, nil
}

func duplicateCNAME(c *dns.CNAME, chain []dns.RR) bool {
	for _, rr := range chain {
		if x, ok := rr.(*dns.CNAME); ok && x.Target == c.Target {
			return true
		}
	}
	return false
}

func (k *kube) txt(q query) ([]dns.RR, error) {
	targets, err := k.lookup(q)
	var out []dns.RR
	for _, t := range targets {
		out = append(out, &dns.TXT{Hdr: dns.RR_Header{Name: q.qname, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: t.ttl}, Txt: []string{t.text}})
	}
	return out, err
}

func (k *kube) cname(q query) ([]dns.RR, error) {
	targets, err := k.lookup(q)
	if err != nil || len(targets) == 0 || targets[0].ip.IsValid() {
		return nil, err
	}
	t := targets[0]
	return []dns.RR{&dns.CNAME{Hdr: dns.RR_Header{Name: q.qname, Rrtype: dns.TypeCNAME, Class: dns.ClassINET, Ttl: t.ttl}, Target: dns.Fqdn(t.host)}}, nil
}

func (k *kube) ptr(q query) ([]dns.RR, error) {
	names, err := k.reverse(q)
	var out []dns.RR
	seen := map[string]bool{}
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, &dns.PTR{Hdr: dns.RR_Header{Name: q.qname, Rrtype: dns.TypePTR, Class: dns.ClassINET, Ttl: k.ttl}, Ptr: dns.Fqdn(n)})
		}
	}
	return out, err
}

// srv answers SRV: one record per target and port (weights shared out
// among them), each target's address in the additional section.
func (k *kube) srv(q query) (records, extra []dns.RR, err error) {
	targets, err := k.lookup(q)
	if err != nil {
		return nil, nil, err
	}
	weight := srvWeight(len(targets))
	type key struct {
		name string
		port int32
		ip   netip.Addr
	}
	seen := map[key]bool{}
	for _, t := range targets {
		if t.port == -1 {
			continue
		}
		target := dns.Fqdn(t.name)
		if k := (key{name: target, port: t.port}); !seen[k] {
			seen[k] = true
			records = append(records, &dns.SRV{Hdr: dns.RR_Header{Name: q.qname, Rrtype: dns.TypeSRV, Class: dns.ClassINET, Ttl: t.ttl},
				Priority: 0, Weight: weight, Port: uint16(t.port), Target: target})
		}
		if k := (key{name: target, port: -2, ip: t.ip}); !seen[k] {
			seen[k] = true
			extra = append(extra, addressRR(target, t.ip, t.ttl))
		}
	}
	return records, extra, nil
}

// ns answers the zone apex's NS query.
func (k *kube) ns(q query) (records, extra []dns.RR) {
	seen := map[string]bool{}
	for _, t := range k.nsTargets(q.zone) {
		name := dns.Fqdn(t.name)
		extra = append(extra, addressRR(name, t.ip, t.ttl))
		if !seen[name] {
			seen[name] = true
			records = append(records, &dns.NS{Hdr: dns.RR_Header{Name: q.qname, Rrtype: dns.TypeNS, Class: dns.ClassINET, Ttl: t.ttl}, Ns: name})
		}
	}
	return records, extra
}
