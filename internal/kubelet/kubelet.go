package kubelet

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/kubeletapi"
)

// Kubelet is one node's agent. Create it with New and run it with Run.
type Kubelet struct {
	cfg      Config
	cri      *criClient
	obs      *observer
	authz    *kubeletapi.Authorizer
	tokens   tokenCache
	hostname string
	machine  machineInfo
	minOOM   int64
	started  time.Time

	podInformer cache.SharedIndexInformer
	svcInformer cache.SharedIndexInformer

	// Set once the runtime answered Version (Run).
	runtimeName, runtimeVersion string

	listener net.Listener

	mu       sync.Mutex
	workers  map[types.UID]*podWorker
	admitted map[types.UID]bool // admit.go
	wg       sync.WaitGroup
	runCtx   context.Context
	relisted map[types.UID]string // the last relist's fingerprint of each pod

	nodeMu   sync.Mutex
	lastPost time.Time
	lease    leaseState

	ready chan struct{}
	// recorder records events (events.go); set by Run.
	recorder record.EventRecorder
	// statuses is the last status computed per pod UID (statuswriter.go).
	statuses sync.Map
	// probes runs the containers' probes (probe.go).
	probes *probeManager
	// syncs counts finished pod syncs (tests wait on it).
	syncs atomic.Int64
}

// Indexes of the pod informer.
const byUIDIndex = "uid"

// New checks cfg, fills its defaults and prepares the kubelet: it opens
// the kubelet API's listener (so Port is known) and the CRI client;
// nothing talks to the API server or the runtime until Run.
func New(cfg Config) (*Kubelet, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c, err := dialCRI(cfg.RuntimeEndpoint, cfg.ImageEndpoint, cfg.RuntimeRequestTimeout)
	if err != nil {
		return nil, err
	}
	hostname, _ := os.Hostname()
	if hostname == "" {
		hostname = cfg.NodeName
	}
	k := &Kubelet{
		cfg:      cfg,
		cri:      c,
		obs:      newObserver(c, cfg.RootDir),
		authz:    kubeletapi.NewAuthorizer(cfg.Client, cfg.Clock, cfg.Logger),
		hostname: hostname,
		machine:  readMachineInfo(cfg.RootDir),
		minOOM:   minOOMScoreAdj(),
		started:  cfg.Clock.Now(),
		workers:  map[types.UID]*podWorker{},
		admitted: map[types.UID]bool{},
		relisted: map[types.UID]string{},
		ready:    make(chan struct{}),
		probes:   newProbeManager(),
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.NodeIP.String(), strconv.Itoa(cfg.KubeletPort)))
	if err != nil {
		c.close()
		return nil, fmt.Errorf("kubelet: listen: %w", err)
	}
	k.listener = ln

	client := cfg.Client
	selector := fields.OneTermEqualSelector("spec.nodeName", cfg.NodeName).String()
	k.podInformer = cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, o)
		},
	}, &corev1.Pod{}, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{byUIDIndex: func(obj any) ([]string, error) {
		return []string{string(obj.(*corev1.Pod).UID)}, nil
	}}})
	k.svcInformer = cache.NewSharedIndexInformerWithOptions(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return client.CoreV1().Services(metav1.NamespaceAll).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return client.CoreV1().Services(metav1.NamespaceAll).Watch(ctx, o)
		},
	}, &corev1.Service{}, cache.SharedIndexInformerOptions{Indexers: cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc}})
	for _, inf := range []cache.SharedIndexInformer{k.podInformer, k.svcInformer} {
		if err := inf.SetTransform(dropManagedFields); err != nil {
			k.close()
			return nil, err
		}
	}
	if _, err := k.podInformer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { k.podChanged(obj) },
		UpdateFunc: func(old, obj any) {
			// The kubelet's own status writes come back as updates; only
			// what the kubelet acts on wakes the worker (the status shows
			// what the last sync saw, e.g. ErrImagePull before
			// ImagePullBackOff).
			if o, n := old.(*corev1.Pod), obj.(*corev1.Pod); statusOnlyChange(o, n) {
				return
			}
			k.podChanged(obj)
		},
		DeleteFunc: func(obj any) { k.podChanged(obj) },
	}); err != nil {
		k.close()
		return nil, err
	}
	return k, nil
}

