package runtime

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/runtime/streaming"
)

// syncBuffer is a WriteCloser safe to read while written.
type syncBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	closed bool
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) Close() error { s.mu.Lock(); s.closed = true; s.mu.Unlock(); return nil }
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestStreamRuntime(t *testing.T) {
	e := newEnv(t)
	pod, pcfg := e.runPod("stream")
	sr := e.rt.StreamRuntime()

	t.Run("exec", func(t *testing.T) {
		id := e.createStart(pod, pcfg, ctrConfig("exec", "sleep", "3600"))
		var out, errb syncBuffer
		code, err := sr.Exec(e.ctx(), id, []string{"sh", "-c", "read x; echo got $x; echo e >&2; exit 2"}, strings.NewReader("line\n"), &out, &errb, false, nil)
		if err != nil || code != 2 || out.String() != "got line\n" || errb.String() != "e\n" {
			t.Errorf("exec = %d %v, out %q err %q", code, err, out.String(), errb.String())
		}
	})
	t.Run("exec tty", func(t *testing.T) {
		id := e.createStart(pod, pcfg, ctrConfig("exectty", "sleep", "3600"))
		resize := make(chan streaming.TerminalSize, 1)
		resize <- streaming.TerminalSize{Width: 123, Height: 45}
		var out syncBuffer
		inR, inW := io.Pipe()
		done := make(chan struct{})
		var code int
		var err error
		go func() {
			code, err = sr.Exec(e.ctx(), id, []string{"sh", "-c", "sleep 0.3; stty size; tty; exit 3"}, inR, &out, nil, true, resize)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("tty exec did not return")
		}
		inW.Close()
		close(resize)
		got := strings.ReplaceAll(out.String(), "\r", "")
		if err != nil || code != 3 || !strings.Contains(got, "45 123") || !strings.Contains(got, "/dev/pts/") {
			t.Errorf("tty exec = %d %v, out %q", code, err, got)
		}
	})
	t.Run("exec of a missing binary", func(t *testing.T) {
		id := e.createStart(pod, pcfg, ctrConfig("exec404", "sleep", "3600"))
		_, err := e.rs.ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"/nope"}})
		if err == nil || !strings.Contains(err.Error(), "/nope") {
			t.Errorf("ExecSync /nope: %v", err)
		}
	})
	t.Run("exec timeout", func(t *testing.T) {
		id := e.createStart(pod, pcfg, ctrConfig("exectimeout", "sleep", "3600"))
		start := time.Now()
		_, err := e.rs.ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sleep", "60"}, Timeout: 1})
		if err == nil || !strings.Contains(err.Error(), "DeadlineExceeded") || time.Since(start) > 10*time.Second {
			t.Errorf("ExecSync past its timeout: %v after %v", err, time.Since(start))
		}
		ex, err := e.rs.ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"ps", "-o", "args"}})
		if err != nil || strings.Contains(string(ex.Stdout), "sleep 60") || !strings.Contains(string(ex.Stdout), "sleep 3600") {
			t.Errorf("the timed-out process still runs: %q %v", ex.GetStdout(), err)
		}
	})
	t.Run("attach", func(t *testing.T) {
		cfg := ctrConfig("attach", "sh", "-c", "while read l; do echo out:$l; echo err:$l >&2; done; echo bye")
		cfg.Stdin, cfg.StdinOnce = true, true
		id := e.createStart(pod, pcfg, cfg)
		inR, inW := io.Pipe()
		var out, errb syncBuffer
		done := make(chan error, 1)
		go func() { done <- sr.Attach(e.ctx(), id, inR, &out, &errb, false, nil) }()
		// Attach is asynchronous: send until the container echoes.
		waitFor(t, 10*time.Second, "attached output", func() bool {
			inW.Write([]byte("ping\n"))
			return strings.Contains(out.String(), "out:ping") && strings.Contains(errb.String(), "err:ping")
		})
		inW.Close() // stdin-once: the container sees EOF
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("attach: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("attach did not end with the container")
		}
		st := e.waitExited(id, 10*time.Second)
		if st.ExitCode != 0 || !strings.Contains(out.String(), "bye") {
			t.Errorf("exit %d, out %q", st.ExitCode, out.String())
		}
	})
	t.Run("attach tty", func(t *testing.T) {
		cfg := ctrConfig("attachtty", "sh")
		cfg.Stdin, cfg.Tty = true, true
		id := e.createStart(pod, pcfg, cfg)
		inR, inW := io.Pipe()
		var out syncBuffer
		resize := make(chan streaming.TerminalSize, 1)
		resize <- streaming.TerminalSize{Width: 99, Height: 33}
		ctx, cancel := context.WithCancel(e.ctx())
		done := make(chan error, 1)
		go func() { done <- sr.Attach(ctx, id, inR, &out, nil, true, resize) }()
		waitFor(t, 10*time.Second, "the shell's answer", func() bool {
			inW.Write([]byte("stty size; echo to-$((40+2))\n"))
			got := out.String()
			return strings.Contains(got, "to-42") && strings.Contains(got, "33 99")
		})
		cancel()
		if err := <-done; err != nil {
			t.Errorf("attach: %v", err)
		}
		// The tty's output reached the log as stdout.
		b, _ := os.ReadFile(filepath.Join(e.logs, "stream", "attachtty.log"))
		if !strings.Contains(string(b), " stdout F to-42") {
			t.Errorf("tty log:\n%s", b)
		}
		inW.Close()
	})
	t.Run("port-forward", func(t *testing.T) {
		id := e.createStart(pod, pcfg, ctrConfig("web", "httpd", "-f", "-p", "8080", "-h", "/www"))
		_ = id
		var got string
		waitFor(t, 10*time.Second, "the pod's web server", func() bool {
			a, b := net.Pipe()
			done := make(chan error, 1)
			go func() { done <- sr.PortForward(e.ctx(), pod, 8080, b) }()
			a.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(a, "GET /index.html HTTP/1.0\r\n\r\n")
			resp, _ := io.ReadAll(a)
			a.Close()
			<-done
			got = string(resp)
			return strings.Contains(got, "hello from the pod")
		})
		// Nothing listens on the host's 8080 for this: the traffic went
		// into the pod's namespace.
		if c, err := net.DialTimeout("tcp", "127.0.0.1:8080", time.Second); err == nil {
			c.Close()
			t.Log("note: something on the host listens on 8080 too")
		}
		if err := sr.PortForward(e.ctx(), pod, 8081, nopRWC{}); err == nil || !strings.Contains(err.Error(), "refused") {
			t.Errorf("port-forward to a closed port: %v", err)
		}
	})
	t.Run("URLs without a streaming server", func(t *testing.T) {
		_, err := e.rs.Exec(e.ctx(), &runtimeapi.ExecRequest{ContainerId: "x", Cmd: []string{"sh"}, Stdout: true})
		if err == nil || !strings.Contains(err.Error(), "NotFound") {
			t.Errorf("Exec of an unknown container: %v", err)
		}
	})
}

