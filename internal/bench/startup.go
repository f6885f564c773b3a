package bench

// The startup scenario (issue 3) measures what an operator waits for after
// typing `rudder server`: the time to a serving /readyz, then to every
// simulated node Ready, the server's memory once it got there, and the time
// to /readyz again when restarted on the same data directory.
//
// The server runs as a child process of the rudder binary itself, not
// in-process as in the api scenario: a cold start includes exec, the Go
// runtime's start, certificate generation and embedded etcd's first open,
// none of which an in-process server.Start would pay for honestly (the
// benchmark's own packages would already be loaded and warm).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/pki"
)

// Poll intervals: /readyz is polled finely because the figure is compared
// with a 1 s target, where 5 ms of quantisation is negligible; the node
// LIST is heavier (up to thousands of nodes), so it is polled less often.
const (
	readyzPoll = 5 * time.Millisecond
	nodesPoll  = 20 * time.Millisecond
	// startupTargetMS is issue 3's target: cold start to /readyz ≤ 1 s.
	startupTargetMS = 1000
)

// StartupConfig parameterises `rudder bench startup`.
type StartupConfig struct {
	// Nodes is the number of simulated nodes the server starts.
	Nodes int
	// Runs is the number of cold+warm start pairs, each in a fresh data dir.
	Runs int
	// Seed is recorded in the result; startup itself has no randomness.
	Seed uint64
	// Binary is the rudder executable to start (default: this process's).
	Binary string
	// RunTimeout bounds one run (cold start, nodes Ready, stop, warm start).
	RunTimeout time.Duration
	// Kubeconfig is rejected: the scenario needs servers it starts itself.
	Kubeconfig string
	// Log, when set, receives progress lines.
	Log io.Writer
}

// StartupRun is one run's figures, all measured from just before exec.
type StartupRun struct {
	Run             int     `json:"run"`
	ReadyzMS        float64 `json:"readyz_ms"`
	AllNodesReadyMS float64 `json:"all_nodes_ready_ms"`
	WarmReadyzMS    float64 `json:"warm_readyz_ms"`
	// RSSMiB is the child's resident memory once all nodes were Ready.
	RSSMiB float64 `json:"rss_mib"`
}

// StartupStat summarises one figure over the runs.
type StartupStat struct {
	P50 float64 `json:"p50"`
	Max float64 `json:"max"`
}

// StartupResult is the scenario's output: a table, then one JSON line.
type StartupResult struct {
	Scenario   string       `json:"scenario"`
	Seed       uint64       `json:"seed"`
	Nodes      int          `json:"nodes"`
	NumCPU     int          `json:"num_cpu"`
	GoVersion  string       `json:"go_version"`
	LoadStart  float64      `json:"loadavg_start"`
	LoadEnd    float64      `json:"loadavg_end"`
	Seconds    float64      `json:"seconds"`
	Runs       []StartupRun `json:"runs"`
	Readyz     StartupStat  `json:"readyz_ms"`
	NodesReady StartupStat  `json:"all_nodes_ready_ms"`
	WarmReadyz StartupStat  `json:"warm_readyz_ms"`
	// ServerRSSMiB is the median of the runs' RSS.
	ServerRSSMiB float64        `json:"server_rss_mib"`
	Targets      []TargetResult `json:"targets"`
	// OK is false when cold start to /readyz (p50) missed the 1 s target.
	OK bool `json:"ok"`
}

