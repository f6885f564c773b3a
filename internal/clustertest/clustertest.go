// Package clustertest starts a real rudder control plane for tests of the
// components that are its clients (scheduler, controllers): embedded etcd
// in t.TempDir(), the API server on a free loopback port, and optionally
// simulated nodes. Nothing is mocked.
//
//	c := clustertest.Start(t, clustertest.Options{SimulatedNodes: 3})
//	c.Client.CoreV1().Pods("default").Create(...)
//
// By default neither the scheduler nor any controller runs, so a test
// runs exactly the component it is about (built from c.Config); set
// Options.Scheduler or Options.Controllers to run the in-process ones.
package clustertest

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/rudder-dev/rudder/internal/server"
)

// Options chooses what runs besides the API server.
type Options struct {
	// SimulatedNodes starts that many simulated nodes (3 zones) and waits
	// until they are registered.
	SimulatedNodes int
	// Scheduler runs the in-process scheduler.
	Scheduler bool
	// Controllers runs these in-process controllers ("*" for the
	// defaults, "-name" to drop one); none when empty.
	Controllers []string
}

// Cluster is a running control plane.
type Cluster struct {
	Server *server.Server
	// Config is the admin's rest config: protobuf, no client rate limit.
	Config *rest.Config
	Client kubernetes.Interface
}

// Start starts a cluster that stops when the test ends.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg := server.Config{
		DataDir:          t.TempDir(),
		SimulatedNodes:   opts.SimulatedNodes,
		DisableScheduler: !opts.Scheduler,
		Controllers:      opts.Controllers,
	}
	if len(cfg.Controllers) == 0 {
		cfg.Controllers = []string{"-*"}
	}
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		cancel()
		t.Fatalf("start cluster: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		srv.Stop()
	})
	rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if srv.SimNodes != nil {
		select {
		case <-srv.SimNodes.Ready():
		case <-time.After(30 * time.Second):
			t.Fatal("simulated nodes did not register in 30s")
		}
	}
	return &Cluster{Server: srv, Config: rc, Client: client}
}
