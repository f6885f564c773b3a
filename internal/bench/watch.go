package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// The watch stage: W watchers of the namespace, opened at a known
// resourceVersion, and writers that update their own pods E times in all,
// at a fixed rate. Every update carries its event number and the wall
// clock at which it was sent, so each watcher can check, on its own, that
// it saw every event exactly once and in order, and how late.
//
// Event i is written by writer i mod Writers, due at start + i/rate. A
// writer that falls behind its schedule writes at once: the achieved rate
// is reported next to the target.

// watcherState is one watcher's view. Only its goroutine writes it until
// the stage's WaitGroup says it is done; got and counted are also read by
// the stage, to know when everyone is done.
type watcherState struct {
	recv       []int64 // monotonic ns since the stage's base when event i arrived; 0 = not yet
	e2e        histogram
	got        atomic.Uint64
	counted    atomic.Bool // reported complete, by the watcher or the stage
	dup, ooo   uint64
	lastRV     int64
	lastSeq    []int // per writer: events of one writer are sequential
	closed     bool  // the stream ended by itself before every event arrived
	firstError string
}

// completion tracks which watchers have every event they should get. The
// target starts at all events and drops, once the writers are done, to the
// events actually written: a failed write must not leave every watcher
// waiting for it until the drain ends.
type completion struct {
	target   atomic.Uint64
	done     chan struct{} // one send per watcher that completed itself
	stopping atomic.Bool   // the stage is over: errors from here on are ours
}

// check reports st complete once, whoever (watcher or stage) sees it first.
func (c *completion) check(st *watcherState) bool {
	return st.got.Load() >= c.target.Load() && st.counted.CompareAndSwap(false, true)
}

// writeLog is what the writers record, by event number.
type writeLog struct {
	ack     []int64 // monotonic ns since base when the write's response arrived
	written []bool
	hists   []histogram // per writer: write latency
	errors  atomic.Int64
	first   atomic.Pointer[string]
}

func runWatch(ctx context.Context, env *env, watchers int) WatchResult {
	cfg := env.cfg
	res := WatchResult{Watchers: watchers, Events: cfg.Events, Writers: cfg.Writers, TargetRate: cfg.EventRate, Decode: cfg.WatchDecode}
	ctx, cancel := context.WithTimeout(ctx, cfg.StageTimeout)
	defer cancel()

	// The writers' pods exist before any watch opens, so their creation is
	// not an event; the watches start at the newest resourceVersion.
	prefix := fmt.Sprintf("watch-w%d", watchers)
	heads := make([]*corev1.Pod, cfg.Writers)
	var startRV atomic.Int64
	for w := range heads {
		p, err := env.pool.get(w).CoreV1().Pods(env.namespace).Create(ctx, env.pods.pod(prefix, w), metav1.CreateOptions{})
		if err != nil {
			res.WriteErrors++
			res.FirstWriteError = err.Error()
			return res
		}
		heads[w] = p
		storeMax(&startRV, p.ResourceVersion)
	}

	// Open the watches, spread over the connections, a few at a time.
	t0 := time.Now()
	streams := make([]watch.Interface, watchers)
	var openErr atomic.Pointer[string]
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := range streams {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			w, err := env.pool.watchPods(ctx, i, env.namespace, cfg.WatchDecode, metav1.ListOptions{
				ResourceVersion: strconv.FormatInt(startRV.Load(), 10),
				TimeoutSeconds:  ptr.To(int64(cfg.StageTimeout / time.Second)),
			})
			if err != nil {
				msg := fmt.Sprintf("watch %d: %v", i, err)
				openErr.CompareAndSwap(nil, &msg)
				return
			}
			streams[i] = w
		}(i)
	}
	wg.Wait()
	res.SetupSeconds = round3(time.Since(t0).Seconds())
	if p := openErr.Load(); p != nil {
		for _, s := range streams {
			if s != nil {
				s.Stop()
			}
		}
		res.FirstError = *p
		res.ClosedEarly = watchers
		return res
	}
	env.logf("watch: %d watches open in %.1fs", watchers, res.SetupSeconds)

	base := time.Now()
	cpu := startCPU()
	states := make([]*watcherState, watchers)
	var done sync.WaitGroup
	comp := &completion{done: make(chan struct{}, watchers)}
	comp.target.Store(uint64(cfg.Events))
	for i, s := range streams {
		st := &watcherState{recv: make([]int64, cfg.Events), lastSeq: make([]int, cfg.Writers)}
		for w := range st.lastSeq {
			st.lastSeq[w] = -1
		}
		states[i] = st
		done.Add(1)
		go func() {
			defer done.Done()
			st.follow(s, comp, base, cfg.Writers)
		}()
	}

	log := &writeLog{ack: make([]int64, cfg.Events), written: make([]bool, cfg.Events), hists: make([]histogram, cfg.Writers)}
	var writers sync.WaitGroup
	for w := 0; w < cfg.Writers; w++ {
		writers.Add(1)
		go func(w int) {
			defer writers.Done()
			log.write(ctx, env, w, heads[w], base, cfg)
		}(w)
	}
	writers.Wait()
	writeSeconds := time.Since(base).Seconds()

	// The writes are done: give the watchers cfg.Drain to receive the rest.
	written := log.count()
	comp.target.Store(uint64(written))
	complete := 0
	for _, st := range states {
		if comp.check(st) {
			complete++
		}
	}
	drain := time.NewTimer(cfg.Drain)
	for complete < watchers {
		select {
		case <-comp.done:
			complete++
		case <-drain.C:
			env.logf("watch: drain of %s ended with %d watchers missing events", cfg.Drain, watchers-complete)
			complete = watchers
		case <-ctx.Done():
			complete = watchers
		}
	}
	drain.Stop()
	comp.stopping.Store(true)
	cancel()
	for _, s := range streams {
		s.Stop()
	}
	done.Wait()
	res = summarizeWatch(res, states, log, writeSeconds)
	res.CPUCores, res.CPUPerDeliveryUS = cpu.read(res.Delivered)
	return res
}

