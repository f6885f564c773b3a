package agent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/kubelet"
	"github.com/rudder-dev/rudder/internal/netpolicy"
	"github.com/rudder-dev/rudder/internal/network"
	"github.com/rudder-dev/rudder/internal/proxy"
	"github.com/rudder-dev/rudder/internal/runtime"
	"github.com/rudder-dev/rudder/internal/runtime/image"
	"github.com/rudder-dev/rudder/internal/runtime/streaming"
)

// RunDir is where the runtime keeps what dies with the machine (namespace
// files, bundles, monitor sockets): /run/rudder/<hash of the agent dir>,
// short because unix socket paths below it must fit in 108 bytes, and
// one per agent so several agents on one machine keep apart.
func RunDir(cfg Config) string {
	abs, err := filepath.Abs(cfg.Dir)
	if err != nil {
		abs = cfg.Dir
	}
	sum := sha256.Sum256([]byte(abs))
	return filepath.Join("/run/rudder", hex.EncodeToString(sum[:6]))
}

// startRuntime starts rudder's CRI runtime on cfg.RuntimeSocket, with its
// streaming server (exec, attach, port-forward) on loopback: the kubelet
// proxies those requests to it.
func (a *Agent) startRuntime(ctx context.Context) error {
	cfg := a.cfg
	images, err := image.Open(image.Config{Root: ImagesDir(cfg)})
	if err != nil {
		return fmt.Errorf("images: %w", err)
	}
	netw, err := a.startNetwork(ctx)
	if err != nil {
		return err
	}
	rcfg := runtime.Config{
		Root:         RuntimeDir(cfg),
		RunDir:       RunDir(cfg),
		LogRoot:      cfg.PodLogsDir,
		Images:       images,
		OCIRuntime:   a.host.OCIRuntime,
		CgroupParent: a.kubepodsRoot(),
	}
	if netw != nil {
		rcfg.Network = netw
	}
	rt, err := runtime.New(rcfg)
	if err != nil {
		return err
	}
	if netw != nil {
		// The runtime has loaded its sandboxes: addresses held for any
		// other (the agent died between Setup and recording one) go.
		if err := gcNetwork(ctx, rt, netw); err != nil {
			slog.Warn("pod network: releasing addresses of unknown sandboxes", "err", err)
		}
	}
	stream, err := streaming.New(streaming.Config{Addr: "127.0.0.1:0", Runtime: rt.StreamRuntime()})
	if err != nil {
		return err
	}
	if err := stream.Start(ctx); err != nil {
		return fmt.Errorf("streaming server: %w", err)
	}
	rt.SetStreaming(stream)
	a.run("runtime", func() error { return rt.Serve(ctx, cfg.RuntimeSocket) })
	return waitSocket(ctx, cfg.RuntimeSocket)
}

// startNetwork starts the pod network the config asks for; nil for
// NetworkNone (sandboxes get loopback only). It is stopped, its
// masquerade table and routes removed, when the agent stops.
func (a *Agent) startNetwork(ctx context.Context) (*network.Network, error) {
	cfg := a.cfg
	if cfg.Network == NetworkNone {
		return nil, nil
	}
	client, err := a.nodeClient("rudder-network/" + cfg.NodeName)
	if err != nil {
		return nil, err
	}
	mode := network.ModeBridge
	if cfg.Network == NetworkCNI {
		mode = network.ModeCNI
	}
	n, err := network.New(network.Config{
		NodeName:     cfg.NodeName,
		NodeIP:       cfg.NodeIP,
		Client:       client,
		StateDir:     NetworkDir(cfg),
		Mode:         mode,
		ClusterCIDRs: cfg.ClusterCIDRs,
		CNIConfDir:   cfg.CNIConfDir,
		NodeNetNS:    cfg.NetworkNetNS,
	})
	if err != nil {
		return nil, err
	}
	if err := n.Start(ctx); err != nil {
		n.Stop()
		return nil, err
	}
	a.run("network", func() error {
		<-ctx.Done()
		n.Stop()
		return nil
	})
	return n, nil
}

// gcNetwork releases the addresses of sandboxes the runtime does not know.
func gcNetwork(ctx context.Context, rt *runtime.Runtime, n *network.Network) error {
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	live := make([]string, 0, len(resp.Items))
	for _, s := range resp.Items {
		live = append(live, s.Id)
	}
	return n.GC(ctx, live)
}

// nodeClient is a client of the API server as the node itself.
func (a *Agent) nodeClient(userAgent string) (kubernetes.Interface, error) {
	return clientFor(a.cfg.Credentials.Kubeconfig, userAgent)
}

