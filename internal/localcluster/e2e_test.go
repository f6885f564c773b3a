package localcluster_test

import (
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/rudder-dev/rudder/internal/agent"
	"github.com/rudder-dev/rudder/internal/kubectltest"
	"github.com/rudder-dev/rudder/internal/localcluster"
)

// TestUpNodes runs `rudder up --nodes 2` as a user does — the real
// binary, real kubectl — and checks the nodes, pods on each, logs and
// exec through the hub (the API server's kubelet dialer), a node agent's
// restart after kill -9 with its pod kept, and that SIGTERM leaves
// nothing behind: no process, namespace, link, mount, cgroup or run
// directory.
func TestUpNodes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("rudder up --nodes needs root (network namespaces, cgroups, mounts)")
	}
	if _, err := os.Stat("/bin/busybox"); err != nil {
		t.Skip("no /bin/busybox (apt-get install busybox-static) to build the test image from")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH: cannot build the rudder binary")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "rudder")
	began := time.Now()
	if out, err := exec.Command(goBin, "build", "-o", bin, "github.com/rudder-dev/rudder/cmd/rudder").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	t.Logf("built rudder in %v", time.Since(began).Round(time.Millisecond))
	hostLinks := linkNames(t)

	dataDir := filepath.Join(tmp, "data")
	logPath := filepath.Join(tmp, "up.log")
	began = time.Now()
	up := startUp(t, bin, dataDir, logPath)
	t.Cleanup(func() {
		up.stop(t)
		if t.Failed() {
			tail, _ := os.ReadFile(logPath)
			t.Logf("rudder up's log:\n%s", lastLines(string(tail), 40))
		}
		// Whatever a failed run left, and never remove the temporary
		// directory through a mount.
		if err := localcluster.Sweep(dataDir); err != nil {
			t.Errorf("sweeping after the test: %v", err)
		}
		unmountAll(t, tmp)
	})

	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	waitFor(t, 60*time.Second, "admin.kubeconfig", func() bool { _, err := os.Stat(kubeconfig); return err == nil })
	k := kubectltest.New(t, kubeconfig)
	var nodes corev1.NodeList
	waitFor(t, 60*time.Second, "2 nodes Ready", func() bool {
		r := k.Run(t, "", "get", "nodes", "-o", "json")
		return r.Code == 0 && json.Unmarshal([]byte(r.Stdout), &nodes) == nil && readyNodes(&nodes) == 2
	})
	t.Logf("2 nodes Ready %v after start", time.Since(began).Round(time.Millisecond))

	t.Run("each node has its own InternalIP on the node subnet", func(t *testing.T) {
		seen := map[string]string{}
		for _, n := range nodes.Items {
			ip := internalIP(&n)
			a, err := netip.ParseAddr(ip)
			if err != nil || !localcluster.DefaultSubnet.Contains(a) || a == localcluster.DefaultSubnet.Addr().Next() {
				t.Errorf("node %s: InternalIP %q, want a node address in %s", n.Name, ip, localcluster.DefaultSubnet)
			}
			if other, dup := seen[ip]; dup {
				t.Errorf("nodes %s and %s share %s", n.Name, other, ip)
			}
			seen[ip] = n.Name
		}
	})

	t.Run("the kubernetes Service's endpoints name the hub", func(t *testing.T) {
		got := k.OK(t, "get", "endpointslice", "kubernetes", "-o", "jsonpath={.endpoints[0].addresses[0]}:{.ports[0].port}")
		if got != "172.30.0.1:6443" {
			t.Errorf("default/kubernetes EndpointSlice names %q, want 172.30.0.1:6443", got)
		}
	})

	out, err := exec.Command(bin, "images", "busybox", "--data-dir", dataDir).CombinedOutput()
	if err != nil || strings.Count(string(out), ": imported ") != 2 {
		t.Fatalf("rudder images busybox: %v\n%s", err, out)
	}

	for _, n := range []string{"node-1", "node-2"} {
		k.OK(t, "run", "on-"+n, "--image=busybox:local", "--image-pull-policy=Never", "--restart=Always",
			`--overrides={"apiVersion":"v1","spec":{"nodeSelector":{"kubernetes.io/hostname":"`+n+`"}}}`,
			"--", "sh", "-c", "echo hello from "+n+"; exec sleep 3600")
	}
	for _, n := range []string{"node-1", "node-2"} {
		pod := "on-" + n
		waitFor(t, 30*time.Second, pod+" Running", func() bool {
			return k.Run(t, "", "get", "pod", pod, "-o", "jsonpath={.status.phase}").Stdout == "Running"
		})
		t.Run("logs and exec on "+n, func(t *testing.T) {
			if got := k.Run(t, "", "get", "pod", pod, "-o", "jsonpath={.spec.nodeName}").Stdout; got != n {
				t.Errorf("%s runs on %q", pod, got)
			}
			if got := k.OK(t, "logs", pod); got != "hello from "+n+"\n" {
				t.Errorf("kubectl logs %s: %q", pod, got)
			}
			if got := k.OK(t, "exec", pod, "--", "cat", "/etc/hostname"); strings.TrimSpace(got) != pod {
				t.Errorf("kubectl exec %s: %q", pod, got)
			}
		})
	}

	var nodeIPs []string
	for _, n := range nodes.Items {
		nodeIPs = append(nodeIPs, internalIP(&n))
	}
	checkClusterNetwork(t, k, "on-node-1", nodeIPs)

	agents := nodeAgents(t, up.pid())
	if len(agents) != 2 {
		t.Fatalf("node agents of rudder up: %v, want node-1 and node-2", agents)
	}
	hostNS := netnsInode(t, "self")
	var nodeNS []string
	for name, pid := range agents {
		ns := netnsInode(t, strconv.Itoa(pid))
		if ns == hostNS || slices.Contains(nodeNS, ns) {
			t.Errorf("node %s's agent runs in %s: want a namespace of its own", name, ns)
		}
		nodeNS = append(nodeNS, ns)
	}

	t.Run("a killed node agent is restarted and keeps its pod", func(t *testing.T) {
		old := agents["node-1"]
		syscall.Kill(old, syscall.SIGKILL)
		killed := time.Now()
		waitFor(t, 30*time.Second, "node-1's agent restarted", func() bool {
			pid, ok := nodeAgents(t, up.pid())["node-1"]
			return ok && pid != old
		})
		t.Logf("agent restarted %v after kill -9", time.Since(killed).Round(time.Millisecond))
		// The restarted agent re-adopts the running container: exec
		// reaches the same process, which was never restarted.
		waitFor(t, 30*time.Second, "exec after the restart", func() bool {
			r := k.Run(t, "", "exec", "on-node-1", "--", "echo", "adopted")
			return r.Code == 0 && r.Stdout == "adopted\n"
		})
		got := k.OK(t, "get", "pod", "on-node-1", "-o", "jsonpath={.status.phase} {.status.containerStatuses[0].restartCount}")
		if got != "Running 0" {
			t.Errorf("on-node-1 after its agent's restart: %q, want Running with no container restart", got)
		}
	})

	// The leftovers to look for once the cluster is gone.
	var st struct {
		Cgroup  string   `json:"cgroup"`
		RunDirs []string `json:"runDirs"`
	}
	stateData, err := os.ReadFile(filepath.Join(localcluster.NodesDir(dataDir), "state.json"))
	if err != nil || json.Unmarshal(stateData, &st) != nil || st.Cgroup == "" {
		t.Fatalf("state.json: %v %s", err, stateData)
	}
	runDirs := []string{}
	for _, n := range []string{"node-1", "node-2"} {
		runDirs = append(runDirs, agent.RunDir(agent.Config{Dir: filepath.Join(localcluster.NodesDir(dataDir), n, "agent")}))
	}

	t.Run("after a crash of rudder up, the next start sweeps what it left", func(t *testing.T) {
		agents = nodeAgents(t, up.pid())
		up.cmd.Process.Kill()
		<-up.done
		// The agents stop with their parent (Pdeathsig); the containers
		// and their monitors stay, in the cluster's cgroups.
		waitFor(t, 15*time.Second, "the node agents to stop", func() bool {
			for _, pid := range agents {
				if processAlive(pid) {
					return false
				}
			}
			return true
		})
		left := processesWith(t, dataDir, nil)
		if len(left) == 0 {
			t.Fatal("nothing left running after the crash: the containers should outlive it")
		}
		leftStart := map[int]string{}
		for _, p := range left {
			pid, _ := strconv.Atoi(strings.Fields(p)[0])
			leftStart[pid] = startTime(pid)
		}
		restarted := time.Now()
		up = startUp(t, bin, dataDir, logPath)
		waitFor(t, 60*time.Second, "2 nodes Ready again", func() bool {
			r := k.Run(t, "", "get", "nodes", "-o", "json")
			var l corev1.NodeList
			return r.Code == 0 && json.Unmarshal([]byte(r.Stdout), &l) == nil && readyNodes(&l) == 2 &&
				len(nodeAgents(t, up.pid())) == 2
		})
		// The pods come back: their containers, swept with the crashed
		// run, are created again by the new agents.
		for _, n := range []string{"node-1", "node-2"} {
			waitFor(t, 60*time.Second, "exec in on-"+n+" after the restart", func() bool {
				r := k.Run(t, "", "exec", "on-"+n, "--", "echo", "back")
				return r.Code == 0 && r.Stdout == "back\n"
			})
		}
		t.Logf("2 nodes Ready and both pods back %v after the restart", time.Since(restarted).Round(time.Millisecond))
		for pid, st := range leftStart {
			if processAlive(pid) && startTime(pid) == st {
				cmdline, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
				t.Errorf("pid %d, left by the crashed run, still runs: %q", pid, cmdline)
			}
		}
		agents = nodeAgents(t, up.pid())
		nodeNS = nodeNS[:0]
		for _, pid := range agents {
			nodeNS = append(nodeNS, netnsInode(t, strconv.Itoa(pid)))
		}
	})

	t.Run("SIGTERM stops everything and leaves nothing", func(t *testing.T) {
		stopping := time.Now()
		if err := up.stop(t); err != nil {
			t.Errorf("rudder up: %v", err)
		}
		t.Logf("stopped in %v", time.Since(stopping).Round(time.Millisecond))
		for _, p := range processesWith(t, dataDir, nodeNS) {
			t.Errorf("left running: %s", p)
		}
		if m := mountsUnder(t, append([]string{tmp}, runDirs...)); len(m) > 0 {
			t.Errorf("left mounted: %v", m)
		}
		for _, d := range runDirs {
			if _, err := os.Stat(d); err == nil {
				t.Errorf("run directory %s left", d)
			}
		}
		for _, m := range cgroupMounts(t) {
			if _, err := os.Stat(filepath.Join(m, st.Cgroup)); err == nil {
				t.Errorf("cgroup %s left in %s", st.Cgroup, m)
			}
		}
		if got := linkNames(t); !slices.Equal(got, hostLinks) {
			t.Errorf("the host's links changed: %v, were %v", got, hostLinks)
		}
		if out, err := exec.Command("ip", "netns", "list").CombinedOutput(); err == nil && strings.Contains(string(out), "rudder") {
			t.Errorf("ip netns list: %s", out)
		}
	})
}

