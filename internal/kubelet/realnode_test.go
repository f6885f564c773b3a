package kubelet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cri "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/kubectltest"
	"github.com/rudder-dev/rudder/internal/runtime"
	"github.com/rudder-dev/rudder/internal/runtime/image"
	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
)

// The kubelet against rudder's own CRI runtime (internal/runtime): real
// containers run by runc in real namespaces and cgroups, from a busybox
// image built from the host's /bin/busybox (busybox:e2e). The API
// server and the harness are e2e_env_test.go's; only the runtime
// differs. Tests here need root and runc, and skip without them.
//
// A real env cleans up as a user would: pods deleted through the API
// (the kubelet stops and removes them), then whatever the runtime still
// holds is removed through the CRI, then the test's cgroup tree.

// realImage is the image real pods run.
const realImage = "busybox:e2e"

// requireRealNode skips a test that runs real containers where it
// cannot.
func requireRealNode(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("real containers need root (namespaces, cgroups, mounts); skipped")
	}
	if _, err := exec.LookPath("runc"); err != nil {
		t.Skip("real containers need runc (apt-get install runc); skipped")
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("the test image is built from /bin/busybox (apt-get install busybox-static); skipped")
	}
}

// newRealE2E starts an API server, rudder's runtime and the kubelet.
func newRealE2E(t *testing.T) *e2eEnv {
	requireRealNode(t)
	c := clustertest.Start(t, clustertest.Options{})
	e := &e2eEnv{t: t, c: c, root: t.TempDir(), logs: t.TempDir()}
	var suffix [4]byte
	rand.Read(suffix[:])
	id := hex.EncodeToString(suffix[:])
	// Short: the runtime's unix sockets live below it.
	runDir, err := os.MkdirTemp("/run", "rk-")
	if err != nil {
		t.Fatal(err)
	}
	e.cgroupRoot = "/rudder-kubelet-test-" + id

	images, err := image.Open(image.Config{Root: filepath.Join(e.root, "images")})
	if err != nil {
		t.Fatal(err)
	}
	tar := filepath.Join(t.TempDir(), "busybox.tar")
	imagetest.WriteDockerArchive(t, tar, realImage, imagetest.Busybox(t))
	f, err := os.Open(tar)
	if err != nil {
		t.Fatal(err)
	}
	_, err = images.Import(context.Background(), f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := runtime.New(runtime.Config{
		Root: filepath.Join(e.root, "runtime"), RunDir: runDir, LogRoot: e.logs, Images: images,
		CgroupParent: e.cgroupRoot + "/kubepods", KillTimeout: 5 * time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(runDir, "cri.sock")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- rt.Serve(ctx, sock) }()
	// Runs after the kubelet stopped (cleanups run last-registered
	// first): whatever is left goes through the CRI, then the runtime
	// stops and the test's directories, mounts and cgroups go.
	t.Cleanup(func() {
		removeAllThroughCRI(t, sock)
		cancel()
		<-served
		if err := unmountUnder(runDir); err != nil {
			t.Error(err)
		}
		os.RemoveAll(runDir)
		if err := unmountUnder(e.root); err != nil {
			t.Error(err)
		}
		if mounts, err := cgroupMounts(); err == nil {
			for _, m := range mounts {
				if err := rmdirTree(m.dir(e.cgroupRoot)); err != nil {
					t.Errorf("cgroups left: %v", err)
				}
			}
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if conn, err := net.Dial("unix", sock); err == nil {
			conn.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the runtime's socket did not appear")
		}
		time.Sleep(5 * time.Millisecond)
	}
	e.endpoint = "unix://" + sock
	e.credentials()
	e.start()
	// Runs first: the pods go as a user deletes them, the kubelet
	// stopping their containers.
	t.Cleanup(func() {
		pods := e.c.Client.CoreV1().Pods("default")
		pods.DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(1))}, metav1.ListOptions{})
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			l, err := pods.List(context.Background(), metav1.ListOptions{})
			if err == nil && len(l.Items) == 0 && runtimeEmpty(sock) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Error("pods not gone from the API and the runtime in 30 s")
	})
	return e
}

// kubectl is real kubectl against the env's API server.
func (e *e2eEnv) kubectl() *kubectltest.Kubectl {
	return kubectltest.New(e.t, e.c.Server.Kubeconfig)
}

// getPod is `kubectl get pod name`'s READY and STATUS columns.
func getPod(t *testing.T, k *kubectltest.Kubectl, name string) (ready, status string) {
	t.Helper()
	f := strings.Fields(k.OK(t, "get", "pod", name, "--no-headers"))
	if len(f) < 3 {
		t.Fatalf("kubectl get pod %s: %q", name, f)
	}
	return f[1], f[2]
}

// criConn dials the runtime's socket.
func criConn(sock string) (cri.RuntimeServiceClient, func(), error) {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	return cri.NewRuntimeServiceClient(conn), func() { conn.Close() }, nil
}

// runtimeEmpty reports whether the runtime holds no sandbox.
func runtimeEmpty(sock string) bool {
	rt, done, err := criConn(sock)
	if err != nil {
		return false
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	l, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	return err == nil && len(l.Items) == 0
}

// removeAllThroughCRI removes every sandbox (and so container) the
// runtime still holds.
func removeAllThroughCRI(t *testing.T, sock string) {
	rt, done, err := criConn(sock)
	if err != nil {
		t.Error(err)
		return
	}
	defer done()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := rt.ListPodSandbox(ctx, &cri.ListPodSandboxRequest{})
	if err != nil {
		t.Error(err)
		return
	}
	for _, s := range l.Items {
		if _, err := rt.RemovePodSandbox(ctx, &cri.RemovePodSandboxRequest{PodSandboxId: s.Id}); err != nil {
			t.Errorf("remove sandbox %s: %v", s.Id, err)
		}
	}
}
