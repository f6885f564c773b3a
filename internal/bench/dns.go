package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	mdns "github.com/miekg/dns"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/dns"
	"github.com/rudder-dev/rudder/internal/server"
)

// DNSConfig is the `rudder bench dns` scenario: a fresh control plane
// with Services ClusterIP services, rudder's cluster DNS on loopback (and
// CoreDNS beside it when CoreDNS names a binary, reading the same API
// server), and a load of A queries for the service names from
// Concurrency UDP clients in this process, on the same cores as the
// servers, each sending its next query when the last is answered.
type DNSConfig struct {
	Services    int
	Concurrency int
	Duration    time.Duration
	// CoreDNS, when set, is a coredns binary with the kubernetes and
	// forward plugins, measured after rudder's in the same run.
	CoreDNS string
	// Rudder, when set, is a rudder binary whose `rudder dns` serves, in
	// its own process as CoreDNS does (a fair match: the clients do not
	// share the server's Go runtime); empty runs internal/dns in this
	// process.
	Rudder string
	Log    io.Writer
}

// DNSResult is one server's run.
type DNSResult struct {
	Server      string  `json:"server"`
	Queries     uint64  `json:"queries"`
	Errors      uint64  `json:"errors"`
	QPS         float64 `json:"qps"`
	Concurrency int     `json:"concurrency"`
	Services    int     `json:"services"`
	summary
}

// DNS targets: CoreDNS's published 33,669 QPS on a 2-vCPU node is the
// anchor.
const (
	dnsTargetQPS   = 30000
	dnsTargetP99MS = 2.0
)

// RunDNS runs the scenario.
func RunDNS(ctx context.Context, cfg DNSConfig) ([]DNSResult, error) {
	if cfg.Services < 1 || cfg.Concurrency < 1 || cfg.Duration <= 0 {
		return nil, errors.New("bench dns: services, concurrency and duration must be positive")
	}
	logf := func(format string, a ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", a...)
		}
	}
	rc, srv, stop, err := startEmbedded(ctx, server.Config{DisableScheduler: true, Controllers: []string{"-*"}})
	if err != nil {
		return nil, err
	}
	defer stop()
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, err
	}
	logf("creating %d services", cfg.Services)
	if _, err := client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	names := make([]string, cfg.Services)
	for i := range cfg.Services {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("svc-%d", i), Namespace: "bench"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}
		if _, err := client.CoreV1().Services("bench").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		names[i] = s.Name + ".bench.svc.cluster.local."
	}

	var results []DNSResult
	var addr string
	if cfg.Rudder != "" {
		a, kill, err := startProcess(cfg.Rudder, func(port int, _ string) []string {
			return []string{"dns", "--kubeconfig", srv.Kubeconfig, "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--upstream", "127.0.0.1:1"}
		})
		if err != nil {
			return nil, err
		}
		defer kill()
		addr = a
	} else {
		d, err := dns.New(dns.Config{Client: client, Addrs: []string{"127.0.0.1:0"}, Upstreams: []string{"127.0.0.1:1"}})
		if err != nil {
			return nil, err
		}
		dctx, dstop := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- d.Run(dctx) }()
		defer func() { dstop(); <-done }()
		addr = d.Addrs()[0]
	}
	if err := waitAnswer(ctx, addr, names[len(names)-1]); err != nil {
		return nil, fmt.Errorf("rudder dns: %w", err)
	}
	logf("rudder dns: %d clients for %v", cfg.Concurrency, cfg.Duration)
	results = append(results, dnsLoad(ctx, "rudder", addr, names, cfg))

	if cfg.CoreDNS != "" {
		addr, kill, err := startProcess(cfg.CoreDNS, func(port int, dir string) []string {
			corefile := fmt.Sprintf(".:%d {\n  bind 127.0.0.1\n  kubernetes cluster.local in-addr.arpa ip6.arpa {\n    kubeconfig %s\n    pods insecure\n    fallthrough in-addr.arpa ip6.arpa\n  }\n  forward . 127.0.0.1:1\n}\n", port, srv.Kubeconfig)
			os.WriteFile(filepath.Join(dir, "Corefile"), []byte(corefile), 0o644)
			return []string{"-conf", filepath.Join(dir, "Corefile"), "-quiet"}
		})
		if err != nil {
			return results, err
		}
		defer kill()
		if err := waitAnswer(ctx, addr, names[len(names)-1]); err != nil {
			return results, fmt.Errorf("coredns: %w", err)
		}
		logf("coredns: %d clients for %v", cfg.Concurrency, cfg.Duration)
		results = append(results, dnsLoad(ctx, "coredns", addr, names, cfg))
	}
	return results, nil
}

