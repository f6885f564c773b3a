//go:build unix

package server

// Crash tests: the server runs as a separate process (this test binary,
// re-executed as TestCrashHelperProcess) so that it can really be killed
// with SIGKILL in the middle of a write storm, and restarted on the same
// data directory. What they hold the server to is the storage promise in
// internal/storage/doc.go: a write the client saw acknowledged survives
// any crash, and resourceVersions never go backwards.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// crashChildEnv carries the data directory to a helper process; its
	// presence is what makes TestCrashHelperProcess run a server.
	crashChildEnv = "RUDDER_CRASH_CHILD"
	// crashReadyLine prefixes the line a helper prints once it serves:
	// "<prefix> <url> <kubeconfig>".
	crashReadyLine = "RUDDER_CRASH_READY"
	crashNamespace = "default"
	crashLabel     = "rudder.dev/crash-writer"
)

// TestCrashHelperProcess is not a test of its own: it is the server process
// the crash tests start, kill and restart. It runs like `rudder server`:
// until SIGTERM or SIGINT, then shuts down cleanly and exits 0. It also
// stops when its stdin closes, so it never outlives a parent that died.
func TestCrashHelperProcess(t *testing.T) {
	dir := os.Getenv(crashChildEnv)
	if dir == "" {
		t.Skip("helper process of the crash tests; runs only when they start it")
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	srv, err := Start(ctx, Config{DataDir: dir})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	fmt.Printf("%s %s %s\n", crashReadyLine, srv.URL, srv.Kubeconfig)
	<-ctx.Done()
	srv.Stop()
	if err := srv.Wait(); err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// crashChild is one server process started by a test.
type crashChild struct {
	cmd    *exec.Cmd
	stdin  *os.File // the parent's end of the child's stdin
	logs   *tailBuffer
	exited chan struct{}
	err    error // Wait's result, once exited is closed
	cs     *kubernetes.Clientset
}

// startCrashChild starts a server process on dir and waits until it
// serves. The process is killed (by its PID) when the test ends.
func startCrashChild(t *testing.T, dir string) *crashChild {
	t.Helper()
	stdinR, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	c := &crashChild{stdin: stdinW, logs: &tailBuffer{max: 64 << 10}, exited: make(chan struct{})}
	c.cmd = exec.Command(os.Args[0], "-test.run=^TestCrashHelperProcess$", "-test.timeout=5m")
	c.cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
	c.cmd.Stdin = stdinR
	c.cmd.Stdout = &lineWatcher{prefix: crashReadyLine + " ", found: ready, rest: c.logs}
	c.cmd.Stderr = c.logs
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stdinR.Close()
	go func() {
		c.err = c.cmd.Wait()
		close(c.exited)
	}()
	t.Cleanup(func() {
		c.signal(syscall.SIGKILL)
		c.stdin.Close()
		<-c.exited
	})

	select {
	case line := <-ready:
		fields := strings.Fields(line)
		if len(fields) != 3 {
			t.Fatalf("bad ready line %q", line)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", fields[2])
		if err != nil {
			t.Fatal(err)
		}
		// The storm must measure the server, not client-side throttling; a
		// timeout keeps a hung request from hanging the test.
		cfg.QPS, cfg.Timeout = -1, 15*time.Second
		if c.cs, err = kubernetes.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
	case <-c.exited:
		t.Fatalf("server exited before it was ready: %v\n%s", c.err, c.logs)
	case <-time.After(30 * time.Second):
		t.Fatalf("server not ready after 30s\n%s", c.logs)
	}
	return c
}

// signal sends sig to the child's PID unless it has exited.
func (c *crashChild) signal(sig syscall.Signal) {
	select {
	case <-c.exited:
	default:
		c.cmd.Process.Signal(sig)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (c *crashChild) kill(t *testing.T) {
	t.Helper()
	c.signal(syscall.SIGKILL)
	select {
	case <-c.exited:
	case <-time.After(10 * time.Second):
		t.Fatal("server still running 10s after SIGKILL")
	}
}

// ack is the last acknowledged write of one object.
type ack struct {
	seq int   // the data["seq"] it wrote
	rv  int64 // the resourceVersion the server answered
}

// crashWriter creates ConfigMaps and updates each twice, one request at a
// time, remembering every write the server acknowledged. It stops at the
// first error: after the kill, every request fails.
type crashWriter struct {
	id    string
	acked map[string]ack
	// pending is the write that was in flight when the writer stopped: it
	// may or may not have been applied.
	pendingName string
	pendingSeq  int
	err         error
	errAt       time.Time
	maxRV       int64
	rvs         []int64 // of every acknowledged write
}

func (w *crashWriter) run(ctx context.Context, cs *kubernetes.Clientset) {
	cms := cs.CoreV1().ConfigMaps(crashNamespace)
	for n := 0; ctx.Err() == nil; n++ {
		name := fmt.Sprintf("%s-%d", w.id, n)
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{crashLabel: w.id}},
			Data:       map[string]string{"seq": "0", "pad": strings.Repeat("x", 512)},
		}
		for seq := 0; seq <= 2; seq++ {
			cm.Data["seq"] = strconv.Itoa(seq)
			w.pendingName, w.pendingSeq = name, seq
			var out *corev1.ConfigMap
			var err error
			if seq == 0 {
				out, err = cms.Create(ctx, cm, metav1.CreateOptions{})
			} else {
				// Compare-and-swap on the last acknowledged version: the
				// writer owns the object, so a conflict would be a bug.
				out, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
			}
			if err != nil {
				w.err, w.errAt = err, time.Now()
				return
			}
			rv, err := strconv.ParseInt(out.ResourceVersion, 10, 64)
			if err != nil || out.Data["seq"] != cm.Data["seq"] {
				w.err, w.errAt = fmt.Errorf("%s: bad answer rv=%q data=%v", name, out.ResourceVersion, out.Data), time.Now()
				return
			}
			w.acked[name] = ack{seq: seq, rv: rv}
			w.rvs = append(w.rvs, rv)
			w.maxRV = max(w.maxRV, rv)
			w.pendingName = ""
			cm = out
		}
	}
}

func TestCrashKillDuringWriteStorm(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts a server process several times")
	}
	const (
		cycles  = 3
		writers = 16
		storm   = 2500 * time.Millisecond
	)
	dir := t.TempDir()
	var all []*crashWriter
	var maxAcked int64
	child := startCrashChild(t, dir)
	for cycle := 0; cycle < cycles; cycle++ {
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		ws := make([]*crashWriter, writers)
		for i := range ws {
			ws[i] = &crashWriter{id: fmt.Sprintf("c%d-w%02d", cycle, i), acked: map[string]ack{}}
			wg.Go(func() { ws[i].run(ctx, child.cs) })
		}
		time.Sleep(storm)
		killAt := time.Now()
		child.kill(t)
		cancel()
		wg.Wait()

		// Each write is one etcd transaction: no two share a revision.
		acked, seen := 0, map[int64]string{}
		for _, w := range ws {
			acked += len(w.rvs)
			maxAcked = max(maxAcked, w.maxRV)
			if w.err != nil && w.errAt.Before(killAt) {
				t.Errorf("cycle %d: writer %s failed before the kill: %v", cycle, w.id, w.err)
			}
			for _, rv := range w.rvs {
				if other, dup := seen[rv]; dup {
					t.Errorf("cycle %d: writers %s and %s both acknowledged at resourceVersion %d", cycle, other, w.id, rv)
				}
				seen[rv] = w.id
			}
		}
		if acked < writers {
			t.Fatalf("cycle %d: only %d writes acknowledged in %s; the storm did not happen\n%s", cycle, acked, storm, child.logs)
		}
		t.Logf("cycle %d: %d writes acknowledged before SIGKILL, highest resourceVersion %d", cycle, acked, maxAcked)
		all = append(all, ws...)

		child = startCrashChild(t, dir)
		landed := verifyAcked(t, child.cs, all, maxAcked)
		t.Logf("cycle %d: after restart every acknowledged write is there; %d writes in flight at a kill (this or an earlier one) were applied without being acknowledged", cycle, landed)
		if t.Failed() {
			t.Fatalf("after restart %d:\n%s", cycle, child.logs)
		}
	}
}

// verifyAcked checks, on a restarted server, that every acknowledged write
// is there (or the writer's one unacknowledged later write), that nothing
// else is, and that new writes get resourceVersions past every
// acknowledged one. It returns how many unacknowledged writes were applied.
func verifyAcked(t *testing.T, cs *kubernetes.Clientset, ws []*crashWriter, maxAcked int64) (landed int) {
	t.Helper()
	ctx := context.Background()
	list, err := cs.CoreV1().ConfigMaps(crashNamespace).List(ctx, metav1.ListOptions{LabelSelector: crashLabel})
	if err != nil {
		t.Fatalf("list after restart: %v", err)
	}
	stored := map[string]*corev1.ConfigMap{}
	for i := range list.Items {
		stored[list.Items[i].Name] = &list.Items[i]
	}
	if rv, _ := strconv.ParseInt(list.ResourceVersion, 10, 64); rv < maxAcked {
		t.Errorf("list resourceVersion %d is older than acknowledged write %d", rv, maxAcked)
	}
	known := map[string]bool{}
	for _, w := range ws {
		for name, a := range w.acked {
			known[name] = true
			cm := stored[name]
			if cm == nil {
				t.Errorf("%s: acknowledged at seq %d, rv %d, lost", name, a.seq, a.rv)
				continue
			}
			seq, _ := strconv.Atoi(cm.Data["seq"])
			rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
			switch {
			case seq == a.seq && rv != a.rv:
				t.Errorf("%s: seq %d acknowledged at rv %d, stored at rv %d", name, seq, a.rv, rv)
			case seq == a.seq:
			case seq == a.seq+1 && name == w.pendingName && seq == w.pendingSeq && rv > a.rv:
				// The write in flight at the kill landed; allowed.
				landed++
			default:
				t.Errorf("%s: acknowledged seq %d rv %d, stored seq %d rv %d (in flight: %s seq %d)",
					name, a.seq, a.rv, seq, rv, w.pendingName, w.pendingSeq)
			}
		}
		if w.pendingName != "" && !known[w.pendingName] {
			if cm := stored[w.pendingName]; cm != nil {
				landed++
				if w.pendingSeq != 0 || cm.Data["seq"] != "0" {
					t.Errorf("%s: unacknowledged create stored as %v", w.pendingName, cm.Data["seq"])
				}
			}
			known[w.pendingName] = true
		}
	}
	for name := range stored {
		if !known[name] {
			t.Errorf("%s: stored but never written", name)
		}
	}

	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-"}}
	out, err := cs.CoreV1().ConfigMaps(crashNamespace).Create(ctx, probe, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("write after restart: %v", err)
	}
	if rv, _ := strconv.ParseInt(out.ResourceVersion, 10, 64); rv <= maxAcked {
		t.Errorf("write after restart got resourceVersion %d, not past acknowledged %d", rv, maxAcked)
	}
	return landed
}

func TestCrashCleanShutdown(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and stops a server process")
	}
	dir := t.TempDir()
	child := startCrashChild(t, dir)
	ctx := context.Background()
	w := &crashWriter{id: "clean", acked: map[string]ack{}}
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	w.run(wctx, child.cs)
	cancel()
	if len(w.acked) == 0 {
		t.Fatalf("no write acknowledged: %v", w.err)
	}

	start := time.Now()
	child.signal(syscall.SIGTERM)
	select {
	case <-child.exited:
		if child.err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", child.err, child.logs)
		}
		t.Logf("clean shutdown took %s", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10s after SIGTERM\n%s", child.logs)
	}

	child = startCrashChild(t, dir)
	verifyAcked(t, child.cs, []*crashWriter{w}, w.maxRV)
}

// lineWatcher is a child's stdout: it hands the first line starting with
// prefix to found and copies everything to rest.
type lineWatcher struct {
	prefix string
	found  chan<- string
	rest   io.Writer
	buf    []byte
	sent   bool
}

func (l *lineWatcher) Write(p []byte) (int, error) {
	l.rest.Write(p)
	if l.sent {
		return len(p), nil
	}
	l.buf = append(l.buf, p...)
	sc := bufio.NewScanner(bytes.NewReader(l.buf))
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, l.prefix) && bytes.Contains(l.buf, []byte(line+"\n")) {
			l.found <- line
			l.sent, l.buf = true, nil
			break
		}
	}
	return len(p), nil
}

// tailBuffer keeps the last max bytes written to it, for failure reports.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if over := len(t.b) - t.max; over > 0 {
		t.b = append(t.b[:0], t.b[over:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}
