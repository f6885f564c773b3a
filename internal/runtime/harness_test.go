package runtime

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/runtime/image"
)

// TestMain lets the test binary be the monitor, as rudder is in
// production.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == ShimSubcommand {
		os.Exit(ShimMain(os.Args[2:]))
	}
	os.Exit(m.Run())
}

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: namespaces, mounts, cgroups and runc")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("needs runc:", err)
	}
}

// env is one runtime served on a real unix socket, with a CRI client.
type env struct {
	t       testing.TB
	root    string
	run     string
	logs    string
	cgroup  string
	images  *image.Store
	imgRoot string
	shim    string // ShimBinary; "" = this test binary
	wrap    func(image.Images) image.Images
	netw    Network
	rt      *Runtime
	sock    string
	stop    context.CancelFunc
	served  chan error
	rs      runtimeapi.RuntimeServiceClient
	is      runtimeapi.ImageServiceClient
	conn    *grpc.ClientConn
}

func newEnv(t testing.TB) *env { return newEnvShim(t, "") }

func newEnvShim(t testing.TB, shim string) *env {
	requireRoot(t)
	e := &env{t: t, shim: shim}
	var err error
	for _, p := range []*string{&e.root, &e.run, &e.logs, &e.imgRoot} {
		if *p, err = os.MkdirTemp("", "rt"); err != nil {
			t.Fatal(err)
		}
	}
	e.images = newImageStore(t, e.imgRoot)
	e.cgroup = "rudder-test-" + newID()[:8]
	t.Cleanup(e.cleanup)
	e.start()
	return e
}

// start (re)starts the runtime on the env's directories.
func (e *env) start() {
	e.t.Helper()
	var imgs image.Images = e.images
	if e.wrap != nil {
		imgs = e.wrap(imgs)
	}
	rt, err := New(Config{
		Root: e.root, RunDir: e.run, LogRoot: e.logs, Images: imgs,
		CgroupParent: e.cgroup, KillTimeout: 5 * time.Second, ShimBinary: e.shim, Network: e.netw,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: testLogLevel()})),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.rt = rt
	e.sock = filepath.Join(e.run, fmt.Sprintf("cri-%s.sock", newID()[:6]))
	ctx, cancel := context.WithCancel(context.Background())
	e.stop = cancel
	e.served = make(chan error, 1)
	go func() { e.served <- rt.Serve(ctx, e.sock) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		// Dial, not stat: the file exists between bind and listen.
		if c, err := net.Dial("unix", e.sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			e.t.Fatal("runtime socket did not appear")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.conn, err = grpc.NewClient("unix://"+e.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		e.t.Fatal(err)
	}
	e.rs = runtimeapi.NewRuntimeServiceClient(e.conn)
	e.is = runtimeapi.NewImageServiceClient(e.conn)
}

// shutdown stops serving and drops the runtime, as a crash would.
func (e *env) shutdown() {
	if e.stop == nil {
		return
	}
	e.conn.Close()
	e.stop()
	<-e.served
	e.stop = nil
}

func (e *env) cleanup() {
	ctx := context.Background()
	if e.stop == nil {
		e.start()
	}
	if pods, err := e.rs.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err == nil {
		for _, p := range pods.Items {
			if _, err := e.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id}); err != nil {
				e.t.Errorf("cleanup: remove sandbox: %v", err)
			}
		}
	}
	e.shutdown()
	e.rt.host.removeCgroupTree(e.cgroup)
	for _, d := range []string{e.root, e.run, e.logs, e.imgRoot} {
		os.RemoveAll(d)
	}
}

func (e *env) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	e.t.Cleanup(cancel)
	return ctx
}

func podConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: "uid-" + name},
		Hostname:     name,
		LogDirectory: "",
		Labels:       map[string]string{"app": name},
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
}

func (e *env) runPod(name string) (string, *runtimeapi.PodSandboxConfig) {
	e.t.Helper()
	cfg := podConfig(name)
	cfg.LogDirectory = filepath.Join(e.logs, name)
	resp, err := e.rs.RunPodSandbox(e.ctx(), &runtimeapi.RunPodSandboxRequest{Config: cfg})
	if err != nil {
		e.t.Fatalf("RunPodSandbox: %v", err)
	}
	return resp.PodSandboxId, cfg
}

func ctrConfig(name string, cmd ...string) *runtimeapi.ContainerConfig {
	return &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: "busybox"},
		Command:  cmd,
		LogPath:  name + ".log",
		// As the kubelet sends it: CRI's zero value is POD.
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER},
		}},
	}
}

// createStart creates and starts a container, failing the test on error.
func (e *env) createStart(pod string, pcfg *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) string {
	e.t.Helper()
	ctx := e.ctx()
	cr, err := e.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: cfg, SandboxConfig: pcfg})
	if err != nil {
		e.t.Fatalf("CreateContainer: %v", err)
	}
	if _, err := e.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.ContainerId}); err != nil {
		e.t.Fatalf("StartContainer: %v", err)
	}
	return cr.ContainerId
}

func (e *env) status(id string) *runtimeapi.ContainerStatus {
	e.t.Helper()
	s, err := e.rs.ContainerStatus(e.ctx(), &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		e.t.Fatalf("ContainerStatus: %v", err)
	}
	return s.Status
}

// waitExited polls the container's status until it has exited.
func (e *env) waitExited(id string, within time.Duration) *runtimeapi.ContainerStatus {
	e.t.Helper()
	deadline := time.Now().Add(within)
	for {
		s := e.status(id)
		if s.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("container %s still %v after %v", id[:12], s.State, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitFor polls cond until it holds.
func waitFor(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// leftovers lists what the runtime still holds on the host: mounts under
// its directories, its cgroups, files in its state directories.
func (e *env) leftovers() []string {
	var out []string
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	for _, line := range strings.Split(string(mi), "\n") {
		f := strings.Fields(line)
		if len(f) > 4 && (strings.HasPrefix(f[4], e.run) || strings.HasPrefix(f[4], e.root) || strings.HasPrefix(f[4], e.imgRoot)) {
			out = append(out, "mount "+f[4])
		}
	}
	for _, h := range e.rt.host.hierarchies {
		dir := h.dir(e.cgroup)
		ents, _ := os.ReadDir(dir)
		for _, en := range ents {
			if en.IsDir() {
				out = append(out, "cgroup "+filepath.Join(dir, en.Name()))
			}
		}
	}
	for _, d := range []string{"sandboxes", "containers"} {
		for _, base := range []string{e.root, e.run} {
			ents, _ := os.ReadDir(filepath.Join(base, d))
			for _, en := range ents {
				out = append(out, "state "+filepath.Join(base, d, en.Name()))
			}
		}
	}
	// Processes: monitors name their state directory, runc its root.
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, _ := os.ReadFile(p)
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cmd, e.root+"/") || strings.Contains(cmd, e.run+"/") {
			out = append(out, "process "+filepath.Base(filepath.Dir(p))+": "+cmd)
		}
	}
	ents, _ := os.ReadDir(filepath.Join(e.run, "runc"))
	for _, en := range ents {
		out = append(out, "runc "+en.Name())
	}
	ents, _ = os.ReadDir(filepath.Join(e.imgRoot, "rootfs"))
	for _, en := range ents {
		out = append(out, "rootfs "+en.Name())
	}
	return out
}

// testLogLevel is warn, or debug with RUDDER_TEST_DEBUG set.
func testLogLevel() slog.Level {
	if os.Getenv("RUDDER_TEST_DEBUG") != "" {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}
