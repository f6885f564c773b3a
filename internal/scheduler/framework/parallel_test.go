package framework

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// TestUntilChunksCoversEveryItemOnce runs bursts back to back (helpers
// warm), from several goroutines at once (one holds the helpers, the
// others start their own) and nested inside a burst, and checks that
// every item is handed out exactly once and all are done on return.
func TestUntilChunksCoversEveryItemOnce(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, p Parallelizer, n, chunk int) {
		t.Helper()
		seen := make([]atomic.Int32, n)
		p.UntilChunks(ctx, n, chunk, func(lo, hi int) {
			if hi-lo > chunk || lo%chunk != 0 {
				t.Errorf("range [%d, %d) with chunk %d", lo, hi, chunk)
			}
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
		})
		for i := range seen {
			if c := seen[i].Load(); c != 1 {
				t.Fatalf("n %d chunk %d: item %d done %d times", n, chunk, i, c)
			}
		}
	}
	for _, par := range []int{1, 2, 4} {
		p := NewParallelizer(par)
		t.Run(fmt.Sprintf("parallelism %d sequential", par), func(t *testing.T) {
			for round := range 200 {
				check(t, p, []int{0, 1, 31, 64, 500, 5000}[round%6], []int{1, 16, 32, 64}[round%4])
			}
		})
		t.Run(fmt.Sprintf("parallelism %d concurrent callers", par), func(t *testing.T) {
			var wg sync.WaitGroup
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range 50 {
						check(t, p, 1000, 16)
					}
				}()
			}
			wg.Wait()
		})
		t.Run(fmt.Sprintf("parallelism %d nested", par), func(t *testing.T) {
			var total atomic.Int64
			p.UntilChunks(ctx, 256, 32, func(lo, hi int) {
				p.Until(ctx, 100, func(int) { total.Add(1) })
			})
			if got := total.Load(); got != 8*100 {
				t.Fatalf("nested calls did %d items, want 800", got)
			}
		})
	}
}

// TestUntilChunksStopsOnCancel: once ctx ends no new range is handed out.
func TestUntilChunksStopsOnCancel(t *testing.T) {
	p := NewParallelizer(2)
	for range 50 {
		ctx, cancel := context.WithCancel(context.Background())
		var ranges atomic.Int32
		p.UntilChunks(ctx, 10000, 10, func(lo, hi int) {
			if ranges.Add(1) == 3 {
				cancel()
			}
		})
		// The goroutines inside a range when it was cancelled may each
		// finish theirs; nothing after.
		if got := ranges.Load(); got > 3+1 {
			t.Fatalf("%d ranges ran after cancel at the third", got)
		}
		cancel()
	}
}
