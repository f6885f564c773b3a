package dns

import (
	"net"

	"github.com/miekg/dns"
)

// scrubWriter fits every reply to what the client can take, as CoreDNS's
// server does: the client's OPT record is echoed (its size and DO bit,
// version 0, no options), and a reply larger than the client's buffer — 512
// bytes without EDNS, the advertised size with it, 64 KiB over TCP — is
// compressed and, if still too large, cut to whole records with the TC
// bit set, so the client retries over TCP.
type scrubWriter struct {
	dns.ResponseWriter
	req *dns.Msg
}

func (s *scrubWriter) WriteMsg(m *dns.Msg) error {
	sizeAndDo(s.req, m)
	_, tcp := s.RemoteAddr().(*net.TCPAddr)
	size := dns.MaxMsgSize
	if !tcp {
		size = dns.MinMsgSize
		if o := s.req.IsEdns0(); o != nil && int(o.UDPSize()) > size {
			size = int(o.UDPSize())
		}
	}
	m.Truncate(size)
	if !m.Compress && !tcp {
		v4 := true
		if a, ok := s.RemoteAddr().(*net.UDPAddr); ok && a.IP.To4() == nil {
			v4 = false
		}
		if l := m.Len(); (v4 && l > 1480) || (!v4 && l > 1220) {
			m.Compress = true // avoid fragmentation
		}
	}
	return s.ResponseWriter.WriteMsg(m)
}

// sizeAndDo gives m the request's EDNS intent.
func sizeAndDo(req, m *dns.Msg) {
	o := req.IsEdns0()
	if o == nil {
		return
	}
	if mo := m.IsEdns0(); mo != nil {
		mo.Hdr.Name, mo.Hdr.Rrtype = ".", dns.TypeOPT
		mo.SetVersion(0)
		mo.SetUDPSize(o.UDPSize())
		mo.Hdr.Ttl &= 0xff00
		if o.Do() {
			mo.SetDo()
		}
		return
	}
	// The request's size, its DO bit; version and extended rcode 0; no
	// options (none is supported).
	m.Extra = append(m.Extra, &dns.OPT{Hdr: dns.RR_Header{Name: ".", Rrtype: dns.TypeOPT, Class: o.Hdr.Class, Ttl: o.Hdr.Ttl & 0xff00}})
}
