package agent_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/rudder-dev/rudder/internal/agent"
	"github.com/rudder-dev/rudder/internal/kubectltest"
	"github.com/rudder-dev/rudder/internal/runtime/image"
	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
	"github.com/rudder-dev/rudder/internal/server"
)

// node is a one-node cluster as `rudder up` runs it: the control plane
// and a real node agent in this process, pods as real containers.
type node struct {
	srv     *server.Server
	agent   *agent.Agent
	cfg     agent.Config
	client  kubernetes.Interface
	kubectl *kubectltest.Kubectl
	ctx     context.Context
}

// requireRoot skips tests that run real containers where they cannot.
func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real-node tests need root (namespaces, cgroups, mounts); skipped")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("real-node tests need runc (apt-get install runc); skipped")
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("real-node tests build their image from /bin/busybox (apt-get install busybox-static); skipped")
	}
}

// startNode starts server + agent in a temporary data directory and
// imports the busybox test image as busybox:e2e (a tag other than latest:
// pulled only if not present, as upstream defaults imagePullPolicy).
func startNode(t *testing.T) *node {
	t.Helper()
	return startNodeWith(t, func(*agent.Config) {})
}

// startNodeWith is startNode with the agent's config changed by mod.
func startNodeWith(t *testing.T, mod func(*agent.Config)) *node {
	t.Helper()
	requireRoot(t)
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	srv, err := server.Start(ctx, server.Config{DataDir: filepath.Join(dir, "server"), HTTPSPort: 0})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	cfg := agent.Config{
		NodeName:      "node-e2e",
		NodeIP:        net.IPv4(127, 0, 0, 1),
		Dir:           filepath.Join(dir, "agent"),
		RuntimeSocket: filepath.Join(dir, "cri.sock"),
		PodLogsDir:    filepath.Join(dir, "pods"),
		KubeletPort:   0,
		// The test runs in the host's network namespace: no pod
		// network, which would build a bridge there.
		Network: agent.NetworkNone,
	}
	mod(&cfg)
	cfg.Credentials, err = agent.LocalCredentials(srv.PKI, cfg.Dir, srv.URL, cfg.NodeName, cfg.NodeIP)
	if err != nil {
		t.Fatal(err)
	}
	importBusybox(t, cfg)
	a, err := agent.Start(ctx, cfg)
	if err != nil {
		cancel()
		srv.Stop()
		t.Fatal(err)
	}
	n := &node{srv: srv, agent: a, cfg: cfg, ctx: ctx}
	t.Cleanup(func() { n.teardown(t, dir, cancel) })
	rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	n.client = kubernetes.NewForConfigOrDie(rc)
	n.kubectl = kubectltest.New(t, srv.Kubeconfig)
	n.waitNodeReady(t)
	return n
}

// teardown stops the node and the server as a user would leave them:
// pods first, deleted with a grace period (the kubelet stops and removes
// their containers), so nothing of theirs outlives the test; then
// nothing may be left on the host below dir.
func (n *node) teardown(t *testing.T, dir string, cancel context.CancelFunc) {
	grace := int64(1)
	n.client.CoreV1().Pods("default").DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{})
	n.waitNoPods(t)
	n.eventually(t, 30*time.Second, "no containers left", func() (bool, string) {
		m := append(mountsUnder(dir), mountsUnder(agent.RunDir(n.cfg))...)
		return len(m) == 0, strings.Join(m, " ")
	})
	if n.agent != nil {
		n.agent.Stop()
	}
	cancel()
	n.srv.Stop()
	if m := append(mountsUnder(dir), mountsUnder(agent.RunDir(n.cfg))...); len(m) > 0 {
		t.Errorf("mounts left behind: %v", m)
		return
	}
	// The runtime's run directory (empty by now) is this test's too.
	os.RemoveAll(agent.RunDir(n.cfg))
}