// waitSocket waits until the runtime's socket exists.
func waitSocket(ctx context.Context, path string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("runtime: socket %s did not appear", path)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// startComponents starts the runtime (unless another is named) and the
// kubelet.
func (a *Agent) startComponents(ctx context.Context) error {
	if a.cfg.RuntimeEndpoint == "" {
		if err := a.startRuntime(ctx); err != nil {
			return err
		}
	}
	if err := a.startKubelet(ctx); err != nil {
		return err
	}
	if !a.cfg.Proxy.Enabled {
		return nil
	}
	if err := a.startProxy(ctx); err != nil {
		return err
	}
	if !a.cfg.NetworkPolicy.Disabled {
		return a.startNetworkPolicy(ctx)
	}
	return nil
}

// startNetworkPolicy starts the NetworkPolicy enforcer as the node's
// identity (nodes may read policies, pods and namespaces: the server's
// system:rudder:network-policy role), in the proxy's namespace.
func (a *Agent) startNetworkPolicy(ctx context.Context) error {
	cfg := a.cfg
	client, err := clientFor(cfg.Credentials.Kubeconfig, "rudder-netpolicy/"+cfg.NodeName)
	if err != nil {
		return err
	}
	e, err := netpolicy.New(netpolicy.Config{Client: client, NodeName: cfg.NodeName, NetNSPath: cfg.Proxy.NetNSPath})
	if err != nil {
		return err
	}
	a.run("netpolicy", func() error { return e.Run(ctx) })
	select {
	case <-e.Ready():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(60 * time.Second):
		return errors.New("netpolicy: no first sync within 60 s")
	}
}

// proxyClusterCIDR is the pods' IPv4 range the proxy masquerades by:
// Proxy.ClusterCIDR, else the first IPv4 one of ClusterCIDRs.
func proxyClusterCIDR(cfg Config) netip.Prefix {
	if cfg.Proxy.ClusterCIDR.IsValid() {
		return cfg.Proxy.ClusterCIDR
	}
	for _, c := range cfg.ClusterCIDRs {
		if p, err := netip.ParsePrefix(strings.TrimSpace(c)); err == nil && p.Addr().Is4() {
			return p.Masked()
		}
	}
	return netip.Prefix{}
}

// startProxy starts the service proxy as the node's identity; it keeps
// the node's nftables table until the agent stops, then removes it.
func (a *Agent) startProxy(ctx context.Context) error {
	cfg := a.cfg
	kc := cfg.Credentials.ProxyKubeconfig
	if kc == "" {
		// A joined node runs its proxy as itself: nodes may read
		// Services and EndpointSlices (the cluster DNS's RBAC grants it).
		kc = cfg.Credentials.Kubeconfig
	}
	client, err := clientFor(kc, "rudder-proxy/"+cfg.NodeName)
	if err != nil {
		return err
	}
	var nodeIPs []netip.Addr
	if ip, ok := netip.AddrFromSlice(cfg.NodeIP.To4()); ok && !ip.IsLoopback() {
		nodeIPs = append(nodeIPs, ip)
	}
	p, err := proxy.New(proxy.Config{
		Client:            client,
		NodeName:          cfg.NodeName,
		NodeIPs:           nodeIPs,
		NodePortAddresses: cfg.Proxy.NodePortAddresses,
		ClusterCIDR:       proxyClusterCIDR(cfg),
		NetNSPath:         cfg.Proxy.NetNSPath,
	})
	if err != nil {
		return err
	}
	a.run("proxy", func() error { return p.Run(ctx) })
	select {
	case <-p.Ready():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(60 * time.Second):
		return errors.New("proxy: no first sync within 60 s")
	}
}

// clientFor is a protobuf client with the credentials in kubeconfig.
func clientFor(kubeconfig, userAgent string) (kubernetes.Interface, error) {
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("node credentials: %w", err)
	}
	rc.UserAgent = userAgent
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.QPS, rc.Burst = 50, 100
	return kubernetes.NewForConfig(rc)
}

// runtimeEndpoint is the CRI endpoint the kubelet uses.
func (a *Agent) runtimeEndpoint() string {
	if a.cfg.RuntimeEndpoint != "" {
		return a.cfg.RuntimeEndpoint
	}
	return "unix://" + a.cfg.RuntimeSocket
}

// startKubelet starts the kubelet as system:node:<name>; it returns once
// the node is registered and the kubelet watches its pods.
func (a *Agent) startKubelet(ctx context.Context) error {
	cfg := a.cfg
	client, err := a.nodeClient("rudder-kubelet/" + cfg.NodeName)
	if err != nil {
		return err
	}
	k, err := kubelet.New(kubelet.Config{
		NodeName:        cfg.NodeName,
		NodeIP:          cfg.NodeIP,
		Client:          client,
		RuntimeEndpoint: a.runtimeEndpoint(),
		RootDir:         KubeletDir(cfg),
		PodLogsDir:      cfg.PodLogsDir,
		KubeletPort:     cfg.KubeletPort,
		ServingCert:     cfg.Credentials.ServingCert,
		ClientCAs:       cfg.Credentials.ClientCAs,
		CgroupRoot:      a.cfg.CgroupRoot,
		CgroupsPerQOS:   true,
		ClusterDNS:      []net.IP{cfg.ClusterDNS},
		ClusterDomain:   cfg.ClusterDomain,
	})
	if err != nil {
		return err
	}
	a.run("kubelet", func() error { return k.Run(ctx) })
	select {
	case <-k.Ready():
		if cfg.DNSAddr != "" {
			return a.startDNS(ctx, client)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(60 * time.Second):
		return errors.New("kubelet: not registered within 60 s")
	}
}
