package kubelet

import (
	"bufio"
	"bytes"
	"net"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A pod's resolv.conf, as upstream's kubelet makes it and sends it to the
// runtime in the sandbox's DNSConfig (the runtime writes the file):
//
//   - ClusterFirst (the default) and ClusterFirstWithHostNet: the cluster
//     DNS (Config.ClusterDNS) as the only nameserver, the search path
//     <ns>.svc.<domain> svc.<domain> <domain> then the host's, and
//     options ndots:5 — so "web" and "web.other" resolve in-cluster
//     first. With no cluster DNS configured, the pod gets Default.
//   - ClusterFirst on the host network: Default (only
//     ClusterFirstWithHostNet gives a host-network pod the cluster DNS).
//   - Default: the node's resolv.conf.
//   - None: nothing but spec.dnsConfig.
//
// spec.dnsConfig is then merged in for every policy (nameservers and
// searches appended without duplicates; an option replaces one of the
// same name), and the result cut to the resolver's limits: 3
// nameservers, 32 search domains of at most 2048 characters in all.

// resolvConf is a parsed resolv.conf.
type resolvConf struct {
	servers, searches, options []string
}

// maxResolvConf bounds what is read of the host's file.
const maxResolvConf = 10 << 20

func parseResolvConf(b []byte) resolvConf {
	var rc resolvConf
	if len(b) > maxResolvConf {
		b = b[:maxResolvConf]
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), maxResolvConf)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			rc.servers = append(rc.servers, f[1])
		case "search":
			// The last search line wins; a domain with and without its
			// trailing dot counts once, and "." is no domain.
			rc.searches = nil
			for _, s := range f[1:] {
				if s != "." {
					rc.searches = append(rc.searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			rc.options = mergeOptions(rc.options, f[1:])
		}
	}
	return rc
}

// Upstream's limits on a pod's resolv.conf.
const (
	maxDNSServers     = 3
	maxDNSSearches    = 32
	maxDNSSearchChars = 2048
)

// dnsConfig is the pod's DNS configuration for the runtime.
func (k *Kubelet) dnsConfig(pod *corev1.Pod) *cri.DNSConfig {
	host, err := os.ReadFile(k.cfg.ResolvConf)
	if err != nil {
		k.cfg.Logger.Warn("reading the host's resolv.conf", "path", k.cfg.ResolvConf, "err", err)
	}
	policy := dnsPolicy(pod)
	if (policy == corev1.DNSClusterFirst || policy == corev1.DNSClusterFirstWithHostNet) && len(k.cfg.ClusterDNS) == 0 {
		k.cfg.Logger.Warn("no cluster DNS configured: the pod gets the Default policy", "pod", pod.Namespace+"/"+pod.Name)
	}
	return buildDNSConfig(pod, parseResolvConf(host), k.cfg.ClusterDNS, k.cfg.ClusterDomain)
}

// dnsPolicy is the policy in effect: ClusterFirst on the host network is
// Default.
func dnsPolicy(pod *corev1.Pod) corev1.DNSPolicy {
	switch p := pod.Spec.DNSPolicy; {
	case p == "" || p == corev1.DNSClusterFirst:
		if pod.Spec.HostNetwork {
			return corev1.DNSDefault
		}
		return corev1.DNSClusterFirst
	default:
		return p
	}
}

func buildDNSConfig(pod *corev1.Pod, host resolvConf, clusterDNS []net.IP, domain string) *cri.DNSConfig {
	policy := dnsPolicy(pod)
	if (policy == corev1.DNSClusterFirst || policy == corev1.DNSClusterFirstWithHostNet) && len(clusterDNS) == 0 {
		policy = corev1.DNSDefault
	}
	var c cri.DNSConfig
	switch policy {
	case corev1.DNSDefault:
		c.Servers, c.Searches, c.Options = host.servers, host.searches, host.options
	case corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet:
		for _, ip := range clusterDNS {
			c.Servers = append(c.Servers, ip.String())
		}
		c.Searches = host.searches
		if domain != "" {
			c.Searches = dedupe(append([]string{pod.Namespace + ".svc." + domain, "svc." + domain, domain}, host.searches...))
		}
		c.Options = []string{"ndots:5"}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		c.Servers = dedupe(append(append([]string(nil), c.Servers...), dc.Nameservers...))
		c.Searches = dedupe(append(append([]string(nil), c.Searches...), dc.Searches...))
		var opts []string
		for _, o := range dc.Options {
			opt := o.Name
			if o.Value != nil && *o.Value != "" {
				opt += ":" + *o.Value
			}
			opts = append(opts, opt)
		}
		c.Options = mergeOptions(c.Options, opts)
	}
	if len(c.Servers) > maxDNSServers {
		c.Servers = c.Servers[:maxDNSServers]
	}
	c.Searches = fitSearches(c.Searches)
	return &c
}

// fitSearches cuts the search path to 32 domains, then drops domains
// from its end until it is at most 2048 characters long.
func fitSearches(s []string) []string {
	if len(s) > maxDNSSearches {
		s = s[:maxDNSSearches]
	}
	n := len(strings.Join(s, " "))
	for n > maxDNSSearchChars && len(s) > 0 {
		n -= len(s[len(s)-1]) + 1
		s = s[:len(s)-1]
	}
	return s
}

// mergeOptions appends opts to base; an option ("name" or "name:value")
// replaces an earlier one of the same name in place.
func mergeOptions(base, opts []string) []string {
	out := append([]string(nil), base...)
	for _, o := range opts {
		name, _, _ := strings.Cut(o, ":")
		replaced := false
		for i, e := range out {
			if n, _, _ := strings.Cut(e, ":"); n == name {
				out[i], replaced = o, true
				break
			}
		}
		if !replaced {
			out = append(out, o)
		}
	}
	return out
}

func dedupe(in []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
