package bench

import (
	"math"
	"testing"
	"time"
)

func TestBucketsAreContinuousAndOrdered(t *testing.T) {
	prev := -1
	for us := uint64(0); us < 1<<22; us++ {
		b := bucketOf(us)
		if b != prev && b != prev+1 {
			t.Fatalf("bucketOf(%d) = %d after %d: buckets skip", us, b, prev)
		}
		prev = b
	}
}

func TestQuantiles(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		q       float64
		wantMS  float64
	}{
		{"empty", nil, 0.5, 0},
		{"one value", []time.Duration{3 * time.Millisecond}, 0.99, 3},
		{"median of 1..100ms", seq(100, time.Millisecond), 0.5, 50},
		{"p99 of 1..100ms", seq(100, time.Millisecond), 0.99, 99},
		{"p99 of 1..1000µs", seq(1000, time.Microsecond), 0.99, 0.99},
		{"negative counts as zero", []time.Duration{-time.Second}, 0.5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var h histogram
			for _, d := range tc.samples {
				h.record(d)
			}
			got := h.quantileMS(tc.q)
			if math.Abs(got-tc.wantMS) > tc.wantMS*0.01+0.001 {
				t.Fatalf("quantile %.2f = %.4fms, want %.4fms ±1%%", tc.q, got, tc.wantMS)
			}
		})
	}
}

func TestMergeEqualsRecordingTogether(t *testing.T) {
	var a, b, all histogram
	for i, d := range seq(5000, 37*time.Microsecond) {
		all.record(d)
		if i%2 == 0 {
			a.record(d)
		} else {
			b.record(d)
		}
	}
	a.merge(&b)
	if a != all {
		t.Fatalf("merged histogram differs: n %d vs %d, p99 %.3f vs %.3f", a.n, all.n, a.quantileMS(.99), all.quantileMS(.99))
	}
}

func seq(n int, step time.Duration) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(i+1) * step
	}
	return out
}
