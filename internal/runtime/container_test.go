package runtime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestExitCodes(t *testing.T) {
	e := newEnv(t)
	pod, pcfg := e.runPod("exits")
	for _, tc := range []struct {
		name   string
		script string
		code   int32
		reason string
	}{
		{"error", "exit 3", 3, "Error"},
		{"completed", "echo done", 0, "Completed"},
		{"signal", "kill -9 $$", 137, "Error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ctrConfig(tc.name, "sh", "-c", tc.script)
			// In the host's pid namespace sh is not an init, which
			// ignores even SIGKILL from inside its own namespace.
			cfg.Linux.SecurityContext.NamespaceOptions = &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_NODE}
			id := e.createStart(pod, pcfg, cfg)
			st := e.waitExited(id, 10*time.Second)
			if st.ExitCode != tc.code || st.Reason != tc.reason || st.FinishedAt < st.StartedAt {
				t.Errorf("exit %d reason %q finished %d started %d; want %d %q", st.ExitCode, st.Reason, st.FinishedAt, st.StartedAt, tc.code, tc.reason)
			}
		})
	}
}

// TestStopKillsAfterTimeout: a process that catches SIGTERM and goes on
// is killed once the timeout passes; an init that cannot receive
// SIGTERM at all (no handler) is killed at once.
func TestStopKillsAfterTimeout(t *testing.T) {
	e := newEnv(t)
	pod, pcfg := e.runPod("stubborn")
	for _, tc := range []struct {
		name     string
		script   string
		min, max time.Duration
	}{
		{"catches and carries on", `trap 'echo not stopping' TERM; echo ready; while true; do sleep 0.1; done`, time.Second, 8 * time.Second},
		{"init without a handler", `echo ready; sleep 3600 & wait`, 0, 900 * time.Millisecond},
		{"init ignoring it", `trap '' TERM; echo ready; sleep 3600 & wait`, 0, 900 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := strings.ReplaceAll(tc.name, " ", "-")
			id := e.createStart(pod, pcfg, ctrConfig(name, "sh", "-c", tc.script))
			waitFor(t, 10*time.Second, "ready", func() bool {
				b, _ := os.ReadFile(filepath.Join(e.logs, "stubborn", name+".log"))
				return strings.Contains(string(b), "ready")
			})
			start := time.Now()
			if _, err := e.rs.StopContainer(e.ctx(), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
				t.Fatal(err)
			}
			if d := time.Since(start); d < tc.min || d > tc.max {
				t.Errorf("stop took %v, want %v to %v", d, tc.min, tc.max)
			}
			st := e.status(id)
			if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 137 || st.Reason != "Error" {
				t.Errorf("after kill: %v exit %d reason %q", st.State, st.ExitCode, st.Reason)
			}
		})
	}
}

func TestOOMKilled(t *testing.T) {
	e := newEnv(t)
	pod, pcfg := e.runPod("oom")
	cfg := ctrConfig("hog", "sh", "-c", `x=$(head -c 200000000 /dev/zero | tr '\0' a); echo survived`)
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 16 << 20}
	id := e.createStart(pod, pcfg, cfg)
	st := e.waitExited(id, 30*time.Second)
	if st.Reason != "OOMKilled" || st.ExitCode != 137 {
		t.Errorf("reason %q exit %d, want OOMKilled 137", st.Reason, st.ExitCode)
	}
}

