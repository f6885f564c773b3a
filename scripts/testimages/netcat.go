package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"

	"time"
)

// netcat is the agnhost image's nc: upstream's image has OpenBSD
// netcat, and the e2e tests call it with options Debian's busybox nc
// lacks (`echo hostName | nc -v -t -w 2 HOST PORT`, `nc -v -z -w 2 HOST
// PORT`, `-u`). It is a client only: connect (TCP, or UDP with -u), send
// stdin, copy what comes back to stdout until the peer closes or -w
// seconds pass with nothing read. Exit 1 when the connection fails.
func netcat() int {
	fs := flag.NewFlagSet("nc", flag.ContinueOnError)
	verbose := fs.Bool("v", false, "report the connection on stderr")
	_ = fs.Bool("t", false, "TCP (the default)")
	udp := fs.Bool("u", false, "UDP")
	zero := fs.Bool("z", false, "only connect, send nothing")
	_ = fs.Bool("n", false, "numeric addresses only (accepted, names still resolve)")
	wait := fs.Int("w", 0, "connect and idle timeout in seconds (0: none)")
	if err := fs.Parse(os.Args[1:]); err != nil || fs.NArg() != 2 {
		fmt.Fprintln(os.Stderr, "usage: nc [-v] [-t|-u] [-z] [-w SECS] HOST PORT")
		return 2
	}
	host, port := fs.Arg(0), fs.Arg(1)
	proto := "tcp"
	if *udp {
		proto = "udp"
	}
	timeout := time.Duration(*wait) * time.Second
	conn, err := net.DialTimeout(proto, net.JoinHostPort(host, port), timeout)
	if err != nil {
		if *verbose {
			fmt.Fprintf(os.Stderr, "nc: connect to %s port %s (%s) failed: %v\n", host, port, proto, err)
		}
		return 1
	}
	defer conn.Close()
	if *verbose {
		fmt.Fprintf(os.Stderr, "Connection to %s %s port [%s/*] succeeded!\n", host, port, proto)
	}
	if *zero {
		return 0
	}
	go func() { _, _ = io.Copy(conn, os.Stdin) }()
	buf := make([]byte, 32<<10)
	for {
		if timeout > 0 {
			_ = conn.SetReadDeadline(time.Now().Add(timeout))
		}
		n, err := conn.Read(buf)
		if n > 0 {
			if _, werr := os.Stdout.Write(buf[:n]); werr != nil {
				return 1
			}
		}
		if err != nil {
			var ne net.Error
			if errors.Is(err, io.EOF) || (errors.As(err, &ne) && ne.Timeout()) {
				return 0
			}
			if *udp {
				// A refused datagram (ICMP port unreachable) is a failure.
				fmt.Fprintln(os.Stderr, "nc:", err)
				return 1
			}
			return 0
		}
	}
}