// RunStartup runs the startup scenario. On error it still returns the runs
// that completed, so the caller can print them.
func RunStartup(ctx context.Context, cfg StartupConfig) (*StartupResult, error) {
	if cfg.Kubeconfig != "" {
		return nil, errors.New("--kubeconfig is not supported by the startup scenario: it measures servers it starts itself")
	}
	if cfg.Nodes < 0 || cfg.Runs < 1 {
		return nil, fmt.Errorf("need --nodes >= 0 and --runs >= 1 (got %d and %d)", cfg.Nodes, cfg.Runs)
	}
	if cfg.RunTimeout <= 0 {
		cfg.RunTimeout = 60 * time.Second
	}
	if cfg.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("locating the rudder binary: %w", err)
		}
		cfg.Binary = exe
	}
	start := time.Now()
	res := &StartupResult{Scenario: "startup", Seed: cfg.Seed, Nodes: cfg.Nodes, NumCPU: runtime.NumCPU(),
		GoVersion: runtime.Version(), LoadStart: loadAverage(), Runs: []StartupRun{}}
	var runErr error
	for i := 1; i <= cfg.Runs; i++ {
		r, err := startupRun(ctx, cfg, i)
		if err != nil {
			runErr = fmt.Errorf("run %d: %w", i, err)
			break
		}
		res.Runs = append(res.Runs, r)
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "run %d: readyz %.0f ms, nodes Ready %.0f ms, warm readyz %.0f ms, RSS %.0f MiB\n",
				i, r.ReadyzMS, r.AllNodesReadyMS, r.WarmReadyzMS, r.RSSMiB)
		}
	}
	res.summarise()
	res.LoadEnd = loadAverage()
	res.Seconds = time.Since(start).Seconds()
	return res, runErr
}

func (r *StartupResult) summarise() {
	pick := func(f func(StartupRun) float64) StartupStat {
		v := make([]float64, len(r.Runs))
		for i, run := range r.Runs {
			v[i] = f(run)
		}
		return statOf(v)
	}
	r.Readyz = pick(func(s StartupRun) float64 { return s.ReadyzMS })
	r.NodesReady = pick(func(s StartupRun) float64 { return s.AllNodesReadyMS })
	r.WarmReadyz = pick(func(s StartupRun) float64 { return s.WarmReadyzMS })
	r.ServerRSSMiB = pick(func(s StartupRun) float64 { return s.RSSMiB }).P50
	met := len(r.Runs) > 0 && r.Readyz.P50 <= startupTargetMS
	r.Targets = []TargetResult{{Name: "cold start to /readyz p50 ms", Want: "<= 1000", Got: r.Readyz.P50, Met: met}}
	r.OK = met
}