// TestCreateFailureLeavesNothing: a missing entrypoint fails
// CreateContainer with runc's reason, and nothing of the container stays.
func TestCreateFailureLeavesNothing(t *testing.T) {
	e := newEnv(t)
	pod, pcfg := e.runPod("broken")
	for _, tc := range []struct {
		name string
		cfg  *runtimeapi.ContainerConfig
		want string
	}{
		{"missing entrypoint", ctrConfig("a", "/no/such/binary"), "/no/such/binary"},
		{"unknown image", func() *runtimeapi.ContainerConfig {
			c := ctrConfig("b", "sh")
			c.Image.Image = "nosuchimage"
			return c
		}(), "NotFound"},
		{"unknown user", func() *runtimeapi.ContainerConfig {
			c := ctrConfig("c", "sh")
			c.Linux.SecurityContext.RunAsUsername = "nosuchuser"
			return c
		}(), "nosuchuser"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.rs.CreateContainer(e.ctx(), &runtimeapi.CreateContainerRequest{PodSandboxId: pod, Config: tc.cfg, SandboxConfig: pcfg})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("CreateContainer error = %v, want one naming %q", err, tc.want)
			}
			cs, err := e.rs.ListContainers(e.ctx(), &runtimeapi.ListContainersRequest{})
			if err != nil || len(cs.Containers) != 0 {
				t.Errorf("containers after a failed create: %v %v", cs, err)
			}
			var left []string
			for _, l := range e.leftovers() {
				if !strings.Contains(l, "sandboxes") && !strings.HasPrefix(l, "cgroup") {
					left = append(left, l)
				}
			}
			if len(left) > 0 {
				t.Errorf("left behind:\n%s", strings.Join(left, "\n"))
			}
		})
	}
	if _, err := e.rs.StartContainer(e.ctx(), &runtimeapi.StartContainerRequest{ContainerId: "nope"}); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("StartContainer of an unknown ID: %v", err)
	}
}

// TestAdoptAfterRestart: a container outlives the runtime; a new
// runtime on the same directories adopts it and learns its exit code.
func TestAdoptAfterRestart(t *testing.T) {
	e := newEnv(t)
	pod, pcfg := e.runPod("survivor")
	id := e.createStart(pod, pcfg, ctrConfig("main", "sh", "-c", `echo up; while [ ! -f /tmp/go ]; do sleep 0.1; done; exit 7`))
	done := e.createStart(pod, pcfg, ctrConfig("done", "sh", "-c", "exit 5"))
	e.waitExited(done, 10*time.Second)
	e.shutdown()

	e.start()
	st := e.status(id)
	if st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after restart: %v, want running", st.State)
	}
	if st := e.status(done); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 5 {
		t.Errorf("exited container after restart: %v %d", st.State, st.ExitCode)
	}
	ps, err := e.rs.PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pod})
	if err != nil || ps.Status.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Errorf("sandbox after restart: %v %v", ps, err)
	}
	ex, err := e.rs.ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"touch", "/tmp/go"}, Timeout: 10})
	if err != nil || ex.ExitCode != 0 {
		t.Fatalf("ExecSync after restart: %v %v", ex, err)
	}
	st = e.waitExited(id, 10*time.Second)
	if st.ExitCode != 7 || st.Reason != "Error" {
		t.Errorf("exit %d reason %q, want 7 Error", st.ExitCode, st.Reason)
	}
	// The monitor kept logging across the restart.
	b, _ := os.ReadFile(filepath.Join(e.logs, "survivor", "main.log"))
	if !strings.Contains(string(b), "stdout F up") {
		t.Errorf("log: %s", b)
	}
}

