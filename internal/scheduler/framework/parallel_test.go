package framework

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
		p.UntilChunks(ctx, n, chunk, func(lo, hi int) bool {
			if hi-lo > chunk || lo%chunk != 0 {
				t.Errorf("range [%d, %d) with chunk %d", lo, hi, chunk)
			}
			for i := lo; i < hi; i++ {
				seen[i].Add(1)
			}
			return true
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
			p.UntilChunks(ctx, 256, 32, func(lo, hi int) bool {
				p.Until(ctx, 100, func(int) { total.Add(1) })
				return true
			})
			if got := total.Load(); got != 8*100 {
				t.Fatalf("nested calls did %d items, want 800", got)
			}
		})
	}
}

// TestUntilChunksStopsOnCancel: once ctx ends no new range is handed
// out; a goroutine that was already past its check may start one more.
func TestUntilChunksStopsOnCancel(t *testing.T) {
	p := NewParallelizer(2)
	p.Busy(true)
	for range 200 {
		ctx, cancel := context.WithCancel(context.Background())
		var ranges, after atomic.Int32
		var cancelled atomic.Bool
		p.UntilChunks(ctx, 10000, 10, func(lo, hi int) bool {
			if cancelled.Load() {
				after.Add(1)
			}
			if ranges.Add(1) == 3 {
				cancel()
				cancelled.Store(true)
			}
			return true
		})
		if got := after.Load(); got > 1 {
			t.Fatalf("%d ranges started after cancel returned", got)
		}
		cancel()
	}
}

// TestUntilChunksStopsWhenToldEnough: once fn returns false no new range
// is handed out (findFeasible stops when it found enough nodes).
func TestUntilChunksStopsWhenToldEnough(t *testing.T) {
	p := NewParallelizer(2)
	p.Busy(true)
	for range 200 {
		var ranges atomic.Int32
		p.UntilChunks(context.Background(), 10000, 10, func(lo, hi int) bool {
			return ranges.Add(1) < 5
		})
		// Each goroutine may have been handed one range before it saw
		// the fifth say stop.
		if got := ranges.Load(); got < 5 || got > 5+1 {
			t.Fatalf("%d ranges ran, want 5 (6 with the helper's last)", got)
		}
	}
}

// TestHelpersLeaveWhenIdle: helpers wait for the next section only for a
// moment after the last one, longer while the loop says it is busy; an
// idle pool keeps no goroutine.
func TestHelpersLeaveWhenIdle(t *testing.T) {
	for _, busy := range []bool{false, true} {
		p := NewParallelizer(4)
		p.Busy(busy)
		for range 100 {
			p.UntilChunks(context.Background(), 1000, 10, func(lo, hi int) bool { return true })
		}
		if h := p.helpers.Load(); h > 3 {
			t.Fatalf("%d helpers, parallelism 4 allows 3", h)
		}
		p.Busy(false)
		deadline := time.Now().Add(5 * time.Second)
		for p.helpers.Load() > 0 {
			if time.Now().After(deadline) {
				t.Fatalf("busy %v: %d helpers still waiting 5 s after the last section", busy, p.helpers.Load())
			}
			time.Sleep(time.Millisecond)
		}
	}
}
