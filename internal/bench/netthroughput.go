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

	"github.com/rudder-dev/rudder/internal/network"
	"github.com/rudder-dev/rudder/internal/proxy"
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

// RunThroughput sends one TCP stream for d on each path: a Go sender on
// a locked thread in the client namespace, a Go receiver discarding in
// the server's; the rate is what the receiver read, first byte to EOF.
func RunThroughput(ctx context.Context, d time.Duration) ([]ThroughputResult, error) {
	if d <= 0 {
		return nil, errors.New("bench throughput: duration must be positive")
	}
	var out []ThroughputResult
	r, err := vethThroughput(d)
	if err != nil {
		return nil, fmt.Errorf("veth-direct: %w", err)
	}
	out = append(out, r)
	for _, b := range []network.Backend{network.BackendHostGW, network.BackendVXLAN} {
		r, err := podThroughput(ctx, b, d)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b, err)
		}
		out = append(out, r)
	}
	return out, nil
}

func vethThroughput(d time.Duration) (ThroughputResult, error) {
	dir, err := os.MkdirTemp("", "rudder-bench-veth-")
	if err != nil {
		return ThroughputResult{}, err
	}
	l := &netLab{dir: dir}
	defer l.close()
	a, err := l.netns("a")
	if err != nil {
		return ThroughputResult{}, err
	}
	b, err := l.netns("b")
	if err != nil {
		return ThroughputResult{}, err
	}
	if err := vethPair(a, b, "eth0", "10.199.0.1/24", "10.199.0.2/24"); err != nil {
		return ThroughputResult{}, err
	}
	r, err := stream(l, a, b, "10.199.0.2", d)
	r.Path = "veth-direct"
	return r, err
}

func podThroughput(ctx context.Context, b network.Backend, d time.Duration) (ThroughputResult, error) {
	l, err := newNetLab(ctx, b, false)
	if err != nil {
		return ThroughputResult{}, err
	}
	defer l.close()
	src, _, err := l.pod(ctx, "a", "sender")
	if err != nil {
		return ThroughputResult{}, err
	}
	dst, ip, err := l.pod(ctx, "b", "receiver")
	if err != nil {
		return ThroughputResult{}, err
	}
	r, err := stream(l, src, dst, ip, d)
	r.Path = string(b)
	return r, err
}

type received struct {
	n       int64
	elapsed time.Duration
	err     error
}

// stream runs one sender in src for d to a receiver at ip in dst.
func stream(l *netLab, src, dst *proxy.NetNS, ip string, d time.Duration) (ThroughputResult, error) {
	addr := net.JoinHostPort(ip, strconv.Itoa(serverPort+1))
	got := make(chan received, 8)
	if err := l.listen(dst, addr, func(c net.Conn) {
		buf := make([]byte, 256<<10)
		n, err := io.ReadFull(c, buf[:1])
		t0 := time.Now()
		if err == nil {
			var m int64
			m, err = io.CopyBuffer(io.Discard, c, buf)
			n += int(m)
		}
		got <- received{int64(n), time.Since(t0), err}
	}); err != nil {
		return ThroughputResult{}, err
	}
	// Routes to the other node may land a moment after the networks
	// report ready.
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
		return ThroughputResult{}, err
	}
	<-got // the probe
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
		return ThroughputResult{}, err
	}
	var r received
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		return ThroughputResult{}, errors.New("receiver did not see the end of the stream")
	}
	if r.err != nil {
		return ThroughputResult{}, r.err
	}
	res := ThroughputResult{Bytes: r.n, Elapsed: r.elapsed}
	if r.elapsed > 0 {
		res.Gbps = float64(r.n) * 8 / r.elapsed.Seconds() / 1e9
	}
	return res, nil
}