// TestExitWhileRuntimeDown: the exit happens while no runtime runs; the
// monitor's exit file carries the code to the next runtime.
func TestExitWhileRuntimeDown(t *testing.T) {
	e := newEnv(t)
	pod, pcfg := e.runPod("orphan")
	id := e.createStart(pod, pcfg, ctrConfig("main", "sh", "-c", `while [ ! -f /tmp/go ]; do sleep 0.1; done; exit 9`))
	e.shutdown()
	c := e.rt.containers[id]
	// Reach the container without the runtime: through its rootfs.
	if err := os.WriteFile(filepath.Join(c.st.Rootfs, "tmp/go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the exit file", func() bool {
		_, err := os.Stat(filepath.Join(e.root, "containers", id, "exit.json"))
		return err == nil
	})
	e.start()
	if st := e.status(id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 9 {
		t.Errorf("after restart: %v exit %d, want exited 9", st.State, st.ExitCode)
	}
}

func TestSecurityAndNamespaces(t *testing.T) {
	e := newEnv(t)
	pod, pcfg := e.runPod("sec")
	run := func(name string, mod func(*runtimeapi.ContainerConfig), script string) string {
		t.Helper()
		cfg := ctrConfig(name, "sh", "-c", script+"; sleep 3600")
		mod(cfg)
		id := e.createStart(pod, pcfg, cfg)
		ex, err := e.rs.ExecSync(e.ctx(), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sh", "-c", script}, Timeout: 10})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return strings.TrimSpace(string(ex.Stdout) + string(ex.Stderr))
	}
	t.Run("user", func(t *testing.T) {
		got := run("user", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.RunAsUsername = "app"
			c.Linux.SecurityContext.SupplementalGroups = []int64{3000}
		}, "id")
		if !strings.Contains(got, "uid=1000") || !strings.Contains(got, "gid=1000") || !strings.Contains(got, "2000") || !strings.Contains(got, "3000") {
			t.Errorf("id = %q", got)
		}
	})
	t.Run("capabilities clipped", func(t *testing.T) {
		got := run("caps", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"SYS_RESOURCE", "NET_ADMIN"}, DropCapabilities: []string{"CHOWN"}}
		}, "grep CapEff /proc/self/status")
		var want uint64
		caps, _ := e.rt.capabilities(&runtimeapi.LinuxContainerSecurityContext{Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"SYS_RESOURCE", "NET_ADMIN"}, DropCapabilities: []string{"CHOWN"}}})
		for _, c := range caps {
			for i, n := range capNames {
				if n == c {
					want |= 1 << uint(i)
				}
			}
		}
		if want&(1<<12) == 0 || want&1 != 0 {
			t.Fatalf("computed caps %v", caps)
		}
		if !strings.HasSuffix(got, strings.TrimLeft(strings.ToLower(strings.TrimPrefix(hex16(want), "0")), "0")) {
			t.Errorf("CapEff %q, want %x", got, want)
		}
	})
	t.Run("seccomp default denies unshare", func(t *testing.T) {
		got := run("seccomp", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
			c.Linux.SecurityContext.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"SYS_ADMIN"}}
		}, "unshare -U true 2>&1; echo rc=$?")
		if !strings.Contains(got, "rc=1") {
			t.Errorf("unshare under RuntimeDefault: %q", got)
		}
		// The control: the same call passes without the profile.
		got = run("unconfined", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
			c.Linux.SecurityContext.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"SYS_ADMIN"}}
		}, "unshare -U true 2>&1; echo rc=$?")
		if !strings.Contains(got, "rc=0") {
			t.Errorf("unshare unconfined: %q", got)
		}
	})
	t.Run("readonly rootfs and masked paths", func(t *testing.T) {
		got := run("ro", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.ReadonlyRootfs = true
		}, "touch /x 2>&1; echo rc=$?; wc -c < /proc/timer_list")
		if !strings.Contains(got, "rc=1") || !strings.HasSuffix(got, "\n0") {
			t.Errorf("readonly rootfs/masked timer_list: %q", got)
		}
	})
	t.Run("sys read-only", func(t *testing.T) {
		got := run("sysro", func(*runtimeapi.ContainerConfig) {}, "grep ' /sys ' /proc/mounts")
		if !strings.Contains(got, " /sys sysfs ro,") {
			t.Errorf("/sys of an unprivileged container: %q", got)
		}
	})
	t.Run("privileged", func(t *testing.T) {
		got := run("priv", func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.Privileged = true
		}, "grep CapEff /proc/self/status; ls /dev | wc -l; wc -c < /proc/timer_list; grep ' /sys ' /proc/mounts | tr ' ' _")
		f := strings.Fields(got)
		var bnd string
		b, _ := os.ReadFile("/proc/self/status")
		for _, l := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(l, "CapBnd:"); ok {
				bnd = strings.TrimSpace(v)
			}
		}
		if len(f) != 5 || f[1] != bnd || atoi(f[2]) < 15 || f[3] == "0" || !strings.Contains(f[4], "_/sys_sysfs_rw") {
			t.Errorf("privileged: %q (host CapBnd %s)", got, bnd)
		}
	})
	t.Run("oom_score_adj clipped", func(t *testing.T) {
		got := run("oomadj", func(c *runtimeapi.ContainerConfig) {
			c.Linux.Resources = &runtimeapi.LinuxContainerResources{OomScoreAdj: -998}
		}, "cat /proc/self/oom_score_adj")
		if got != "0" && got != itoa(e.rt.host.oomMin) {
			t.Errorf("oom_score_adj %q, want the host's minimum %d", got, e.rt.host.oomMin)
		}
	})
	t.Run("shared network and shm between containers", func(t *testing.T) {
		a := run("net-a", func(*runtimeapi.ContainerConfig) {}, "echo shared > /dev/shm/x; readlink /proc/self/ns/net; readlink /proc/self/ns/uts")
		b := run("net-b", func(*runtimeapi.ContainerConfig) {}, "cat /dev/shm/x; readlink /proc/self/ns/net; readlink /proc/self/ns/uts")
		al, bl := strings.Fields(a), strings.Fields(b)
		if len(bl) != 3 || bl[0] != "shared" || al[0] != bl[1] || al[1] != bl[2] {
			t.Errorf("a=%q b=%q", a, b)
		}
		host, _ := os.Readlink("/proc/thread-self/ns/net")
		if al[0] == host {
			t.Errorf("the pod shares the host's network namespace %s", host)
		}
	})
	t.Run("pod pid namespace", func(t *testing.T) {
		pod := func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.NamespaceOptions = &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD}
		}
		a := run("pid-a", pod, "readlink /proc/self/ns/pid")
		b := run("pid-b", pod, "readlink /proc/self/ns/pid; ps -o args | grep -c '^sleep 3600'")
		own := run("pid-own", func(*runtimeapi.ContainerConfig) {}, "readlink /proc/self/ns/pid")
		if bl := strings.Fields(b); len(bl) != 2 || bl[0] != a || bl[1] != "2" || own == a {
			t.Errorf("pod pid namespaces: a=%q b=%q own=%q", a, b, own)
		}
	})
	t.Run("mounts and env", func(t *testing.T) {
		src := t.TempDir()
		os.WriteFile(filepath.Join(src, "f"), []byte("from host"), 0o644)
		got := run("mounts", func(c *runtimeapi.ContainerConfig) {
			c.Mounts = []*runtimeapi.Mount{{HostPath: src, ContainerPath: "/data", Readonly: true}}
			c.Envs = []*runtimeapi.KeyValue{{Key: "GREETING", Value: []byte("hello")}}
		}, "cat /data/f; echo; touch /data/g 2>/dev/null; echo rc=$?; echo $GREETING $FROM_IMAGE; ip -o link | wc -l")
		want := []string{"from host", "rc=1", "hello 1", "1"}
		lines := strings.Split(got, "\n")
		if len(lines) != len(want) {
			t.Fatalf("got %q", got)
		}
		for i := range want {
			if strings.TrimSpace(lines[i]) != want[i] {
				t.Errorf("line %d = %q, want %q", i, lines[i], want[i])
			}
		}
	})
}

