package bench

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestNetworkDataPath runs the connect and throughput benchmarks at a
// tiny size, so the namespaces, networks and proxy they build keep
// working; the figures are only checked to be measured.
func TestNetworkDataPath(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to create network namespaces")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	t.Run("connect", func(t *testing.T) {
		rs, err := RunConnect(ctx, 20)
		if err != nil {
			t.Fatal(err)
		}
		if len(rs) != 6 {
			t.Fatalf("got %d results, want 6: %+v", len(rs), rs)
		}
		for _, r := range rs {
			if r.Trips != 20 || r.P50 <= 0 || r.P99 < r.P50 {
				t.Errorf("%+v: want 20 trips and 0 < p50 <= p99", r)
			}
		}
	})
	t.Run("throughput", func(t *testing.T) {
		rs, err := RunThroughput(ctx, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"veth-direct", "host-gw", "vxlan"}
		if len(rs) != len(want) {
			t.Fatalf("got %+v, want paths %v", rs, want)
		}
		for i, r := range rs {
			if r.Path != want[i] || r.Bytes <= 0 || r.Gbps <= 0 {
				t.Errorf("result %d = %+v: want path %s with bytes moved", i, r, want[i])
			}
		}
	})
}

func TestExactQuantiles(t *testing.T) {
	us := func(ns ...int) []time.Duration {
		var ds []time.Duration
		for _, n := range ns {
			ds = append(ds, time.Duration(n)*time.Microsecond)
		}
		return ds
	}
	for _, tc := range []struct {
		name           string
		in             []time.Duration
		p50, p99, mean time.Duration
	}{
		{name: "empty"},
		{name: "one", in: us(7), p50: 7 * time.Microsecond, p99: 7 * time.Microsecond, mean: 7 * time.Microsecond},
		{name: "unsorted", in: us(30, 10, 20, 40), p50: 30 * time.Microsecond, p99: 40 * time.Microsecond, mean: 25 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p50, p99, mean := exactQuantiles(tc.in)
			if p50 != tc.p50 || p99 != tc.p99 || mean != tc.mean {
				t.Errorf("quantiles = %v %v %v, want %v %v %v", p50, p99, mean, tc.p50, tc.p99, tc.mean)
			}
		})
	}
}
