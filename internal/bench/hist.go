package bench

import (
	"math"
	"math/bits"
	"time"
)

// The histogram keeps latencies in microseconds in log-linear buckets: every
// value below 256µs has its own bucket, and above that each power of two is
// split into 128 buckets, so a quantile is off by less than 1%. A fixed
// array means recording never allocates, which matters when the watch stage
// records ten million deliveries, and merging per-goroutine histograms is a
// sum, so hot loops never share a lock.
const (
	subBits     = 7
	subCount    = 1 << subBits // buckets per power of two
	maxExponent = 34           // 2^(34+8) µs ≈ 50 days: anything longer is clamped
	histBuckets = (maxExponent + 2) * subCount
)

type histogram struct {
	counts [histBuckets]uint64
	n      uint64
	sumUS  uint64
	maxUS  uint64
}

// bucketOf maps a value to its bucket. For us ≥ 128 the bucket is
// e·128 + (us >> e) where e makes (us >> e) land in [128, 256); below 128
// the formula with e = 0 gives us itself, so the mapping is continuous.
func bucketOf(us uint64) int {
	if us < subCount {
		return int(us)
	}
	e := bits.Len64(us) - subBits - 1
	if e > maxExponent {
		return histBuckets - 1
	}
	return e*subCount + int(us>>e)
}

// bucketValue is the midpoint of a bucket, the value quantiles report.
func bucketValue(i int) float64 {
	if i < 2*subCount {
		return float64(i)
	}
	e := i/subCount - 1
	m := uint64(i - e*subCount)
	lo := m << e
	return float64(lo) + float64(uint64(1)<<e)/2
}

// record adds one duration; negative durations count as zero.
func (h *histogram) record(d time.Duration) {
	us := uint64(0)
	if d > 0 {
		us = uint64(d / time.Microsecond)
	}
	h.counts[bucketOf(us)]++
	h.n++
	h.sumUS += us
	if us > h.maxUS {
		h.maxUS = us
	}
}

// merge adds o's samples to h.
func (h *histogram) merge(o *histogram) {
	for i, c := range o.counts {
		h.counts[i] += c
	}
	h.n += o.n
	h.sumUS += o.sumUS
	if o.maxUS > h.maxUS {
		h.maxUS = o.maxUS
	}
}

// quantileMS returns the q-quantile (0 < q ≤ 1) in milliseconds: the value
// at rank ⌈q·n⌉, as the nearest-rank definition has it. It is 0 with no
// samples.
func (h *histogram) quantileMS(q float64) float64 {
	if h.n == 0 {
		return 0
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	if rank < 1 {
		rank = 1
	}
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			v := bucketValue(i)
			if v > float64(h.maxUS) {
				v = float64(h.maxUS) // the top bucket's midpoint can overshoot
			}
			return v / 1000
		}
	}
	return float64(h.maxUS) / 1000
}

func (h *histogram) maxMS() float64 { return float64(h.maxUS) / 1000 }

func (h *histogram) meanMS() float64 {
	if h.n == 0 {
		return 0
	}
	return float64(h.sumUS) / float64(h.n) / 1000
}

// summary is the latency part of every result row.
type summary struct {
	P50MS  float64 `json:"p50_ms"`
	P99MS  float64 `json:"p99_ms"`
	MaxMS  float64 `json:"max_ms"`
	MeanMS float64 `json:"mean_ms"`
}

func (h *histogram) summary() summary {
	return summary{P50MS: round3(h.quantileMS(0.50)), P99MS: round3(h.quantileMS(0.99)), MaxMS: round3(h.maxMS()), MeanMS: round3(h.meanMS())}
}

// round3 keeps JSON readable: microsecond precision is all the histogram has.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
