package runtime

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/vishvananda/netlink"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeNetwork hands out one IP and records its calls.
type fakeNetwork struct {
	fail     bool
	mu       sync.Mutex
	setups   map[string]string // id -> netns
	teardown []string
}

func (f *fakeNetwork) Setup(ctx context.Context, id, netns string, cfg *runtimeapi.PodSandboxConfig) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := os.Stat(netns); err != nil {
		return nil, err
	}
	if f.fail {
		return nil, errors.New("no addresses left")
	}
	f.setups[id] = netns
	if cfg.GetMetadata().GetName() == "selfnet" {
		return nil, nil // leaves addressing to someone else
	}
	return []string{"10.88.0.5", "fd00::5"}, nil
}

func (f *fakeNetwork) Teardown(ctx context.Context, id, netns string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.teardown = append(f.teardown, id)
	return nil
}

func TestSandboxes(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx()
	netw := &fakeNetwork{setups: map[string]string{}}
	e.shutdown()
	e.netw = netw
	e.start()

	t.Run("status, network hook, files", func(t *testing.T) {
		cfg := podConfig("dns")
		cfg.DnsConfig = &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns.svc.cluster.local"}, Options: []string{"ndots:5"}}
		resp, err := e.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		id := resp.PodSandboxId
		st, err := e.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
		if err != nil {
			t.Fatal(err)
		}
		s := st.Status
		if s.State != runtimeapi.PodSandboxState_SANDBOX_READY || s.Network.Ip != "10.88.0.5" || len(s.Network.AdditionalIps) != 1 || s.Metadata.Name != "dns" || s.Labels["app"] != "dns" {
			t.Errorf("status %v", s)
		}
		pcfg := cfg
		cid := e.createStart(id, pcfg, ctrConfig("c", "sleep", "3600"))
		ex, err := e.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: cid, Cmd: []string{"sh", "-c", "cat /etc/resolv.conf /etc/hosts; hostname"}})
		if err != nil {
			t.Fatal(err)
		}
		out := string(ex.Stdout)
		for _, want := range []string{"nameserver 10.96.0.10", "search ns.svc.cluster.local", "options ndots:5", "10.88.0.5\tdns", "127.0.0.1\tlocalhost"} {
			if !strings.Contains(out, want) {
				t.Errorf("pod files lack %q:\n%s", want, out)
			}
		}
		if _, err := e.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.rs.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Errorf("second stop: %v", err)
		}
		if len(netw.teardown) < 1 || netw.teardown[0] != id {
			t.Errorf("teardown calls %v", netw.teardown)
		}
		if st := e.status(cid); st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			t.Errorf("container after StopPodSandbox: %v", st.State)
		}
		st, _ = e.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
		if st.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
			t.Errorf("after stop: %v", st.Status.State)
		}
		if _, err := os.Stat(filepath.Join(e.run, "sandboxes", id, "net")); !os.IsNotExist(err) {
			t.Errorf("netns file after stop: %v", err)
		}
		_, err = e.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: id, Config: ctrConfig("late", "sh")})
		if err == nil || !strings.Contains(err.Error(), "FailedPrecondition") {
			t.Errorf("create in a stopped sandbox: %v", err)
		}
		if _, err := e.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
			t.Errorf("second remove: %v", err)
		}
	})

	t.Run("host network", func(t *testing.T) {
		cfg := podConfig("hostnet")
		cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}
		resp, err := e.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		cid := e.createStart(resp.PodSandboxId, cfg, ctrConfig("c", "sleep", "3600"))
		ex, err := e.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: cid, Cmd: []string{"sh", "-c", "readlink /proc/self/ns/net; hostname"}})
		if err != nil {
			t.Fatal(err)
		}
		hostNS, _ := os.Readlink("/proc/thread-self/ns/net")
		hostname, _ := os.Hostname()
		if got := string(ex.Stdout); got != hostNS+"\n"+hostname+"\n" {
			t.Errorf("host-network pod sees %q, want %q", got, hostNS+"\n"+hostname+"\n")
		}
		if _, ok := netw.setups[resp.PodSandboxId]; ok {
			t.Error("the network was set up for a host-network pod")
		}
	})

	t.Run("failed network setup leaves nothing", func(t *testing.T) {
		netw.mu.Lock()
		netw.fail = true
		netw.mu.Unlock()
		defer func() { netw.mu.Lock(); netw.fail = false; netw.mu.Unlock() }()
		before := len(e.leftovers())
		_, err := e.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("nonet")})
		if err == nil || !strings.Contains(err.Error(), "no addresses left") {
			t.Fatalf("RunPodSandbox with a failing network: %v", err)
		}
		if left := e.leftovers(); len(left) != before {
			t.Errorf("left behind: %v", left)
		}
	})

	t.Run("kubelet's cgroup parent", func(t *testing.T) {
		parent := "/" + e.cgroup + "-kubelet/pod-x"
		t.Cleanup(func() { e.rt.host.removeCgroupTree("/" + e.cgroup + "-kubelet") })
		cfg := podConfig("cgparent")
		cfg.Linux.CgroupParent = parent
		resp, err := e.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if err != nil {
			t.Fatal(err)
		}
		cid := e.createStart(resp.PodSandboxId, cfg, ctrConfig("c", "sleep", "3600"))
		dir := e.rt.host.controllerDir("memory", parent+"/"+cid)
		if !strings.HasPrefix(dir, "/sys/fs/cgroup/") {
			t.Fatalf("memory dir %q", dir)
		}
		if _, err := os.Stat(filepath.Join(dir, "cgroup.procs")); err != nil {
			t.Errorf("container cgroup under the kubelet's parent: %v", err)
		}
		if _, err := e.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: resp.PodSandboxId}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("container cgroup after removal: %v", err)
		}
		if _, err := os.Stat(filepath.Dir(dir)); err != nil {
			t.Errorf("the kubelet's pod cgroup was removed: %v", err)
		}
	})

	t.Run("IP found in the namespace", func(t *testing.T) {
		resp, err := e.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: podConfig("selfnet")})
		if err != nil {
			t.Fatal(err)
		}
		ip := func() string {
			st, err := e.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: resp.PodSandboxId})
			if err != nil {
				t.Fatal(err)
			}
			return st.Status.Network.Ip
		}
		if got := ip(); got != "" {
			t.Errorf("loopback-only pod reports IP %q", got)
		}
		// Give the pod's own namespace (no route out) an address.
		netns := e.rt.sandboxes[resp.PodSandboxId].st.NetNS
		err = inNetNS(netns, func() error {
			lo, err := netlink.LinkByName("lo")
			if err != nil {
				return err
			}
			addr, _ := netlink.ParseAddr("10.200.0.7/32")
			return netlink.AddrAdd(lo, addr)
		})
		if err != nil {
			t.Fatal(err)
		}
		if got := ip(); got != "10.200.0.7" {
			t.Errorf("IP %q, want the namespace's 10.200.0.7", got)
		}
	})

	t.Run("duplicates and filters", func(t *testing.T) {
		cfg := podConfig("dup")
		if _, err := e.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg}); err == nil || !strings.Contains(err.Error(), "AlreadyExists") {
			t.Errorf("duplicate sandbox: %v", err)
		}
		if _, err := e.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{}}); err == nil || !strings.Contains(err.Error(), "InvalidArgument") {
			t.Errorf("sandbox without metadata: %v", err)
		}
		l, err := e.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{"app": "dup"}}})
		if err != nil || len(l.Items) != 1 || l.Items[0].Metadata.Name != "dup" {
			t.Errorf("list by label: %v %v", l, err)
		}
		l, err = e.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: l.Items[0].Id[:10]}})
		if err != nil || len(l.Items) != 1 {
			t.Errorf("list by ID prefix: %v %v", l, err)
		}
		if _, err := e.rs.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: "ffffffffffff"}); err == nil || !strings.Contains(err.Error(), "NotFound") {
			t.Errorf("status of an unknown sandbox: %v", err)
		}
	})
}