// statOf is the median (mean of the middle two for an even count: with
// two or three runs a nearest-rank p50 would just be one of them) and max.
func statOf(v []float64) StartupStat {
	if len(v) == 0 {
		return StartupStat{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	p50 := s[n/2]
	if n%2 == 0 {
		p50 = (s[n/2-1] + s[n/2]) / 2
	}
	return StartupStat{P50: round1(p50), Max: round1(s[n-1])}
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }

func msSince(t time.Time) float64 { return round1(float64(time.Since(t).Microseconds()) / 1000) }

// startupRun is one cold start (readyz, nodes Ready, RSS), a stop, and a
// warm start on the same data dir, in a temp dir removed afterwards.
func startupRun(parent context.Context, cfg StartupConfig, n int) (StartupRun, error) {
	ctx, cancel := context.WithTimeout(parent, cfg.RunTimeout)
	defer cancel()
	base, err := os.MkdirTemp("", "rudder-bench-startup-")
	if err != nil {
		return StartupRun{}, err
	}
	defer os.RemoveAll(base)
	dataDir := filepath.Join(base, "data")
	run := StartupRun{Run: n}

	cold, t0, err := startChild(cfg, dataDir, filepath.Join(base, "cold.log"))
	if err != nil {
		return run, err
	}
	// Whatever happens below, the child must not outlive the run.
	defer cold.kill()
	if err := waitReadyz(ctx, cold, dataDir); err != nil {
		return run, fmt.Errorf("cold start: %w", err)
	}
	run.ReadyzMS = msSince(t0)
	if err := waitNodesReady(ctx, cold, dataDir, cfg.Nodes); err != nil {
		return run, fmt.Errorf("cold start: %w", err)
	}
	run.AllNodesReadyMS = msSince(t0)
	if run.RSSMiB, err = rssMiB(cold.cmd.Process.Pid); err != nil {
		return run, err
	}
	if err := cold.stop(ctx); err != nil {
		return run, fmt.Errorf("stopping the cold-started server: %w", err)
	}

	warm, t1, err := startChild(cfg, dataDir, filepath.Join(base, "warm.log"))
	if err != nil {
		return run, err
	}
	defer warm.kill()
	if err := waitReadyz(ctx, warm, dataDir); err != nil {
		return run, fmt.Errorf("warm start: %w", err)
	}
	run.WarmReadyzMS = msSince(t1)
	if err := warm.stop(ctx); err != nil {
		return run, fmt.Errorf("stopping the warm-started server: %w", err)
	}
	return run, nil
}

// child is one `rudder server` process.
type child struct {
	cmd     *exec.Cmd
	port    int
	logPath string
	logFile *os.File
	done    chan struct{} // closed when the process has been waited for
	waitErr error
}

// startChild execs `rudder server` on a free loopback port chosen here: with
// --https-port 0 the parent could not know the URL before the kubeconfig is
// written, and reading it would add to the measured time. It returns the
// time taken just before exec, the origin of every figure.
func startChild(cfg StartupConfig, dataDir, logPath string) (*child, time.Time, error) {
	port, err := freePort()
	if err != nil {
		return nil, time.Time{}, err
	}
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, time.Time{}, err
	}
	cmd := exec.Command(cfg.Binary, "server", "--data-dir", dataDir, "--https-port", strconv.Itoa(port),
		"--simulated-nodes", strconv.Itoa(cfg.Nodes), "--log-level", "warn")
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	c := &child{cmd: cmd, port: port, logPath: logPath, logFile: logFile, done: make(chan struct{})}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, time.Time{}, fmt.Errorf("starting %s: %w", cfg.Binary, err)
	}
	go func() {
		c.waitErr = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	return c, t0, nil
}

// exited reports an error if the child has already exited: polling an
// endpoint that will never come is otherwise only ended by the timeout.
func (c *child) exited() error {
	select {
	case <-c.done:
		return fmt.Errorf("server exited early (%v); log tail:\n%s", c.waitErr, c.logTail())
	default:
		return nil
	}
}

// stop sends SIGTERM to the child's PID and waits for a clean exit; past
// the run's deadline it kills it.
func (c *child) stop(ctx context.Context) error {
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		select {
		case <-c.done: // already gone: report how it ended below
		default:
			return err
		}
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		c.kill()
		return fmt.Errorf("server did not exit after SIGTERM: %w", ctx.Err())
	}
	var exitErr *exec.ExitError
	if c.waitErr != nil && !errors.As(c.waitErr, &exitErr) {
		return c.waitErr
	}
	if c.waitErr != nil {
		return fmt.Errorf("server exited with %v; log tail:\n%s", c.waitErr, c.logTail())
	}
	return nil
}

// kill ends the child by PID, if still running, and waits for it.
func (c *child) kill() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Kill()
	<-c.done
}

// logTail is the end of the child's output, for error messages.
func (c *child) logTail() string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return strings.TrimSpace(string(b))
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// loadTLS builds the client TLS config from the data dir's PKI. On a cold
// start the files appear while the server writes them, so a missing or
// half-written file is "not yet", not an error.
func loadTLS(dataDir string) (*tls.Config, bool) {
	dir := filepath.Join(dataDir, "pki")
	caPEM, err := os.ReadFile(filepath.Join(dir, pki.CACertFile))
	if err != nil {
		return nil, false
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, false
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, pki.AdminCertFile), filepath.Join(dir, pki.AdminKeyFile))
	if err != nil {
		return nil, false
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, true
}

// waitReadyz polls https://127.0.0.1:P/readyz until it answers 200.
func waitReadyz(ctx context.Context, c *child, dataDir string) error {
	url := fmt.Sprintf("https://127.0.0.1:%d/readyz", c.port)
	var client *http.Client
	lastErr := errors.New("PKI files not written yet")
	tick := time.NewTicker(readyzPoll)
	defer tick.Stop()
	for {
		if err := c.exited(); err != nil {
			return err
		}
		if client == nil {
			if tc, ok := loadTLS(dataDir); ok {
				tr := &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}
				defer tr.CloseIdleConnections()
				client = &http.Client{Transport: tr, Timeout: time.Second}
			}
		}
		if client != nil {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			resp, err := client.Do(req)
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					return nil
				}
				lastErr = fmt.Errorf("/readyz answered %s", resp.Status)
			} else {
				lastErr = err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for /readyz: %w (last: %v); log tail:\n%s", ctx.Err(), lastErr, c.logTail())
		case <-tick.C:
		}
	}
}

