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

func (p parallelizer) Until(ctx context.Context, n int, fn func(i int)) {
	workers := int(p)
	if n <= 0 {
		return
	}
	// Below ~32 items per worker the goroutine hand-off costs more than
	// it saves.
	if workers > n/32 {
		workers = max(1, n/32)
	}
	if workers == 1 {
		for i := 0; i < n; i++ {
			if i&63 == 0 && ctx.Err() != nil {
				return
			}
			fn(i)
		}
		return
	}
	chunk := max(1, min(64, n/(workers*4)))
	var next atomic.Int64
	var wg sync.WaitGroup
	wg.Add(workers)
	for w := 0; w < workers; w++ {
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := int(next.Add(int64(chunk))) - chunk
				if start >= n {
					return
				}
				for i := start; i < min(start+chunk, n); i++ {
					fn(i)
				}
			}
		}()
	}
	wg.Wait()
}