type nopRWC struct{}

func (nopRWC) Read([]byte) (int, error)    { return 0, io.EOF }
func (nopRWC) Write(p []byte) (int, error) { return len(p), nil }
func (nopRWC) Close() error                { return nil }

func TestStatsUpdateReopen(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx()
	pod, pcfg := e.runPod("stats")
	id := e.createStart(pod, pcfg, ctrConfig("busy", "sh", "-c", "dd if=/dev/zero of=/big bs=1M count=3 2>/dev/null; i=0; while true; do i=$((i+1)); echo $i; done | tail -c 1 >/dev/null"))
	var cs *runtimeapi.ContainerStats
	waitFor(t, 20*time.Second, "CPU nanocores from two samples", func() bool {
		r, err := e.rs.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: id})
		if err != nil {
			t.Fatal(err)
		}
		cs = r.Stats
		return cs.GetCpu().GetUsageNanoCores().GetValue() > 10_000_000 && cs.GetWritableLayer().GetUsedBytes().GetValue() >= 3<<20
	})
	if ws := cs.GetMemory().GetWorkingSetBytes().GetValue(); ws == 0 || ws > cs.GetMemory().GetUsageBytes().GetValue() {
		t.Errorf("memory: %v", cs.GetMemory())
	}
	ps, err := e.rs.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: pod})
	if err != nil || ps.Stats.GetLinux().GetCpu().GetUsageCoreNanoSeconds().GetValue() == 0 || len(ps.Stats.GetLinux().GetContainers()) != 1 {
		t.Errorf("pod stats: %v %v", ps, err)
	}
	ls, err := e.rs.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{PodSandboxId: pod}})
	if err != nil || len(ls.Stats) != 1 {
		t.Errorf("list stats: %v %v", ls, err)
	}

	// Update: the new memory limit reaches the cgroup.
	_, err = e.rs.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id,
		Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 256 << 20, CpuShares: 512}})
	if err != nil {
		t.Fatalf("UpdateContainerResources: %v", err)
	}
	file := "memory.limit_in_bytes"
	if e.rt.host.cgroupV2 {
		file = "memory.max"
	}
	b, _ := os.ReadFile(filepath.Join(e.rt.host.controllerDir("memory", e.rt.containers[id].st.CgroupsPath), file))
	if strings.TrimSpace(string(b)) != "268435456" {
		t.Errorf("%s = %q after update", file, b)
	}
	if st := e.status(id); st.Resources.GetLinux().GetMemoryLimitInBytes() != 256<<20 {
		t.Errorf("status resources: %v", st.Resources)
	}

	// Reopen: after the log is moved away, the monitor writes a new one.
	lid := e.createStart(pod, pcfg, ctrConfig("logger", "sh", "-c", "while true; do echo tick; sleep 0.05; done"))
	logPath := filepath.Join(e.logs, "stats", "logger.log")
	waitFor(t, 10*time.Second, "first log", func() bool { fi, err := os.Stat(logPath); return err == nil && fi.Size() > 0 })
	if err := os.Rename(logPath, logPath+".rotated"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.rs.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: lid}); err != nil {
		t.Fatalf("ReopenContainerLog: %v", err)
	}
	waitFor(t, 10*time.Second, "a reopened log", func() bool {
		b, _ := os.ReadFile(logPath)
		return strings.Contains(string(b), "stdout F tick")
	})
}