// waitNodesReady lists nodes with client-go, as a user would, until n of
// them have Ready=True.
func waitNodesReady(ctx context.Context, c *child, dataDir string, n int) error {
	if n == 0 {
		return nil
	}
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	var cs kubernetes.Interface
	lastErr := errors.New("admin.kubeconfig not written yet")
	ready := 0
	tick := time.NewTicker(nodesPoll)
	defer tick.Stop()
	for {
		if err := c.exited(); err != nil {
			return err
		}
		if cs == nil {
			// The kubeconfig is written after the listener opens, so right
			// after /readyz it exists; if not, try again on the next tick.
			if rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig); err == nil {
				// The default limiter (5 qps) would throttle a 20 ms poll.
				rc.QPS, rc.Burst = 1000, 1000
				rc.ContentType = "application/vnd.kubernetes.protobuf"
				if cs, err = kubernetes.NewForConfig(rc); err != nil {
					return err
				}
			} else {
				lastErr = err
			}
		}
		if cs != nil {
			lctx, lcancel := context.WithTimeout(ctx, 5*time.Second)
			list, err := cs.CoreV1().Nodes().List(lctx, metav1.ListOptions{})
			lcancel()
			if err == nil {
				ready = countReady(list.Items)
				if ready >= n {
					return nil
				}
			} else {
				lastErr = err
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d nodes Ready: %w (%d Ready; last error: %v)", n, ctx.Err(), ready, lastErr)
		case <-tick.C:
		}
	}
}

func countReady(nodes []corev1.Node) int {
	ready := 0
	for i := range nodes {
		for _, cond := range nodes[i].Status.Conditions {
			if cond.Type == corev1.NodeReady && cond.Status == corev1.ConditionTrue {
				ready++
				break
			}
		}
	}
	return ready
}

// rssMiB reads VmRSS (in kB) from /proc/<pid>/status.
func rssMiB(pid int) (float64, error) { return procStatusMiB(pid, "VmRSS") }

// procStatusMiB reads a memory figure given in kB (VmRSS, VmHWM, ...)
// from /proc/<pid>/status, in MiB.
func procStatusMiB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the server's %s: %w", field, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == field+":" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			if err != nil {
				return 0, fmt.Errorf("parsing %s %q: %w", field, sc.Text(), err)
			}
			return round1(kb / 1024), nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// Print writes the table and p50 summary, then the JSON line.
func (r *StartupResult) Print(out io.Writer) error {
	fmt.Fprintf(out, "rudder bench startup: `rudder server --simulated-nodes %d` as a child process, %d runs, %d CPUs, %.1fs\n",
		r.Nodes, len(r.Runs), r.NumCPU, r.Seconds)
	fmt.Fprintf(out, "machine load average %.1f before, %.1f after; times from just before exec; warm = restart on the same data dir\n\n", r.LoadStart, r.LoadEnd)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\tcold readyz ms\tnodes Ready ms\twarm readyz ms\tRSS MiB\t")
	for _, run := range r.Runs {
		fmt.Fprintf(tw, "%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", run.Run, run.ReadyzMS, run.AllNodesReadyMS, run.WarmReadyzMS, run.RSSMiB)
	}
	fmt.Fprintf(tw, "p50\t%.1f\t%.1f\t%.1f\t%.1f\t\n", r.Readyz.P50, r.NodesReady.P50, r.WarmReadyz.P50, r.ServerRSSMiB)
	fmt.Fprintf(tw, "max\t%.1f\t%.1f\t%.1f\t\t\n", r.Readyz.Max, r.NodesReady.Max, r.WarmReadyz.Max)
	tw.Flush()
	fmt.Fprintln(out, "\nTARGETS")
	for _, t := range r.Targets {
		verdict := "met"
		if !t.Met {
			verdict = "MISSED"
		}
		fmt.Fprintf(out, "  %-40s want %-8s got %-10.1f %s\n", t.Name, t.Want, t.Got, verdict)
	}
	line, err := json.Marshal(r)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\n%s\n", line)
	return nil
}