// waitAnswer waits until addr answers name with an address.
func waitAnswer(ctx context.Context, addr, name string) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		m := new(mdns.Msg)
		m.SetQuestion(name, mdns.TypeA)
		r, _, err := (&mdns.Client{Timeout: time.Second}).ExchangeContext(ctx, m, addr)
		if err == nil && len(r.Answer) == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not answered within 60 s (last: %v)", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// startProcess runs bin with args(port, dir) on a free loopback port and
// a temporary directory; kill stops it and removes the directory.
func startProcess(bin string, args func(port int, dir string) []string) (string, func(), error) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := pc.LocalAddr().(*net.UDPAddr).Port
	pc.Close()
	dir, err := os.MkdirTemp("", "rudder-bench-dns-")
	if err != nil {
		return "", nil, err
	}
	cmd := exec.Command(bin, args(port, dir)...)
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	}, nil
}

// dnsLoad runs the closed-loop load against addr: a second of warm-up,
// then cfg.Duration measured.
func dnsLoad(ctx context.Context, label, addr string, names []string, cfg DNSConfig) DNSResult {
	var (
		wg       sync.WaitGroup
		measure  atomic.Bool
		stop     atomic.Bool
		mu       sync.Mutex
		total    histogram
		queries  uint64
		failures uint64
	)
	for w := range cfg.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var h histogram
			var n, errs uint64
			defer func() {
				mu.Lock()
				total.merge(&h)
				queries += n
				failures += errs
				mu.Unlock()
			}()
			conn, err := net.Dial("udp", addr)
			if err != nil {
				errs++
				return
			}
			defer conn.Close()
			wire := make([][]byte, len(names))
			for i, name := range names {
				m := new(mdns.Msg)
				m.SetQuestion(name, mdns.TypeA)
				wire[i], _ = m.Pack()
			}
			buf := make([]byte, 1500)
			for i := w; !stop.Load() && ctx.Err() == nil; i++ {
				q := wire[i%len(wire)]
				id := uint16(i)
				q[0], q[1] = byte(id>>8), byte(id)
				start := time.Now()
				conn.SetDeadline(start.Add(time.Second))
				if _, err := conn.Write(q); err != nil {
					errs++
					continue
				}
				ok := false
				for {
					k, err := conn.Read(buf)
					if err != nil {
						break
					}
					if k >= 12 && buf[0] == q[0] && buf[1] == q[1] {
						ok = buf[3]&0xf == 0 && buf[7] == 1 // NOERROR, one answer
						break
					}
				}
				if !measure.Load() {
					continue
				}
				h.record(time.Since(start))
				n++
				if !ok {
					errs++
				}
			}
		}()
	}
	time.Sleep(time.Second)
	measure.Store(true)
	start := time.Now()
	select {
	case <-time.After(cfg.Duration):
	case <-ctx.Done():
	}
	measure.Store(false)
	elapsed := time.Since(start)
	stop.Store(true)
	wg.Wait()
	return DNSResult{Server: label, Queries: queries, Errors: failures, QPS: float64(queries) / elapsed.Seconds(),
		Concurrency: cfg.Concurrency, Services: len(names), summary: total.summary()}
}

// PrintDNS writes the table, or with asJSON one JSON line per server.
func PrintDNS(out io.Writer, res []DNSResult, asJSON bool) error {
	if asJSON {
		for _, r := range res {
			b, err := json.Marshal(struct {
				Scenario string `json:"scenario"`
				DNSResult
				OK bool `json:"ok"`
			}{"dns", r, r.Errors == 0 && r.QPS >= dnsTargetQPS && r.P99MS <= dnsTargetP99MS})
			if err != nil {
				return err
			}
			fmt.Fprintln(out, string(b))
		}
		return nil
	}
	fmt.Fprintf(out, "%-8s %10s %8s %8s %8s %8s %8s %7s\n", "SERVER", "QPS", "P50_MS", "P99_MS", "MAX_MS", "QUERIES", "ERRORS", "CLIENTS")
	for _, r := range res {
		fmt.Fprintf(out, "%-8s %10.0f %8.3f %8.3f %8.3f %8d %8d %7d\n", r.Server, r.QPS, r.P50MS, r.P99MS, r.MaxMS, r.Queries, r.Errors, r.Concurrency)
	}
	fmt.Fprintf(out, "targets: >= %d QPS, p99 <= %.0f ms (CoreDNS's published 33,669 QPS on 2 vCPUs)\n", dnsTargetQPS, dnsTargetP99MS)
	if len(res) == 2 && res[1].QPS > 0 {
		fmt.Fprintf(out, "rudder/coredns: QPS x%.2f, p99 x%.2f\n", res[0].QPS/res[1].QPS, safeRatio(res[0].P99MS, res[1].P99MS))
	}
	return nil
}

func safeRatio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
