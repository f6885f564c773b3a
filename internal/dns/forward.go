package dns

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// forwarder sends the names the cluster zone does not own to the node's
// resolvers, as CoreDNS's forward plugin does: the same transport the
// client used, a fresh message ID, the upstream's reply passed back
// unchanged (then fitted to the client's buffer). It holds at most
// maxInFlight queries at once and refuses the rest at once, so a flood of
// names to a slow upstream cannot pile up goroutines and memory.
type forwarder struct {
	upstreams []string
	timeout   time.Duration
	sem       chan struct{}
}

// errNoUpstream: every upstream failed or none is configured.
var errNoUpstream = errors.New("no upstream answered")

func newForwarder(upstreams []string, timeout time.Duration, maxInFlight int) *forwarder {
	return &forwarder{upstreams: upstreams, timeout: timeout, sem: make(chan struct{}, maxInFlight)}
}

// exchange asks the upstreams in turn, starting at a random one, and
// returns the first reply that matches the question. errBusy when over
// the in-flight limit.
func (f *forwarder) exchange(ctx context.Context, r *dns.Msg, tcp bool) (*dns.Msg, error) {
	if len(f.upstreams) == 0 {
		return nil, errNoUpstream
	}
	select {
	case f.sem <- struct{}{}:
		defer func() { <-f.sem }()
	default:
		return nil, errBusy
	}
	req := r.Copy()
	id := r.Id
	start := rand.IntN(len(f.upstreams))
	var lastErr error = errNoUpstream
	for i := range f.upstreams {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		up := f.upstreams[(start+i)%len(f.upstreams)]
		req.Id = dns.Id()
		resp, err := f.one(ctx, req, up, tcp)
		if err != nil {
			lastErr = fmt.Errorf("upstream %s: %w", up, err)
			continue
		}
		if len(resp.Question) != 1 || !sameQuestion(resp.Question[0], r.Question[0]) {
			lastErr = fmt.Errorf("upstream %s: reply for another question", up)
			continue
		}
		resp.Id = id
		return resp, nil
	}
	return nil, lastErr
}

// one asks one upstream. Over UDP the reply is read into the client's
// own buffer size: a reply that overflows it (an upstream sending more
// than 512 bytes without EDNS) becomes an empty reply with TC set, so the
// client retries over TCP, as CoreDNS does.
func (f *forwarder) one(ctx context.Context, req *dns.Msg, upstream string, tcp bool) (*dns.Msg, error) {
	network := "udp"
	if tcp {
		network = "tcp"
	}
	d := net.Dialer{Timeout: f.timeout}
	nc, err := d.DialContext(ctx, network, upstream)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	co := &dns.Conn{Conn: nc, UDPSize: dns.MinMsgSize}
	if o := req.IsEdns0(); o != nil && o.UDPSize() > dns.MinMsgSize {
		co.UDPSize = o.UDPSize()
	}
	deadline := time.Now().Add(f.timeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	nc.SetDeadline(deadline)
	if err := co.WriteMsg(req); err != nil {
		return nil, err
	}
	for {
		resp, err := co.ReadMsg()
		if err != nil {
			if !tcp && resp != nil && resp.Id == req.Id && (errors.Is(err, dns.ErrBuf) || strings.Contains(err.Error(), "overflow")) {
				resp.Answer, resp.Ns, resp.Extra = nil, nil, nil
				resp.Truncated = true
				return resp, nil
			}
			if !tcp && (resp == nil && errors.Is(err, dns.ErrShortRead) || resp != nil && resp.Id != req.Id) {
				continue
			}
			return nil, err
		}
		if resp.Id == req.Id {
			return resp, nil
		}
	}
}

var errBusy = errors.New("too many forwarded queries in flight")

func sameQuestion(a, b dns.Question) bool {
	return a.Qtype == b.Qtype && a.Qclass == b.Qclass && dns.CanonicalName(a.Name) == dns.CanonicalName(b.Name)
}

// upstreamsFrom reads the nameservers of a resolv.conf, as host:port.
func upstreamsFrom(path string) ([]string, error) {
	cc, err := dns.ClientConfigFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("dns: resolvers from %s: %w", path, err)
	}
	var out []string
	for _, s := range cc.Servers {
		out = append(out, net.JoinHostPort(s, cc.Port))
	}
	return out, nil
}

// normalizeUpstream accepts "ip" or "ip:port".
func normalizeUpstream(s string) (string, error) {
	if ip := net.ParseIP(s); ip != nil {
		return net.JoinHostPort(s, "53"), nil
	}
	host, p, err := net.SplitHostPort(s)
	if err != nil || net.ParseIP(host) == nil {
		return "", fmt.Errorf("dns: upstream %q is not ip or ip:port", s)
	}
	if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("dns: upstream %q: bad port", s)
	}
	return s, nil
}