// upProc is a running `rudder up --nodes 2`.
type upProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

func startUp(t *testing.T, bin, dataDir, logPath string) *upProc {
	t.Helper()
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "up", "--nodes", "2", "--data-dir", dataDir, "--https-port", "0")
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatal(err)
	}
	u := &upProc{cmd: cmd, done: make(chan struct{})}
	go func() {
		u.err = cmd.Wait()
		logf.Close()
		close(u.done)
	}()
	return u
}

func (u *upProc) pid() int { return u.cmd.Process.Pid }

// stop sends SIGTERM and waits (30 s, then SIGKILL); it returns how the
// process ended.
func (u *upProc) stop(t *testing.T) error {
	select {
	case <-u.done:
		return u.err
	default:
	}
	u.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-u.done:
		return u.err
	case <-time.After(30 * time.Second):
		u.cmd.Process.Kill()
		<-u.done
		return fmt.Errorf("still running 30 s after SIGTERM")
	}
}

// processAlive reports whether pid runs: a zombie, dead but not yet
// reaped by whoever inherited it, does not.
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// startTime is field 22 of /proc/<pid>/stat: with the PID, it names one
// process.
func startTime(pid int) string {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func readyNodes(l *corev1.NodeList) int {
	n := 0
	for _, node := range l.Items {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

func internalIP(n *corev1.Node) string {
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	return ""
}

// linkNames lists the links of this (the host's) network namespace.
func linkNames(t *testing.T) []string {
	t.Helper()
	ifs, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range ifs {
		out = append(out, i.Name)
	}
	slices.Sort(out)
	return out
}

// nodeAgents maps node name to the PID of its agent, a child of parent.
func nodeAgents(t *testing.T, parent int) map[string]int {
	t.Helper()
	out := map[string]int{}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, _ := strconv.Atoi(filepath.Base(p))
		stat, err := os.ReadFile(p + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so count from
		// its closing parenthesis.
		fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(fields) < 2 || fields[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(p + "/cmdline")
		args := strings.Split(string(cmdline), "\x00")
		if i := slices.Index(args, "--node-name"); i > 0 && i+1 < len(args) && slices.Contains(args, "agent") {
			out[args[i+1]] = pid
		}
	}
	return out
}

func netnsInode(t *testing.T, pid string) string {
	t.Helper()
	l, err := os.Readlink("/proc/" + pid + "/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// processesWith lists processes whose command line names dir, or that
// are in, or hold a descriptor of, one of the network namespaces.
func processesWith(t *testing.T, dir string, netns []string) []string {
	t.Helper()
	var out []string
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		cmdline, _ := os.ReadFile(p + "/cmdline")
		ns, _ := os.Readlink(p + "/ns/net")
		hit := strings.Contains(string(cmdline), dir) || slices.Contains(netns, ns)
		if !hit {
			fds, _ := filepath.Glob(p + "/fd/*")
			for _, fd := range fds {
				if l, _ := os.Readlink(fd); slices.Contains(netns, l) {
					hit = true
					break
				}
			}
		}
		if hit {
			out = append(out, fmt.Sprintf("%s %q", filepath.Base(p), strings.ReplaceAll(string(cmdline), "\x00", " ")))
		}
	}
	return out
}

// mountsUnder lists the mount points at or below the prefixes.
func mountsUnder(t *testing.T, prefixes []string) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 {
			continue
		}
		for _, p := range prefixes {
			if f[4] == p || strings.HasPrefix(f[4], p+"/") {
				out = append(out, f[4])
			}
		}
	}
	return out
}

// unmountAll detaches whatever a failed run left below dir, deepest
// first, so that removing dir cannot reach through a mount.
func unmountAll(t *testing.T, dir string) {
	m := mountsUnder(t, []string{dir})
	slices.SortFunc(m, func(a, b string) int { return len(b) - len(a) })
	for _, p := range m {
		syscall.Unmount(p, syscall.MNT_DETACH)
	}
}

// cgroupMounts lists the host's cgroup hierarchies.
func cgroupMounts(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.SplitSeq(string(data), "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		if f, a := strings.Fields(pre), strings.Fields(post); ok && len(f) >= 5 && len(a) > 0 && strings.HasPrefix(a[0], "cgroup") {
			out = append(out, f[4])
		}
	}
	return out
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