// statusOnlyChange: nothing but the status (and the version) differs.
func statusOnlyChange(o, n *corev1.Pod) bool {
	return o.UID == n.UID && equality.Semantic.DeepEqual(o.Spec, n.Spec) && equality.Semantic.DeepEqual(o.DeletionTimestamp, n.DeletionTimestamp) &&
		equality.Semantic.DeepEqual(o.DeletionGracePeriodSeconds, n.DeletionGracePeriodSeconds) &&
		equality.Semantic.DeepEqual(o.Labels, n.Labels) && equality.Semantic.DeepEqual(o.Annotations, n.Annotations) &&
		(o.Status.Phase == n.Status.Phase || !podIsTerminal(n))
}

func dropManagedFields(obj any) (any, error) {
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// Port is the kubelet API's port.
func (k *Kubelet) Port() int { return k.listener.Addr().(*net.TCPAddr).Port }

// Ready is closed once the node is registered and the pod informer has
// synced.
func (k *Kubelet) Ready() <-chan struct{} { return k.ready }

func (k *Kubelet) client() kubernetes.Interface { return k.cfg.Client }

func (k *Kubelet) close() {
	k.cri.close()
	if k.listener != nil {
		k.listener.Close()
	}
}

// Run runs the kubelet until ctx ends: it waits for the runtime, serves
// the kubelet API, registers the node, keeps its lease and status, and
// runs the pods bound to it. Pods keep running when it returns (a
// restarted kubelet adopts them). It returns nil when ctx ends, or the
// error that stopped it.
func (k *Kubelet) Run(ctx context.Context) error {
	defer k.close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := k.waitRuntime(ctx); err != nil {
		return err
	}
	srv := k.newServer()
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(k.tlsListener()) }()
	defer srv.Close()

	k.startEvents(ctx)
	if err := k.registerNode(ctx); err != nil {
		return err
	}
	k.mu.Lock()
	k.runCtx = ctx
	k.mu.Unlock()
	go k.podInformer.RunWithContext(ctx)
	go k.svcInformer.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), k.podInformer.HasSynced, k.svcInformer.HasSynced) {
		return ctx.Err()
	}
	close(k.ready)
	k.cfg.Logger.Info("kubelet running", "runtime", k.runtimeName+"://"+k.runtimeVersion, "port", k.Port())
	// Every pod the API binds here gets a worker (the informer's adds did
	// that already); the relist finds the rest of the runtime's.
	var loops sync.WaitGroup
	for _, f := range []func(context.Context){k.leaseLoop, k.nodeStatusLoop, k.relistLoop} {
		loops.Add(1)
		go func() { defer loops.Done(); f(ctx) }()
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
		err = fmt.Errorf("kubelet API: %w", err)
	}
	cancel()
	loops.Wait()
	k.wg.Wait()
	return err
}

// waitRuntime asks the runtime its version until it answers.
func (k *Kubelet) waitRuntime(ctx context.Context) error {
	delay := 100 * time.Millisecond
	for {
		cctx, cancel := k.cri.ctx(ctx)
		v, err := k.cri.rt.Version(cctx, &cri.VersionRequest{})
		cancel()
		if err == nil {
			k.runtimeName, k.runtimeVersion = v.RuntimeName, v.RuntimeVersion
			return nil
		}
		k.cfg.Logger.Info("waiting for the container runtime", "endpoint", k.cfg.RuntimeEndpoint, "err", err)
		t := k.cfg.Clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C():
		}
		delay = min(2*delay, 5*time.Second)
	}
}

// podByUID is the API's pod of that UID bound here, or nil.
func (k *Kubelet) podByUID(uid types.UID) *corev1.Pod {
	objs, err := k.podInformer.GetIndexer().ByIndex(byUIDIndex, string(uid))
	if err != nil || len(objs) == 0 {
		return nil
	}
	return objs[0].(*corev1.Pod)
}

// podByName is the pod namespace/name bound here, or nil.
func (k *Kubelet) podByName(namespace, name string) *corev1.Pod {
	obj, ok, _ := k.podInformer.GetIndexer().GetByKey(namespace + "/" + name)
	if !ok {
		return nil
	}
	return obj.(*corev1.Pod)
}

func (k *Kubelet) podChanged(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if p.DeletionTimestamp != nil || k.podByUID(p.UID) == nil {
		k.interrupt(p.UID)
	}
	k.trigger(p.UID)
}

// hostIPs are the node's addresses pods see as status.hostIP(s).
func (k *Kubelet) hostIPs() []string { return []string{k.cfg.NodeIP.String()} }

// services lists a namespace's services (service links).
func (k *Kubelet) services(namespace string) []*corev1.Service {
	objs, err := k.svcInformer.GetIndexer().ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil
	}
	out := make([]*corev1.Service, 0, len(objs))
	for _, o := range objs {
		out = append(out, o.(*corev1.Service))
	}
	return out
}