func TestImageServiceAndStatus(t *testing.T) {
	e := newEnv(t)
	ctx := e.ctx()
	v, err := e.rs.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil || v.RuntimeName != "rudder" || v.RuntimeApiVersion != "v1" {
		t.Errorf("Version: %v %v", v, err)
	}
	st, err := e.rs.Status(ctx, &runtimeapi.StatusRequest{})
	if err != nil || len(st.Status.Conditions) != 2 || !st.Status.Conditions[0].Status || !st.Status.Conditions[1].Status {
		t.Errorf("Status: %v %v", st, err)
	}
	list, err := e.is.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil || len(list.Images) != 1 || !strings.Contains(strings.Join(list.Images[0].RepoTags, ","), "busybox") {
		t.Fatalf("ListImages: %v %v", list, err)
	}
	is, err := e.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "busybox"}})
	if err != nil || is.Image.GetId() != list.Images[0].Id {
		t.Errorf("ImageStatus busybox: %v %v", is, err)
	}
	is, err = e.is.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: "nosuch"}})
	if err != nil || is.Image != nil {
		t.Errorf("ImageStatus of a missing image: %v %v", is, err)
	}
	fs, err := e.is.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(fs.ImageFilesystems) != 1 || fs.ImageFilesystems[0].UsedBytes.GetValue() == 0 {
		t.Errorf("ImageFsInfo: %v %v", fs, err)
	}
	// Pull from a loopback registry, then remove.
	host := imageRegistry(t)
	pr, err := e.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: host + "/tools/busybox:1"}})
	if err != nil || !strings.HasPrefix(pr.ImageRef, "sha256:") {
		t.Fatalf("PullImage: %v %v", pr, err)
	}
	_, err = e.is.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: host + "/tools/nothere:1"}})
	if err == nil {
		t.Error("pulling a missing image succeeded")
	}
	if _, err := e.is.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: host + "/tools/busybox:1"}}); err != nil {
		t.Errorf("RemoveImage: %v", err)
	}
	if _, err := e.is.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: "nosuch:1"}}); err != nil {
		t.Errorf("RemoveImage of a missing image: %v", err)
	}
	_ = context.Background
}
