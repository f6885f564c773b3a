package runtime

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func vmRSS(pid int) int { return procKiB(pid, "VmRSS:") }

// procKiB reads a KiB field of /proc/PID/status.
func procKiB(pid int, field string) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			n, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return n
		}
	}
	return 0
}

// BenchmarkRunPod is the cost of starting a pod: RunPodSandbox +
// CreateContainer + StartContainer of busybox `sleep 3600`, over the CRI
// socket. It reports the monitor's RSS. RUDDER_SHIM_BINARY=path/to/rudder
// measures the real binary as the monitor instead of the test binary.
func BenchmarkRunPod(b *testing.B) {
	e := newEnvShim(b, os.Getenv("RUDDER_SHIM_BINARY"))
	ctx := e.ctx()
	var pods []string
	var lastCtr string
	var tRun, tCreate, tStart time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cfg := podConfig(fmt.Sprintf("bench-%d", i))
		t0 := time.Now()
		sb, err := e.rs.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: cfg})
		t1 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		pods = append(pods, sb.PodSandboxId)
		cr, err := e.rs.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: ctrConfig("main", "sleep", "3600"), SandboxConfig: cfg})
		if err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if _, err := e.rs.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: cr.ContainerId}); err != nil {
			b.Fatal(err)
		}
		tRun, tCreate, tStart = tRun+t1.Sub(t0), tCreate+t2.Sub(t1), tStart+time.Since(t2)
		lastCtr = cr.ContainerId
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/pod")
	b.ReportMetric(float64(tRun.Milliseconds())/float64(b.N), "ms-runp")
	b.ReportMetric(float64(tCreate.Milliseconds())/float64(b.N), "ms-create")
	b.ReportMetric(float64(tStart.Milliseconds())/float64(b.N), "ms-start")
	if c := e.rt.containers[lastCtr]; c != nil {
		b.ReportMetric(float64(vmRSS(c.st.ShimPid)), "shim-RSS-KiB")
	}
	for _, p := range pods {
		if _, err := e.rs.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p}); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMonitorRSS logs the memory a container's monitor holds.
func TestMonitorRSS(t *testing.T) {
	e := newEnvShim(t, os.Getenv("RUDDER_SHIM_BINARY"))
	pod, pcfg := e.runPod("rss")
	id := e.createStart(pod, pcfg, ctrConfig("main", "sh", "-c", "while true; do echo line; sleep 0.01; done"))
	waitFor(t, 10*time.Second, "some output logged", func() bool {
		fi, err := os.Stat(e.status(id).LogPath)
		return err == nil && fi.Size() > 2000
	})
	pid := e.rt.containers[id].st.ShimPid
	rss, anon := procKiB(pid, "VmRSS:"), procKiB(pid, "RssAnon:")
	exe := e.shim
	if exe == "" {
		exe, _ = os.Executable() // the default, /proc/self/exe
	}
	fi, _ := os.Stat(exe)
	// File-backed pages (the binary's text and data) are shared by every
	// monitor; the anonymous ones are each monitor's own cost.
	t.Logf("monitor VmRSS %d KiB, of which private (RssAnon) %d KiB; binary %s, %d MiB", rss, anon, exe, fi.Size()>>20)
	if anon == 0 || anon > 32<<10 {
		t.Errorf("monitor RssAnon %d KiB", anon)
	}
}
