package dns

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
	"k8s.io/client-go/kubernetes"
)

// Config configures a cluster DNS server. Zero fields take the defaults
// named on each.
type Config struct {
	// Client lists and watches Services, EndpointSlices and Namespaces
	// (required).
	Client kubernetes.Interface
	// Addrs are where the server listens, each on UDP and TCP
	// ("127.0.0.1:53"); port 0 picks a free port, the same for both
	// (required).
	Addrs []string
	// ClusterDomain is the cluster zone (cluster.local).
	ClusterDomain string
	// TTL is every record's TTL and the negative-caching TTL of the
	// zone's SOA (5 s, CoreDNS's default).
	TTL uint32
	// Upstreams are the resolvers other names are forwarded to, "ip" or
	// "ip:port"; when empty, the nameservers of ResolvConf
	// (/etc/resolv.conf).
	Upstreams  []string
	ResolvConf string
	// ForwardTimeout bounds one forwarded query to one upstream (2 s);
	// MaxForwards is how many may be in flight at once (1000), the rest
	// are refused.
	ForwardTimeout time.Duration
	MaxForwards    int
	// MaxTCPConns bounds the open TCP connections (1000).
	MaxTCPConns int
	// LocalIPs are the addresses pods reach this server on (the kube-dns
	// endpoints it is): the zone's NS records name their Service. Empty:
	// the non-loopback addresses of Addrs (all the host's, for a
	// wildcard address).
	LocalIPs []net.IP
	// Logger gets the server's logs (slog.Default()).
	Logger *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil {
		return c, errors.New("dns: a client is required")
	}
	if len(c.Addrs) == 0 {
		return c, errors.New("dns: an address to listen on is required")
	}
	if c.ClusterDomain == "" {
		c.ClusterDomain = "cluster.local"
	}
	c.ClusterDomain = strings.ToLower(dns.Fqdn(c.ClusterDomain))
	if _, ok := dns.IsDomainName(c.ClusterDomain); !ok || c.ClusterDomain == "." {
		return c, fmt.Errorf("dns: cluster domain %q is not a domain name", c.ClusterDomain)
	}
	if c.TTL == 0 {
		c.TTL = 5
	}
	if c.TTL > 3600 {
		return c, fmt.Errorf("dns: TTL %d over 3600", c.TTL)
	}
	if c.ResolvConf == "" {
		c.ResolvConf = "/etc/resolv.conf"
	}
	if c.ForwardTimeout == 0 {
		c.ForwardTimeout = 2 * time.Second
	}
	if c.MaxForwards == 0 {
		c.MaxForwards = 1000
	}
	if c.MaxTCPConns == 0 {
		c.MaxTCPConns = 1000
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	c.Logger = c.Logger.With("component", "dns")
	ups := make([]string, 0, len(c.Upstreams))
	for _, u := range c.Upstreams {
		n, err := normalizeUpstream(u)
		if err != nil {
			return c, err
		}
		ups = append(ups, n)
	}
	c.Upstreams = ups
	return c, nil
}
