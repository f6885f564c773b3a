package bench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/server"
)

// env is what the stages share.
type env struct {
	cfg       Config
	pool      *clientPool
	namespace string
	pods      podFactory
}

// logf reports progress on the log (stderr), apart from the results.
func (e *env) logf(format string, args ...any) {
	slog.Info("bench: " + fmt.Sprintf(format, args...))
}

// Run runs the API scenario and returns what it measured. It starts an
// embedded server when cfg.Kubeconfig is empty, works in a namespace of its
// own, and removes both before returning. Every stage ends by itself: by
// count, or at cfg.StageTimeout.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.defaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	started := time.Now()
	res := &Result{Scenario: "api", Seed: cfg.Seed, Target: "kubeconfig", NumCPU: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion: runtime.Version(), Connections: cfg.Connections, LoadStart: loadAverage(),
		Ops: []OpResult{}, List: []ListResult{}, Watch: []WatchResult{}}

	restCfg, stop, err := connect(ctx, cfg, res)
	if err != nil {
		return nil, err
	}
	defer stop()
	pool, err := newClientPool(ctx, restCfg, cfg.Connections)
	if err != nil {
		return nil, err
	}
	if v, err := pool.get(0).Discovery().ServerVersion(); err == nil {
		res.ServerVersion = v.GitVersion
	}

	ns, err := pool.get(0).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		GenerateName: "rudder-bench-", Labels: map[string]string{"app.kubernetes.io/managed-by": "rudder-bench"},
	}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("create the benchmark namespace: %w", err)
	}
	e := &env{cfg: cfg, pool: pool, namespace: ns.Name, pods: podFactory{seed: cfg.Seed, namespace: ns.Name}}
	if !res.InProcess {
		// An embedded server's data is removed whole; a real cluster's
		// namespace must be emptied and deleted.
		defer e.deleteNamespace()
	}
	if err := e.waitAdmissible(ctx); err != nil {
		return nil, err
	}

	if cfg.CPUProfile != "" {
		f, err := os.Create(cfg.CPUProfile)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return nil, err
		}
		defer pprof.StopCPUProfile()
	}

	e.logf("namespace %s on %s; stages %v", ns.Name, restCfg.Host, cfg.Stages)
	var usage serverUsage // zero unless embedded
	if res.InProcess {
		usage = startServerUsage()
	}
	if cfg.runs(StageList) {
		sctx, cancel := context.WithTimeout(ctx, cfg.StageTimeout)
		res.List = append(res.List, runList(sctx, e)...)
		cancel()
	}
	if cfg.runs(StageCRUD) {
		for _, c := range cfg.Clients {
			sctx, cancel := context.WithTimeout(ctx, cfg.StageTimeout)
			ops := runCRUD(sctx, e, c)
			cancel()
			res.Ops = append(res.Ops, ops...)
			e.logf("crud at %d clients: %.0f creates/s", c, ops[0].PerSec)
		}
	}
	if cfg.runs(StageWatch) {
		for _, w := range cfg.Watchers {
			r := runWatch(ctx, e, w)
			res.Watch = append(res.Watch, r)
			e.logf("watch with %d watchers: %d of %d delivered, e2e p99 %.1fms", w, r.Delivered, r.Expected, r.E2E.P99MS)
		}
	}
	if res.InProcess {
		res.ServerCPUSeconds, res.ServerPeakRSSMiB = usage.read()
	}
	res.evaluateTargets()
	res.LoadEnd = loadAverage()
	res.Seconds = round3(time.Since(started).Seconds())
	return res, ctx.Err()
}

// connect returns a client config for the target: the given kubeconfig, or
// a fresh embedded server in a temporary directory. stop releases it.
func connect(ctx context.Context, cfg Config, res *Result) (*rest.Config, func(), error) {
	if cfg.Kubeconfig != "" {
		rc, err := clientcmd.BuildConfigFromFlags("", cfg.Kubeconfig)
		res.Kubeconfig = cfg.Kubeconfig
		return rc, func() {}, err
	}
	rc, _, stop, err := startEmbedded(ctx, server.Config{HTTPSPort: 0})
	if err != nil {
		return nil, nil, err
	}
	res.Target, res.InProcess = "embedded", true
	return rc, stop, nil
}

// startEmbedded starts a server of scfg in this process, in a fresh
// temporary data directory (scfg.DataDir is replaced), and returns an
// admin client config for it. stop shuts it down and removes the directory.
func startEmbedded(ctx context.Context, scfg server.Config) (*rest.Config, *server.Server, func(), error) {
	dir, err := os.MkdirTemp("", "rudder-bench-")
	if err != nil {
		return nil, nil, nil, err
	}
	scfg.DataDir = dir
	srv, err := server.Start(ctx, scfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	stop := func() {
		srv.Stop()
		os.RemoveAll(dir)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	return rc, srv, stop, nil
}

// waitAdmissible waits until a pod can be created in the new namespace. On
// a real cluster the ServiceAccount admission plugin rejects pods until the
// namespace's default ServiceAccount exists, a moment after the namespace.
// A dry-run create runs admission without storing anything.
func (e *env) waitAdmissible(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	probe := e.pods.pod("probe", 0)
	for {
		_, err := e.pool.get(0).CoreV1().Pods(e.namespace).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("pods cannot be created in %s: %w", e.namespace, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// deleteNamespace empties the namespace and deletes it. It runs on a context
// of its own so an interrupted run still cleans up.
func (e *env) deleteNamespace() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs := e.pool.get(0)
	err := cs.CoreV1().Pods(e.namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}, metav1.ListOptions{})
	err = errors.Join(err, cs.CoreV1().Namespaces().Delete(ctx, e.namespace, metav1.DeleteOptions{}))
	if err != nil {
		slog.Warn("bench: cleaning up the namespace", "namespace", e.namespace, "err", err)
	}
}