// count is the number of events written.
func (l *writeLog) count() int {
	n := 0
	for _, ok := range l.written {
		if ok {
			n++
		}
	}
	return n
}

// write sends writer w's share of the events, on schedule.
func (l *writeLog) write(ctx context.Context, env *env, w int, cur *corev1.Pod, base time.Time, cfg Config) {
	pods := env.pool.get(w).CoreV1().Pods(env.namespace)
	interval := float64(time.Second) / cfg.EventRate
	timer := time.NewTimer(0)
	defer timer.Stop()
	for i := w; i < cfg.Events; i += cfg.Writers {
		due := base.Add(time.Duration(float64(i) * interval))
		if d := time.Until(due); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				return
			}
		}
		next := cur.DeepCopy()
		next.Annotations[annSeq] = strconv.Itoa(i)
		t0 := time.Now()
		next.Annotations[annSent] = strconv.FormatInt(t0.UnixNano(), 10)
		updated, err := pods.Update(ctx, next, metav1.UpdateOptions{})
		l.ack[i] = int64(time.Since(base))
		l.hists[w].record(time.Since(t0))
		if err != nil {
			l.errors.Add(1)
			msg := err.Error()
			l.first.CompareAndSwap(nil, &msg)
			if apierrors.IsConflict(err) {
				// Nobody else writes this pod, but recover rather than fail
				// every later write of this writer.
				if p, gerr := pods.Get(ctx, cur.Name, metav1.GetOptions{}); gerr == nil {
					cur = p
				}
			}
			continue
		}
		l.written[i] = true
		cur = updated
	}
}

// follow reads one watch until it has every event or the stream ends;
// when the stage is over, stopping the stream closes its channel.
func (st *watcherState) follow(w watch.Interface, comp *completion, base time.Time, writers int) {
	defer w.Stop()
	for ev := range w.ResultChan() {
		now := time.Now()
		if err := st.observe(ev, now, base, writers); err != nil {
			if comp.stopping.Load() {
				return // the stage closed the stream under the decoder
			}
			if st.firstError == "" {
				st.firstError = err.Error()
			}
			if ev.Type == watch.Error {
				break
			}
			continue
		}
		if comp.check(st) {
			comp.done <- struct{}{}
			return
		}
	}
	st.closed = !comp.stopping.Load() && !st.counted.Load()
}

// observe checks and records one event.
func (st *watcherState) observe(ev watch.Event, now, base time.Time, writers int) error {
	if ev.Type == watch.Error {
		return fmt.Errorf("watch error: %v", apierrors.FromObject(ev.Object))
	}
	if ev.Type == watch.Bookmark {
		return nil
	}
	// A *corev1.Pod, or a PartialObjectMetadata when decoding metadata only.
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		return fmt.Errorf("unexpected %s object %T", ev.Type, ev.Object)
	}
	ann := m.GetAnnotations()
	seq, err := strconv.Atoi(ann[annSeq])
	if err != nil || seq < 0 || seq >= len(st.recv) {
		return fmt.Errorf("%s event for %s without an event number", ev.Type, m.GetName())
	}
	sent, err := strconv.ParseInt(ann[annSent], 10, 64)
	if err != nil {
		return errors.New("event without a send time")
	}
	if rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64); err == nil {
		if rv <= st.lastRV {
			st.ooo++
		}
		st.lastRV = rv
	}
	if st.recv[seq] != 0 {
		st.dup++
		return nil
	}
	if w := seq % writers; seq <= st.lastSeq[w] {
		st.ooo++
	} else {
		st.lastSeq[w] = seq
	}
	st.recv[seq] = max(1, int64(now.Sub(base)))
	st.e2e.record(time.Duration(now.UnixNano() - sent))
	st.got.Add(1)
	return nil
}

// summarizeWatch merges the watchers' and writers' records. Lost counts only
// events that were written: a failed write is reported as a write error.
func summarizeWatch(res WatchResult, states []*watcherState, log *writeLog, writeSeconds float64) WatchResult {
	var e2e, ack, wr histogram
	var lastRecv int64
	written := log.count()
	for _, st := range states {
		e2e.merge(&st.e2e)
		res.Delivered += st.got.Load()
		res.Duplicates += st.dup
		res.OutOfOrder += st.ooo
		if st.closed {
			res.ClosedEarly++
		}
		if st.firstError != "" && res.FirstError == "" {
			res.FirstError = st.firstError
		}
		for i, r := range st.recv {
			if r == 0 || !log.written[i] {
				continue
			}
			ack.record(time.Duration(r - log.ack[i]))
			lastRecv = max(lastRecv, r)
		}
	}
	for w := range log.hists {
		wr.merge(&log.hists[w])
	}
	res.Expected = uint64(written) * uint64(len(states))
	if res.Delivered < res.Expected {
		res.Lost = res.Expected - res.Delivered
	}
	res.WriteErrors = int(log.errors.Load())
	if p := log.first.Load(); p != nil {
		res.FirstWriteError = *p
	}
	res.Rate = round3(float64(written) / writeSeconds)
	res.Seconds = round3(time.Duration(lastRecv).Seconds())
	if res.Seconds > 0 {
		res.DeliveriesPerSec = round3(float64(res.Delivered) / res.Seconds)
	}
	res.E2E, res.Ack, res.Write = e2e.summary(), ack.summary(), wr.summary()
	return res
}
