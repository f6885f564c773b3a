package nodeipam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/rudder-dev/rudder/internal/controller"
)

// Name is the controller's name, as kube-controller-manager's.
const Name = "node-ipam-controller"

// Config is the cluster's pod network. Zero fields take the defaults.
type Config struct {
	// ClusterCIDRs are the pod network, at most one per IP family
	// (--cluster-cidr). Empty: the controller does nothing.
	ClusterCIDRs []string
	// NodeMaskIPv4 and NodeMaskIPv6 are the size of each node's subnet
	// (--node-cidr-mask-size-ipv4/-ipv6; default /24 and /64).
	NodeMaskIPv4, NodeMaskIPv6 int
	// FullRetry is how soon a node that found the range full is tried
	// again (default 30 s).
	FullRetry time.Duration
}

// NewDescriptor returns the controller for cfg. A bad cfg fails when the
// controller is built, naming the flag's value.
func NewDescriptor(cfg Config) controller.Descriptor {
	if cfg.NodeMaskIPv4 == 0 {
		cfg.NodeMaskIPv4 = 24
	}
	if cfg.NodeMaskIPv6 == 0 {
		cfg.NodeMaskIPv6 = 64
	}
	if cfg.FullRetry <= 0 {
		cfg.FullRetry = 30 * time.Second
	}
	return controller.Descriptor{
		Name: Name,
		New: func(_ context.Context, cx *controller.Context) ([]controller.Runnable, error) {
			if len(cfg.ClusterCIDRs) == 0 {
				cx.Logger(Name).Info("no cluster CIDR: node pod CIDRs are not allocated")
				return nil, nil
			}
			a, err := newAllocator(cx, cfg)
			if err != nil {
				return nil, err
			}
			return []controller.Runnable{a}, nil
		},
	}
}

type allocator struct {
	cfg      Config
	client   kubernetes.Interface
	nodes    corelisters.NodeLister
	synced   cache.InformerSynced
	recorder record.EventRecorder
	log      *slog.Logger
	ctrl     *controller.Controller

	mu   sync.Mutex
	sets []*cidrSet                // one per family, in ClusterCIDRs order
	held map[string][]netip.Prefix // node → what it was given or found holding
}

func newAllocator(cx *controller.Context, cfg Config) (*allocator, error) {
	a := &allocator{cfg: cfg, client: cx.Client, log: cx.Logger(Name), held: map[string][]netip.Prefix{}}
	seen := map[bool]bool{}
	for _, s := range cfg.ClusterCIDRs {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%s: cluster CIDR %q: %w", Name, s, err)
		}
		if seen[p.Addr().Is4()] {
			return nil, fmt.Errorf("%s: more than one cluster CIDR of a family in %v", Name, cfg.ClusterCIDRs)
		}
		seen[p.Addr().Is4()] = true
		mask := cfg.NodeMaskIPv4
		if p.Addr().Is6() {
			mask = cfg.NodeMaskIPv6
		}
		set, err := newCIDRSet(p, mask)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Name, err)
		}
		a.sets = append(a.sets, set)
	}
	inf := cx.Informers.Core().V1().Nodes()
	a.nodes, a.synced = inf.Lister(), inf.Informer().HasSynced
	if cx.Recorder != nil {
		a.recorder = cx.Recorder("node-controller")
	}
	a.ctrl = controller.New(Name, 1, a)
	a.ctrl.HasSynced = []cache.InformerSynced{a.synced}
	// Status heartbeats change nothing here: only a node's arrival, its
	// CIDRs and its deletion matter.
	inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: a.ctrl.Enqueue,
		UpdateFunc: func(o, n any) {
			on, ok1 := o.(*corev1.Node)
			nn, ok2 := n.(*corev1.Node)
			if !ok1 || !ok2 || on.UID != nn.UID || !slices.Equal(nodeCIDRs(on), nodeCIDRs(nn)) || len(nodeCIDRs(nn)) == 0 {
				a.ctrl.Enqueue(n)
			}
		},
		DeleteFunc: a.ctrl.Enqueue,
	})
	return a, nil
}

