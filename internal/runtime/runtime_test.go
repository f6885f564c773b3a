package runtime

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestLifecycle runs a pod with a busybox container through the CRI
// socket: logs, exec, status, stop on SIGTERM, removal leaving nothing.
func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx()
	pod, pcfg := e.runPod("web")
	id := e.createStart(pod, pcfg, ctrConfig("main", "sh", "-c", `trap 'echo got TERM; exit 0' TERM; echo hi; echo oops >&2; sleep 3600 & wait`))

	logPath := filepath.Join(e.logs, "web", "main.log")
	var log string
	waitFor(t, 10*time.Second, "the container's log", func() bool {
		b, _ := os.ReadFile(logPath)
		log = string(b)
		return strings.Contains(log, " stdout F hi\n") && strings.Contains(log, " stderr F oops\n")
	})
	t.Logf("log:\n%s", log)
	first := strings.SplitN(log, " ", 2)[0]
	if _, err := time.Parse(time.RFC3339Nano, first); err != nil {
		t.Errorf("log timestamp %q: %v", first, err)
	}

	st := e.status(id)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.StartedAt == 0 || st.LogPath != logPath {
		t.Fatalf("status = %v started %d log %q", st.State, st.StartedAt, st.LogPath)
	}
	if st.Image.GetImage() != "docker.io/library/busybox:latest" || !strings.HasPrefix(st.ImageId, "sha256:") || st.ImageRef == "" {
		t.Errorf("status image %q ref %q id %q", st.Image.GetImage(), st.ImageRef, st.ImageId)
	}
	ex, err := e.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"cat", "/etc/hostname"}, Timeout: 10})
	if err != nil {
		t.Fatalf("ExecSync: %v", err)
	}
	if got := strings.TrimSpace(string(ex.Stdout)); got != "web" || ex.ExitCode != 0 {
		t.Errorf("ExecSync cat /etc/hostname = %q, exit %d", got, ex.ExitCode)
	}
	ex, err = e.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", "hostname; echo err >&2; exit 4"}})
	if err != nil {
		t.Fatalf("ExecSync: %v", err)
	}
	if string(ex.Stdout) != "web\n" || string(ex.Stderr) != "err\n" || ex.ExitCode != 4 {
		t.Errorf("ExecSync = %q %q %d", ex.Stdout, ex.Stderr, ex.ExitCode)
	}

	start := time.Now()
	if _, err := e.rs.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 20}); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stop took %v: SIGTERM was not honoured", d)
	}
	st = e.status(id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 0 || st.Reason != "Completed" {
		t.Errorf("after stop: %v exit %d reason %q", st.State, st.ExitCode, st.Reason)
	}
	b, _ := os.ReadFile(logPath)
	if !strings.Contains(string(b), "stdout F got TERM") {
		t.Errorf("log lacks the trap's output:\n%s", b)
	}

	// The check below can fail: before removal it sees the pod's parts.
	kinds := map[string]bool{}
	for _, l := range e.leftovers() {
		kinds[strings.Fields(l)[0]] = true
	}
	for _, k := range []string{"mount", "cgroup", "state", "runc", "rootfs"} {
		if !kinds[k] {
			t.Errorf("before removal, leftovers() sees no %s", k)
		}
	}
	if _, err := e.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Errorf("left on the host after RemovePodSandbox:\n%s", strings.Join(left, "\n"))
	}
	if _, err := e.rs.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id}); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("status of a removed container: %v", err)
	}
}

// TestConcurrentPods runs pods in parallel through one runtime, as the
// kubelet's pod workers do, and checks the host is clean afterwards.
func TestConcurrentPods(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx()
	const n = 4
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			errs <- func() error {
				cfg := podConfig(fmt.Sprintf("par-%d", i))
				sb, err := e.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
				if err != nil {
					return err
				}
				var ids []string
				for j := 0; j < 2; j++ {
					cr, err := e.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: ctrConfig(fmt.Sprintf("c%d", j), "sleep", "3600"), SandboxConfig: cfg})
					if err != nil {
						return err
					}
					if _, err := e.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.ContainerId}); err != nil {
						return err
					}
					ids = append(ids, cr.ContainerId)
				}
				for _, id := range ids {
					ex, err := e.rs.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"hostname"}})
					if err != nil {
						return err
					}
					if got := strings.TrimSpace(string(ex.Stdout)); got != cfg.Hostname {
						return fmt.Errorf("pod %d: hostname %q", i, got)
					}
				}
				_, err = e.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId})
				return err
			}()
		}(i)
	}
	for i := 0; i < n; i++ {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Errorf("left behind:\n%s", strings.Join(left, "\n"))
	}
}
