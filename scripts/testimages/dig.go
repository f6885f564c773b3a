package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// dig is the DNS-testing images' dig, enough of it for the e2e DNS
// probes: `dig [+tcp|+notcp] [+noall] [+answer] [+search] [+short] NAME
// [TYPE]`. It asks the first nameserver of /etc/resolv.conf and prints
// the answer section (with +short only the data), one record a line.
// As dig, a name that does not resolve prints nothing and exits 0; a
// server that cannot be reached exits 9.
func dig() int {
	tcp, search, short := false, false, false
	var args []string
	for _, a := range os.Args[1:] {
		switch a {
		case "+tcp":
			tcp = true
		case "+notcp":
			tcp = false
		case "+search":
			search = true
		case "+short":
			short = true
		default:
			if !strings.HasPrefix(a, "+") {
				args = append(args, a)
			}
		}
	}
	if len(args) == 0 || len(args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: dig [+tcp|+notcp] [+search] [+short] NAME [A|AAAA|SRV|PTR|...]")
		return 1
	}
	qtype := dns.TypeA
	if len(args) == 2 {
		t, ok := dns.StringToType[strings.ToUpper(args[1])]
		if !ok {
			fmt.Fprintf(os.Stderr, "dig: unknown type %s\n", args[1])
			return 1
		}
		qtype = t
	}
	cfg, err := dns.ClientConfigFromFile("/etc/resolv.conf")
	if err != nil || len(cfg.Servers) == 0 {
		fmt.Fprintln(os.Stderr, "dig: no nameserver in /etc/resolv.conf")
		return 9
	}
	names := []string{dns.Fqdn(args[0])}
	if search {
		names = cfg.NameList(args[0])
	}
	c := &dns.Client{Timeout: 5 * time.Second}
	if tcp {
		c.Net = "tcp"
	}
	server := net.JoinHostPort(cfg.Servers[0], cfg.Port)
	for _, n := range names {
		m := new(dns.Msg)
		m.SetQuestion(n, qtype)
		r, _, err := c.Exchange(m, server)
		if err != nil {
			fmt.Fprintln(os.Stderr, ";; connection timed out; no servers could be reached:", err)
			return 9
		}
		if r.Rcode != dns.RcodeSuccess || len(r.Answer) == 0 {
			continue
		}
		for _, rr := range r.Answer {
			if short {
				fmt.Println(strings.TrimPrefix(rr.String(), rr.Header().String()))
			} else {
				fmt.Println(rr.String())
			}
		}
		return 0
	}
	return 0
}

// getent is `getent hosts NAME` as glibc's: the name's addresses, from
// /etc/hosts and then DNS with resolv.conf's search list (Go's own
// resolver); exit 2 when it has none.
func getent() int {
	if len(os.Args) != 3 || os.Args[1] != "hosts" {
		fmt.Fprintln(os.Stderr, "usage: getent hosts NAME")
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupHost(ctx, os.Args[2])
	if err != nil || len(addrs) == 0 {
		return 2
	}
	for _, a := range addrs {
		fmt.Printf("%-15s %s\n", a, os.Args[2])
	}
	return 0
}