// Run rebuilds the allocations from the Nodes as they are (so a restart
// hands out no subnet twice), then reconciles nodes until ctx ends.
func (a *allocator) Run(ctx context.Context) error {
	if !cache.WaitForNamedCacheSync(Name, ctx.Done(), a.synced) {
		return nil
	}
	nodes, err := a.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	slices.SortFunc(nodes, func(x, y *corev1.Node) int { return x.CreationTimestamp.Compare(y.CreationTimestamp.Time) })
	a.mu.Lock()
	for _, n := range nodes {
		a.occupyLocked(n)
	}
	a.mu.Unlock()
	a.log.Info("node pod CIDRs", "clusterCIDRs", fmt.Sprint(a.cfg.ClusterCIDRs), "nodesWithCIDR", len(a.held))
	return a.ctrl.Run(ctx)
}

// occupyLocked records the subnets n holds; it returns them.
func (a *allocator) occupyLocked(n *corev1.Node) []netip.Prefix {
	var got []netip.Prefix
	for _, s := range nodeCIDRs(n) {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			continue
		}
		for _, set := range a.sets {
			if !set.contains(p) {
				continue
			}
			ok, err := set.occupy(p, n.Name)
			switch {
			case err != nil:
				a.log.Warn("node holds a pod CIDR of another size", "node", n.Name, "podCIDR", p, "err", err)
			case !ok:
				a.log.Warn("node holds a pod CIDR another node holds too", "node", n.Name, "podCIDR", p)
			default:
				got = append(got, p)
			}
		}
	}
	a.held[n.Name] = got
	return got
}

func nodeCIDRs(n *corev1.Node) []string {
	if len(n.Spec.PodCIDRs) > 0 {
		return n.Spec.PodCIDRs
	}
	if n.Spec.PodCIDR != "" {
		return []string{n.Spec.PodCIDR}
	}
	return nil
}

func (a *allocator) releaseLocked(node string) {
	for _, p := range a.held[node] {
		for _, set := range a.sets {
			set.release(p, node)
		}
	}
	delete(a.held, node)
}

// Reconcile gives a node without pod CIDRs one subnet per cluster CIDR,
// and frees a deleted node's.
func (a *allocator) Reconcile(ctx context.Context, name string) (controller.Result, error) {
	n, err := a.nodes.Get(name)
	a.mu.Lock()
	defer a.mu.Unlock()
	if apierrors.IsNotFound(err) {
		if len(a.held[name]) > 0 {
			a.log.Info("releasing a deleted node's pod CIDRs", "node", name, "podCIDRs", fmt.Sprint(a.held[name]))
		}
		a.releaseLocked(name)
		return controller.Result{}, nil
	}
	if err != nil {
		return controller.Result{}, err
	}
	if len(nodeCIDRs(n)) > 0 {
		// Already set (by us, an operator, or before a restart): the
		// record follows the Node, which may be a new one of that name.
		a.releaseLocked(name)
		a.occupyLocked(n)
		return controller.Result{}, nil
	}
	a.releaseLocked(name) // a node of that name that went and came back
	var given []netip.Prefix
	for _, set := range a.sets {
		p, err := set.allocate(name)
		if err != nil {
			for i, g := range given {
				a.sets[i].release(g, name)
			}
			if errors.Is(err, ErrFull) {
				a.log.Warn("no pod CIDR left for node", "node", name, "err", err)
				if a.recorder != nil {
					a.recorder.Eventf(n, corev1.EventTypeWarning, "CIDRNotAvailable", "Node %s status is now: CIDRNotAvailable (%v)", name, err)
				}
				return controller.Result{RequeueAfter: a.cfg.FullRetry}, nil
			}
			return controller.Result{}, err
		}
		given = append(given, p)
	}
	strs := make([]string, len(given))
	for i, p := range given {
		strs[i] = p.String()
	}
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": strs[0], "podCIDRs": strs}})
	if _, err := a.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		for i, g := range given {
			a.sets[i].release(g, name)
		}
		if apierrors.IsNotFound(err) {
			return controller.Result{}, nil
		}
		return controller.Result{}, fmt.Errorf("set pod CIDRs of node %s: %w", name, err)
	}
	a.held[name] = given
	a.log.Info("node pod CIDRs allocated", "node", name, "podCIDRs", fmt.Sprint(strs))
	return controller.Result{}, nil
}