func importBusybox(t *testing.T, cfg agent.Config) {
	t.Helper()
	tar := filepath.Join(t.TempDir(), "busybox.tar")
	imagetest.WriteDockerArchive(t, tar, "busybox:e2e", imagetest.Busybox(t))
	store, err := image.Open(image.Config{Root: agent.ImagesDir(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(tar)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := store.Import(context.Background(), f); err != nil {
		t.Fatal(err)
	}
}

func (n *node) waitNodeReady(t *testing.T) {
	t.Helper()
	n.eventually(t, 30*time.Second, "node Ready", func() (bool, string) {
		node, err := n.client.CoreV1().Nodes().Get(n.ctx, n.cfg.NodeName, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady {
				return c.Status == corev1.ConditionTrue, string(c.Status) + " " + c.Message
			}
		}
		return false, "no Ready condition"
	})
}

func (n *node) waitNoPods(t *testing.T) {
	n.eventually(t, 60*time.Second, "pods gone", func() (bool, string) {
		l, err := n.client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(l.Items) == 0, fmt.Sprintf("%d pods left", len(l.Items))
	})
}

// eventually polls cond until it holds or the deadline passes.
func (n *node) eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		ok, detail := cond()
		if ok {
			return
		}
		last = detail
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %v (last: %s)", what, timeout, last)
}

func (n *node) pod(t *testing.T, name string) *corev1.Pod {
	t.Helper()
	p, err := n.client.CoreV1().Pods("default").Get(n.ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (n *node) waitPhase(t *testing.T, name string, phase corev1.PodPhase) *corev1.Pod {
	t.Helper()
	var p *corev1.Pod
	n.eventually(t, 60*time.Second, "pod "+name+" "+string(phase), func() (bool, string) {
		var err error
		p, err = n.client.CoreV1().Pods("default").Get(n.ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return p.Status.Phase == phase, fmt.Sprintf("%s %+v", p.Status.Phase, p.Status.ContainerStatuses)
	})
	return p
}

// mountsUnder lists the mount points below dir (but the agent
// directory's own, which Stop removes).
func mountsUnder(dir string) []string {
	data, _ := os.ReadFile("/proc/self/mountinfo")
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && strings.HasPrefix(f[4], dir+"/") && !strings.HasSuffix(f[4], "/agent") {
			out = append(out, f[4])
		}
	}
	return out
}

// podCgroups lists the pod cgroups (kubepods/<qos>/pod<uid>) left in any
// hierarchy under the agent's kubepods tree.
func podCgroups(h agent.Host) []string {
	var out []string
	hier, _ := filepath.Glob("/sys/fs/cgroup/*")
	for _, m := range hier {
		root := filepath.Join(m, h.KubepodsRoot())
		filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "pod") {
				out = append(out, p)
			}
			return nil
		})
	}
	return out
}

// processes lists the host's processes whose command line starts with
// marker.
func processes(marker string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		line := strings.ReplaceAll(string(cmd), "\x00", " ")
		if strings.HasPrefix(line, marker) {
			out = append(out, e.Name()+": "+line)
		}
	}
	return out
}

