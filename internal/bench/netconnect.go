package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/rudder-dev/rudder/internal/netns"
	"github.com/rudder-dev/rudder/internal/network"
)

// ConnectResult is one path's connect latency: each round trip is a new
// TCP connection, a 64-byte request, a 64-byte response and the close.
type ConnectResult struct {
	// Placement is "same-node" or "cross-node" (the server pod on the
	// client's node or on the other, host-gw).
	Placement string `json:"placement"`
	// Path is "direct" (pod IP), "clusterip" or "nodeport" (the client
	// node's IP).
	Path    string        `json:"path"`
	Trips   int           `json:"trips"`
	P50     time.Duration `json:"p50_ns"`
	P99     time.Duration `json:"p99_ns"`
	Mean    time.Duration `json:"mean_ns"`
	Elapsed time.Duration `json:"elapsed_ns"`
}

const connectMsg = 64

// RunConnect measures connect+request+response latency from a client
// pod on node a to a server pod on node a and one on node b, directly
// and through a ClusterIP Service and a NodePort programmed by the real
// service proxy on node a. trips round trips per path, after a warm-up.
func RunConnect(ctx context.Context, trips int) ([]ConnectResult, error) {
	if trips < 1 {
		return nil, errors.New("bench connect: trips must be positive")
	}
	l, err := newNetLab(ctx, network.BackendHostGW, true)
	if err != nil {
		return nil, err
	}
	defer l.close()
	client, _, err := l.pod(ctx, "a", "client")
	if err != nil {
		return nil, err
	}
	serve := func(c net.Conn) {
		buf := make([]byte, connectMsg)
		if _, err := io.ReadFull(c, buf); err == nil {
			c.Write(buf)
		}
	}
	type path struct{ placement, name, addr string }
	var paths []path
	for _, pl := range []struct{ placement, node string }{{"same-node", "a"}, {"cross-node", "b"}} {
		srv, ip, err := l.pod(ctx, pl.node, "server-"+pl.node)
		if err != nil {
			return nil, err
		}
		if err := l.listen(srv, net.JoinHostPort(ip, strconv.Itoa(serverPort)), serve); err != nil {
			return nil, err
		}
		svc, err := l.service(ctx, "bench-"+pl.node, ip, pl.node)
		if err != nil {
			return nil, err
		}
		paths = append(paths,
			path{pl.placement, "direct", net.JoinHostPort(ip, strconv.Itoa(serverPort))},
			path{pl.placement, "clusterip", net.JoinHostPort(svc.Spec.ClusterIP, "80")},
			path{pl.placement, "nodeport", net.JoinHostPort(wireA, strconv.Itoa(int(svc.Spec.Ports[0].NodePort)))})
	}
	addrs := make([]string, len(paths))
	for i, p := range paths {
		addrs[i] = p.addr
		// The proxy programs a Service a moment after it exists.
		if err := poll(ctx, 10*time.Second, func() error {
			_, err := connectTrips(client, []string{p.addr}, 1)
			return err
		}); err != nil {
			return nil, fmt.Errorf("%s %s (%s): %w", p.placement, p.name, p.addr, err)
		}
	}
	if _, err := connectTrips(client, addrs, min(50, trips)); err != nil {
		return nil, err
	}
	// The paths take turns, trip by trip, so a load that comes and goes
	// on this shared machine weighs on each of them alike.
	start := time.Now()
	ds, err := connectTrips(client, addrs, trips)
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start)
	var out []ConnectResult
	for i, p := range paths {
		r := ConnectResult{Placement: p.placement, Path: p.name, Trips: trips, Elapsed: elapsed}
		r.P50, r.P99, r.Mean = exactQuantiles(ds[i])
		out = append(out, r)
	}
	return out, nil
}

// connectTrips runs n round trips to each of addrs, taking turns, from
// a locked thread in ns; it returns each address's times.
func connectTrips(ns *netns.NS, addrs []string, n int) ([][]time.Duration, error) {
	ds := make([][]time.Duration, len(addrs))
	err := ns.Do(func() error {
		d := net.Dialer{Timeout: 3 * time.Second}
		msg := make([]byte, connectMsg)
		buf := make([]byte, connectMsg)
		for range n {
			for i, addr := range addrs {
				t0 := time.Now()
				c, err := d.Dial("tcp", addr)
				if err != nil {
					return fmt.Errorf("%s: %w", addr, err)
				}
				c.SetDeadline(t0.Add(3 * time.Second))
				if _, err := c.Write(msg); err != nil {
					c.Close()
					return fmt.Errorf("%s: %w", addr, err)
				}
				if _, err := io.ReadFull(c, buf); err != nil {
					c.Close()
					return fmt.Errorf("%s: %w", addr, err)
				}
				c.Close()
				ds[i] = append(ds[i], time.Since(t0))
			}
		}
		return nil
	})
	return ds, err
}

// exactQuantiles sorts a copy of ds: exact to the nanosecond (the
// histogram in hist.go keeps whole microseconds, coarse beside a 70 µs
// connect).
func exactQuantiles(ds []time.Duration) (p50, p99, mean time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	return at(0.50), at(0.99), sum / time.Duration(len(s))
}