func hex16(v uint64) string { return strings.TrimLeft(strings.ToLower(uitoa16(v)), "0") }

func uitoa16(v uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[v&15]
		v >>= 4
	}
	return string(b[:])
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + func() string { return fmtInt(n) }())
}

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	if neg {
		b = append([]byte{'-'}, b...)
	}
	return string(b)
}

var _ = context.Background
var _ = unix.Getpid

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return -1
		}
		n = n*10 + int(c-'0')
	}
	return n
}

// TestLostNamespaces: after a reboot RunDir is empty; a sandbox whose
// namespace files are gone comes back not ready, and removes cleanly.
func TestLostNamespaces(t *testing.T) {
	e := newEnv(t)
	pod, _ := e.runPod("rebooted")
	e.shutdown()
	st := e.rt.sandboxes[pod].st
	for _, p := range []string{st.NetNS, st.IPCNS, st.UTSNS} {
		if err := releaseNamespace(p); err != nil {
			t.Fatal(err)
		}
	}
	e.start()
	ps, err := e.rs.PodSandboxStatus(e.ctx(), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: pod})
	if err != nil || ps.Status.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("sandbox without namespaces: %v %v", ps, err)
	}
	if _, err := e.rs.RemovePodSandbox(e.ctx(), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: pod}); err != nil {
		t.Fatal(err)
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Errorf("left behind:\n%s", strings.Join(left, "\n"))
	}
}