func TestRealNode(t *testing.T) {
	n := startNode(t)
	k := n.kubectl

	t.Run("run, logs, exec", func(t *testing.T) {
		k.OK(t, "run", "hello", "--image=busybox:e2e", "--restart=Never", "--", "sh", "-c", "echo hi; echo err >&2; exec sleep 3601")
		p := n.waitPhase(t, "hello", corev1.PodRunning)
		cs := p.Status.ContainerStatuses[0]
		if cs.ContainerID == "" || cs.ImageID == "" || cs.State.Running == nil || !cs.Ready {
			t.Errorf("container status %+v", cs)
		}
		// stdout and stderr are two pipes: their lines interleave in
		// the order the monitor reads them, as with any runtime.
		if got := k.OK(t, "logs", "hello"); got != "hi\nerr\n" && got != "err\nhi\n" {
			t.Errorf("kubectl logs: %q", got)
		}
		// ClusterFirst: the kube-dns Service's IP, the namespace's search path, ndots:5.
		if got := k.OK(t, "exec", "hello", "--", "cat", "/etc/resolv.conf"); !strings.Contains(got, "nameserver 10.96.0.10\n") ||
			!strings.Contains(got, "search default.svc.cluster.local svc.cluster.local cluster.local") || !strings.Contains(got, "options ndots:5") {
			t.Errorf("resolv.conf:\n%s", got)
		}
		if got := strings.TrimSpace(k.OK(t, "exec", "hello", "--", "cat", "/etc/hostname")); got != "hello" {
			t.Errorf("hostname %q", got)
		}
		if r := k.Run(t, "", "exec", "hello", "--", "sh", "-c", "exit 3"); r.Code != 3 {
			t.Errorf("exec exit code %d, want 3 (%s)", r.Code, r.Stderr)
		}
		if got := k.Run(t, "piped\n", "exec", "-i", "hello", "--", "cat"); got.Stdout != "piped\n" {
			t.Errorf("exec -i: %+v", got)
		}
		if len(processes("sleep 3601")) != 1 {
			t.Errorf("processes: %v", processes("sleep 3601"))
		}
	})

	t.Run("cp", func(t *testing.T) {
		src := filepath.Join(t.TempDir(), "f")
		os.WriteFile(src, []byte("copied\n"), 0o644)
		k.OK(t, "cp", src, "hello:/tmp/f")
		if got := k.OK(t, "exec", "hello", "--", "cat", "/tmp/f"); got != "copied\n" {
			t.Errorf("after cp: %q", got)
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		k.OK(t, "run", "web", "--image=busybox:e2e", "--restart=Never", "--", "sh", "-c",
			"mkdir -p /www && echo served > /www/index.html && exec httpd -f -p 8080 -h /www")
		n.waitPhase(t, "web", corev1.PodRunning)
		ctx, cancel := context.WithTimeout(n.ctx, 60*time.Second)
		defer cancel()
		cmd := k.Command(ctx, "port-forward", "pod/web", ":8080")
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() { cmd.Process.Kill(); cmd.Wait() }()
		// "Forwarding from 127.0.0.1:PORT -> 8080"
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("port-forward printed nothing: %v", err)
		}
		var local string
		if _, err := fmt.Sscanf(line, "Forwarding from %s ->", &local); err != nil {
			t.Fatalf("port-forward: %q", line)
		}
		resp, err := http.Get("http://" + local + "/index.html")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "served\n" {
			t.Errorf("through port-forward: %q", body)
		}
	})

	t.Run("exit codes", func(t *testing.T) {
		k.OK(t, "run", "fails", "--image=busybox:e2e", "--restart=Never", "--", "sh", "-c", "exit 3")
		p := n.waitPhase(t, "fails", corev1.PodFailed)
		term := p.Status.ContainerStatuses[0].State.Terminated
		if term == nil || term.ExitCode != 3 || term.Reason != "Error" {
			t.Errorf("terminated %+v", term)
		}
		k.OK(t, "run", "done", "--image=busybox:e2e", "--restart=Never", "--", "true")
		p = n.waitPhase(t, "done", corev1.PodSucceeded)
		if term := p.Status.ContainerStatuses[0].State.Terminated; term == nil || term.Reason != "Completed" {
			t.Errorf("terminated %+v", term)
		}
	})

	t.Run("agent restart adopts running containers", func(t *testing.T) {
		before := n.pod(t, "hello").Status.ContainerStatuses[0]
		n.agent.Stop()
		if len(processes("sleep 3601")) != 1 {
			t.Fatalf("the container did not outlive the agent: %v", processes("sleep 3601"))
		}
		a, err := agent.Start(n.ctx, n.cfg)
		if err != nil {
			t.Fatal(err)
		}
		n.agent = a
		n.waitNodeReady(t)
		// Give the kubelet a sync; the container must be the same one.
		n.eventually(t, 20*time.Second, "status after restart", func() (bool, string) {
			cs := n.pod(t, "hello").Status.ContainerStatuses[0]
			return cs.ContainerID == before.ContainerID && cs.RestartCount == 0 && cs.State.Running != nil, fmt.Sprintf("%+v", cs)
		})
		if got := k.OK(t, "exec", "hello", "--", "echo", "again"); got != "again\n" {
			t.Errorf("exec after restart: %q", got)
		}
		if len(processes("sleep 3601")) != 1 {
			t.Errorf("started twice: %v", processes("sleep 3601"))
		}
	})

	t.Run("delete stops the processes", func(t *testing.T) {
		k.OK(t, "delete", "pod", "hello", "--grace-period=2")
		n.eventually(t, 30*time.Second, "processes gone", func() (bool, string) {
			p := processes("sleep 3601")
			return len(p) == 0, strings.Join(p, "; ")
		})
		n.eventually(t, 30*time.Second, "pod gone", func() (bool, string) {
			_, err := n.client.CoreV1().Pods("default").Get(n.ctx, "hello", metav1.GetOptions{})
			return err != nil, "still there"
		})
	})
}
