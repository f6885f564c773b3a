package bench

// The cluster a density or churn run works on: a fresh embedded server
// with its simulated nodes, or an existing cluster (--kubeconfig) topped
// up with simulated nodes run by this process.
//
// How an existing cluster is topped up: the workload's pods select
// simulated nodes (nodeSelector simnode.rudder.dev/simulated=true), so
// only those count; real nodes, which would pull and run images, never
// get a pod. The run counts the cluster's simulated nodes that are Ready
// and schedulable (not cordoned, no NoSchedule/NoExecute taint) — started
// by `rudder server --simulated-nodes`, `rudder simnodes`, or an earlier
// run — and when they are fewer than asked, starts the shortfall here
// (named rudder-bench-<random>-<i>, three zones) and deletes them
// afterwards. When there are more, the pods spread over all of them and
// the run reports how many there were.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/server"
	"github.com/rudder-dev/rudder/internal/simnode"
)

// simnodePodsPerNode is a simulated node's default pods capacity.
const simnodePodsPerNode = 110

// densityCluster is a run's cluster, ready with its nodes.
type densityCluster struct {
	rc *rest.Config
	// target is "embedded" or "kubeconfig".
	target     string
	kubeconfig string
	// nodes is the number of Ready simulated nodes the pods can use;
	// started how many of them this run started on an existing cluster.
	nodes   int
	started int
	fleet   *simnode.Fleet
	stop    func()
}

func (c *densityCluster) embedded() bool { return c.target == "embedded" }

// densityOpen returns a cluster with at least nodes Ready simulated nodes.
// recorder, when set, times the benchmark's own calls (see densityRecorder).
func densityOpen(ctx context.Context, kubeconfig string, nodes int, seed uint64, recorder *densityRecorder) (*densityCluster, error) {
	c := &densityCluster{target: "kubeconfig", kubeconfig: kubeconfig, stop: func() {}}
	var err error
	if kubeconfig == "" {
		c.target = "embedded"
		var srv *server.Server
		c.rc, srv, c.stop, err = startEmbedded(ctx, server.Config{HTTPSPort: 0, SimulatedNodes: nodes})
		if err != nil {
			return nil, err
		}
		select {
		case <-srv.SimNodes.Ready():
		case <-ctx.Done():
			c.stop()
			return nil, fmt.Errorf("waiting for %d simulated nodes to register: %w", nodes, ctx.Err())
		}
	} else if c.rc, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return nil, err
	}
	if recorder != nil {
		c.rc.WrapTransport = recorder.wrap
	}
	cs, err := kubernetes.NewForConfig(connConfig(c.rc, mediaProtobuf))
	if err != nil {
		c.close()
		return nil, err
	}
	if !c.embedded() {
		have, err := densityCountNodes(ctx, cs)
		if err != nil {
			c.close()
			return nil, err
		}
		if have < nodes {
			if err := c.startFleet(ctx, nodes-have, seed); err != nil {
				c.close()
				return nil, err
			}
		}
	}
	if c.nodes, err = densityWaitNodes(ctx, cs, nodes); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// startFleet runs n simulated nodes in this process against the cluster.
func (c *densityCluster) startFleet(ctx context.Context, n int, seed uint64) error {
	var suffix [3]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return err
	}
	// The fleet's own client: the benchmark's recorder must not time the
	// nodes' lease renewals as the benchmark's calls.
	fc := connConfig(c.rc, mediaProtobuf)
	fc.WrapTransport = nil
	fc.UserAgent = "rudder-bench-simnode"
	client, err := kubernetes.NewForConfig(fc)
	if err != nil {
		return err
	}
	fleet, err := simnode.New(simnode.Config{Client: client, Count: n, Zones: 3, Seed: int64(seed),
		Prefix: "rudder-bench-" + hex.EncodeToString(suffix[:]) + "-"})
	if err != nil {
		return err
	}
	if err := fleet.Start(ctx); err != nil {
		return err
	}
	c.fleet, c.started = fleet, n
	slog.Info("bench: started simulated nodes on the cluster", "count", n)
	select {
	case <-fleet.Ready():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("waiting for %d simulated nodes to register: %w", n, ctx.Err())
	}
}

// close stops what the run started: the embedded server, or the nodes it
// added to an existing cluster (their Nodes and Leases deleted).
func (c *densityCluster) close() {
	if c.fleet != nil {
		names := c.fleet.NodeNames()
		c.fleet.Stop()
		c.fleet = nil
		if cs, err := kubernetes.NewForConfig(connConfig(c.rc, mediaProtobuf)); err == nil {
			densityDeleteNodes(cs, names)
		}
	}
	c.stop()
}

// densityDeleteNodes removes nodes and their leases, on a context of its
// own so an interrupted run still cleans up.
func densityDeleteNodes(cs kubernetes.Interface, names []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	work := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range work {
				err := cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
				lerr := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, name, metav1.DeleteOptions{})
				for _, e := range []error{err, lerr} {
					if e != nil && !apierrors.IsNotFound(e) {
						mu.Lock()
						errs = append(errs, e)
						mu.Unlock()
					}
				}
			}
		}()
	}
	for _, n := range names {
		work <- n
	}
	close(work)
	wg.Wait()
	if len(errs) > 0 {
		slog.Warn("bench: deleting the simulated nodes", "failed", len(errs), "err", errors.Join(errs[:min(3, len(errs))]...))
	}
}

// densityCountNodes counts Ready, schedulable simulated nodes.
func densityCountNodes(ctx context.Context, cs kubernetes.Interface) (int, error) {
	list, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: simnode.LabelSimulated + "=true", ResourceVersion: "0"})
	if err != nil {
		return 0, fmt.Errorf("listing the cluster's simulated nodes: %w", err)
	}
	n := 0
	for i := range list.Items {
		if densityUsable(&list.Items[i]) {
			n++
		}
	}
	return n, nil
}

func densityUsable(node *corev1.Node) bool {
	if node.Spec.Unschedulable || countReady([]corev1.Node{*node}) == 0 {
		return false
	}
	for _, t := range node.Spec.Taints {
		if t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute {
			return false
		}
	}
	return true
}

// densityWaitNodes waits until at least want simulated nodes are Ready
// and returns how many are.
func densityWaitNodes(ctx context.Context, cs kubernetes.Interface, want int) (int, error) {
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		have, err := densityCountNodes(ctx, cs)
		if err == nil && have >= want {
			return have, nil
		}
		select {
		case <-ctx.Done():
			return have, fmt.Errorf("waiting for %d simulated nodes Ready (%d are; last error %v): %w", want, have, err, ctx.Err())
		case <-tick.C:
		}
	}
}
