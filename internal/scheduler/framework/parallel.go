package framework

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
)

// NewParallelizer returns a Parallelizer using n goroutines (GOMAXPROCS
// when n <= 0). Work is handed out in chunks so that cheap per-node
// functions are not dominated by coordination.
func NewParallelizer(n int) Parallelizer {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return parallelizer(n)
}

type parallelizer int

// parMinPerWorker is how many items a worker must have before another
// goroutine is worth its hand-off: below ~32 cheap per-node calls the
// wake-up costs more than it saves.
const parMinPerWorker = 32

func (p parallelizer) Until(ctx context.Context, n int, fn func(i int)) {
	workers := p.workersFor(n)
	chunk := max(1, min(64, n/(workers*4)))
	p.UntilChunks(ctx, n, chunk, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			fn(i)
		}
	})
}

func (p parallelizer) workersFor(n int) int {
	return max(1, min(int(p), n/parMinPerWorker))
}

// UntilChunks hands out [lo, hi) ranges of at most chunk items, in
// increasing order, to up to p goroutines, the caller's among them, and
// checks ctx between ranges.
func (p parallelizer) UntilChunks(ctx context.Context, n, chunk int, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	chunk = max(1, chunk)
	workers := p.workersFor(n)
	if workers == 1 {
		for lo := 0; lo < n; lo += chunk {
			if ctx.Err() != nil {
				return
			}
			fn(lo, min(lo+chunk, n))
		}
		return
	}
	var next atomic.Int64
	work := func() {
		for ctx.Err() == nil {
			lo := int(next.Add(int64(chunk))) - chunk
			if lo >= n {
				return
			}
			fn(lo, min(lo+chunk, n))
		}
	}
	// The caller works too: one goroutine fewer to start and to wait for.
	var wg sync.WaitGroup
	wg.Add(workers - 1)
	for w := 1; w < workers; w++ {
		go func() {
			defer wg.Done()
			work()
		}()
	}
	work()
	wg.Wait()
}
