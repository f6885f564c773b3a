package framework

import (
	"context"
	"math"
	"runtime"
	"sync/atomic"
	"time"
)

// NewParallelizer returns a Pool using n goroutines (GOMAXPROCS when
// n <= 0), the caller's included. Work is handed out in chunks so that
// cheap per-node functions are not dominated by coordination.
//
// A scheduling cycle runs two parallel sections (Filter and Score) of
// 10–30 µs each, tens of thousands of times a second during a burst. A
// goroutine started for each section arrives too late to help: an idle
// core takes about as long to wake as the section lasts, and the caller
// did 98 % of the work alone. So a helper stays: after a section it waits
// for the next one, spinning (PAUSE) and yielding its core every few
// microseconds to whatever else is runnable, for helperSpin while the
// scheduling loop has pods waiting (Pool.Busy) and helperGrace when it
// does not. During a burst the helpers are there when a section starts;
// a scheduler keeping up with arrivals, or idle, keeps no core spinning.
// Whether helpers pay at all is measured on the live work (trial.go).
func NewParallelizer(n int) *Pool {
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return &Pool{n: n}
}

// How long an idle helper waits for the next section: helperSpin during
// a burst (longer than the gap between two sections of a cycle or of
// consecutive cycles, short enough that a longer stretch of serial work
// does not keep a core spinning), helperGrace otherwise.
const (
	helperSpin  = 30 * time.Microsecond
	helperGrace = 5 * time.Microsecond
	// spinPauses is how many PAUSE instructions (tens of nanoseconds
	// each) a helper waits between two looks for a new section.
	spinPauses = 4
)

// Pool is the Parallelizer of a scheduler: its helpers are shared by
// every section the scheduler runs.
type Pool struct {
	n int
	// section is the latest one started (nil when none is); helpers
	// join it until its ranges run out.
	section atomic.Pointer[section]
	// helpers alive, joined or waiting for a section.
	helpers atomic.Int32
	// busy says the scheduling loop is in a burst (see Busy).
	busy  atomic.Bool
	trial trial
}

// Busy tells the pool whether the scheduling loop is in a burst, with
// pods waiting behind the current one (true), or keeping up with
// arrivals (false), which is how long idle helpers wait for the next
// section.
func (p *Pool) Busy(b bool) {
	if p.busy.Load() != b {
		p.busy.Store(b)
	}
}

// section is one UntilChunks call's work.
type section struct {
	// done is the caller's ctx.Done(), read once: ctx.Err() of a
	// cancelled context takes its mutex, which the goroutines of a
	// section would then contend for on every range.
	done     <-chan struct{}
	n, chunk int
	fn       func(lo, hi int) bool
	// next is the start of the next range to hand out; >= n when none
	// is left (the caller sets it past n when it returns early).
	next atomic.Int64
	// running counts goroutines that may be inside fn, so the caller
	// returns only after every range it handed out has finished.
	running atomic.Int32
	// handed counts the items of the ranges handed out.
	handed atomic.Int64
}

// parMinPerWorker is how many items a worker must have before another
// goroutine is worth its hand-off: below ~32 cheap per-node calls the
// coordination costs more than it saves.
const parMinPerWorker = 32

func (p *Pool) Until(ctx context.Context, n int, fn func(i int)) {
	workers := p.workersFor(n)
	chunk := max(1, min(64, n/(workers*4)))
	p.UntilChunks(ctx, n, chunk, func(lo, hi int) bool {
		for i := lo; i < hi; i++ {
			fn(i)
		}
		return true
	})
}

func (p *Pool) workersFor(n int) int {
	return max(1, min(p.n, n/parMinPerWorker))
}

// UntilChunks hands out [lo, hi) ranges of at most chunk items, in
// increasing order, to up to p goroutines, the caller's among them, and
// checks ctx between ranges; once fn returns false no further range is
// handed out. It returns when every range handed out has finished.
func (p *Pool) UntilChunks(ctx context.Context, n, chunk int, fn func(lo, hi int) bool) {
	if n <= 0 {
		return
	}
	chunk = max(1, chunk)
	workers := p.workersFor(n)
	if workers == 1 {
		p.alone(ctx, n, chunk, fn)
		return
	}
	start := monotonic()
	if p.trial.solo() {
		done := p.alone(ctx, n, chunk, fn)
		p.trial.record(monotonic()-start, done)
		return
	}
	s := &section{done: ctx.Done(), n: n, chunk: chunk, fn: fn}
	// A newer section replaces an older one still running (another
	// caller's, or one nested in it): the older one's caller finishes
	// its ranges alone, which is correct, only slower.
	p.section.Store(s)
	for h := p.helpers.Load(); h < int32(workers-1); h = p.helpers.Load() {
		if p.helpers.CompareAndSwap(h, h+1) {
			go p.help(s)
		}
	}
	s.work()
	// No range is handed out after this (ctx or fn may have stopped
	// the caller with ranges left); wait for the helpers inside one.
	s.next.Store(math.MaxInt64 / 2)
	for s.running.Load() > 0 {
		// Also lets the goroutines queued behind this one run (the
		// binding cycles, which a helper waiting on the other core does
		// not take): they get the core between sections.
		runtime.Gosched()
	}
	p.section.CompareAndSwap(s, nil)
	p.trial.record(monotonic()-start, int(s.handed.Load()))
}

// alone runs the ranges on the caller's goroutine and returns how many
// items it handed out.
func (p *Pool) alone(ctx context.Context, n, chunk int, fn func(lo, hi int) bool) int {
	for lo := 0; lo < n; lo += chunk {
		if ctx.Err() != nil || !fn(lo, min(lo+chunk, n)) {
			return min(lo+chunk, n)
		}
	}
	return n
}

// epoch is where monotonic counts from.
var epoch = time.Now()

// monotonic is the time in nanoseconds since epoch, from the monotonic
// clock.
func monotonic() int64 { return int64(time.Since(epoch)) }

// work runs ranges of s until none is left, ctx ends or fn says stop.
func (s *section) work() {
	s.running.Add(1)
	handed := 0
	defer func() {
		s.handed.Add(int64(handed))
		s.running.Add(-1)
	}()
	for {
		select {
		case <-s.done:
			return
		default:
		}
		lo := s.next.Add(int64(s.chunk)) - int64(s.chunk)
		if lo >= int64(s.n) {
			return
		}
		handed += min(s.chunk, s.n-int(lo))
		if !s.fn(int(lo), min(int(lo)+s.chunk, s.n)) {
			// Ranges handed out after this one find none left.
			s.next.Store(math.MaxInt64 / 2)
			return
		}
	}
}

// help joins s, then every later section, until none comes for
// helperSpin.
func (p *Pool) help(s *section) {
	defer p.helpers.Add(-1)
	for {
		s.work()
		last := s
		idle := time.Now()
		for i := 1; ; i++ {
			s = p.section.Load()
			if s != nil && s != last {
				break
			}
			pause(spinPauses)
			if i%16 != 0 {
				continue
			}
			if waited := time.Since(idle); waited > helperSpin || waited > helperGrace && !p.busy.Load() {
				return
			}
			// Every few microseconds the core goes to whatever else
			// is runnable (garbage collection, the binding goroutines)
			// before the wait goes on.
			if i%64 == 0 {
				runtime.Gosched()
			}
		}
	}
}
