package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/rudder-dev/rudder/internal/netns"
	"github.com/rudder-dev/rudder/internal/network"
)

// ThroughputResult is one bulk TCP stream's rate.
type ThroughputResult struct {
	// Path is "veth-direct" (two namespaces on one veth pair, the
	// reference), "host-gw" or "vxlan" (pod to pod across two nodes on
	// the built-in network).
	Path    string        `json:"path"`
	Bytes   int64         `json:"bytes"`
	Elapsed time.Duration `json:"elapsed_ns"`
	Gbps    float64       `json:"gbps"`
}

// throughputRounds is how many turns each path takes: all paths are
// built first, then stream in turn for d/throughputRounds each, so a
// load that comes and goes on a shared machine weighs on each alike.
const throughputRounds = 4

// RunThroughput sends TCP streams for d in all on each path: a Go
// sender on a locked thread in the client namespace, a Go receiver
// discarding in the server's; the rate is what the receiver read, first
// byte to EOF, summed over the rounds.
func RunThroughput(ctx context.Context, d time.Duration) ([]ThroughputResult, error) {
	if d <= 0 {
		return nil, errors.New("bench throughput: duration must be positive")
	}
	type path struct {
		name     string
		lab      *netLab
		src, dst *netns.NS
		ip       string
	}
	var paths []path
	defer func() {
		for _, p := range paths {
			p.lab.close()
		}
	}()
	l, a, b, err := vethLab()
	if err != nil {
		return nil, fmt.Errorf("veth-direct: %w", err)
	}
	paths = append(paths, path{"veth-direct", l, a, b, "10.199.0.2"})
	for _, be := range []network.Backend{network.BackendHostGW, network.BackendVXLAN} {
		l, err := newNetLab(ctx, be, false)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", be, err)
		}
		paths = append(paths, path{name: string(be), lab: l})
		p := &paths[len(paths)-1]
		if p.src, _, err = l.pod(ctx, "a", "sender"); err != nil {
			return nil, err
		}
		if p.dst, p.ip, err = l.pod(ctx, "b", "receiver"); err != nil {
			return nil, err
		}
	}
	out := make([]ThroughputResult, len(paths))
	rx := make([]chan received, len(paths))
	for i, p := range paths {
		out[i].Path = p.name
		if rx[i], err = receiver(p.lab, p.dst, p.ip); err != nil {
			return nil, fmt.Errorf("%s: %w", p.name, err)
		}
	}
	round := d / throughputRounds
	for range throughputRounds {
		for i, p := range paths {
			r, err := stream(p.src, p.ip, rx[i], round)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", p.name, err)
			}
			out[i].Bytes += r.n
			out[i].Elapsed += r.elapsed
		}
	}
	for i := range out {
		if out[i].Elapsed > 0 {
			out[i].Gbps = float64(out[i].Bytes) * 8 / out[i].Elapsed.Seconds() / 1e9
		}
	}
	return out, nil
}

// vethLab is the reference: two namespaces joined by one veth pair.
func vethLab() (*netLab, *netns.NS, *netns.NS, error) {
	dir, err := os.MkdirTemp("", "rudder-bench-veth-")
	if err != nil {
		return nil, nil, nil, err
	}
	l := &netLab{dir: dir}
	a, err := l.netns("a")
	if err == nil {
		var b *netns.NS
		if b, err = l.netns("b"); err == nil {
			if err = vethPair(a, b, "eth0", "10.199.0.1/24", "10.199.0.2/24"); err == nil {
				return l, a, b, nil
			}
		}
	}
	l.close()
	return nil, nil, nil, err
}

type received struct {
	n       int64
	elapsed time.Duration
	err     error
}

func streamAddr(ip string) string { return net.JoinHostPort(ip, strconv.Itoa(serverPort+1)) }

// receiver listens in dst and reports each connection's bytes and time
// from its first byte to EOF.
func receiver(l *netLab, dst *netns.NS, ip string) (chan received, error) {
	got := make(chan received, 8)
	err := l.listen(dst, streamAddr(ip), func(c net.Conn) {
		buf := make([]byte, 256<<10)
		n, err := io.ReadFull(c, buf[:1])
		t0 := time.Now()
		if err == nil {
			var m int64
			m, err = io.CopyBuffer(io.Discard, c, buf)
			n += int(m)
		}
		select {
		case got <- received{int64(n), time.Since(t0), err}:
		default: // a probe nobody waits for
		}
	})
	return got, err
}

// stream sends for d from a locked thread in src to the receiver at ip
// and returns what it received.
func stream(src *netns.NS, ip string, got chan received, d time.Duration) (received, error) {
	addr := streamAddr(ip)
	// Routes to the other node may land a moment after the networks
	// report ready: probe with one byte until one gets through.
	err := poll(context.Background(), 10*time.Second, func() error {
		return src.Do(func() error {
			c, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return err
			}
			defer c.Close()
			_, err = c.Write([]byte{0})
			return err
		})
	})
	if err != nil {
		return received{}, err
	}
	err = src.Do(func() error {
		c, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		buf := make([]byte, 256<<10)
		end := time.Now().Add(d)
		c.SetWriteDeadline(end.Add(5 * time.Second))
		for time.Now().Before(end) {
			if _, err := c.Write(buf); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return received{}, err
	}
	timeout := time.After(10 * time.Second)
	for {
		select {
		case r := <-got:
			if r.n <= 1 {
				continue // a probe's
			}
			return r, r.err
		case <-timeout:
			return received{}, errors.New("receiver did not see the end of the stream")
		}
	}
}
