package runtime

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rudder-dev/rudder/internal/runtime/streaming"
)

// TestCrictl drives the runtime with upstream crictl, when
// RUDDER_CRICTL names its binary (go install
// sigs.k8s.io/cri-tools/cmd/crictl@v1.33.0).
func TestCrictl(t *testing.T) {
	bin := os.Getenv("RUDDER_CRICTL")
	if bin == "" {
		t.Skip("set RUDDER_CRICTL to a crictl binary")
	}
	e := newEnv(t)
	ss, err := streaming.New(streaming.Config{Addr: "127.0.0.1:0", Runtime: e.rt.StreamRuntime()})
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := ss.Start(sctx); err != nil {
		t.Fatal(err)
	}
	e.rt.SetStreaming(ss)
	crictl := func(args ...string) string {
		t.Helper()
		full := append([]string{"--runtime-endpoint", "unix://" + e.sock, "--image-endpoint", "unix://" + e.sock, "--timeout", "30s"}, args...)
		cmd := exec.Command(bin, full...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("crictl %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
		}
		return string(out)
	}
	dir := t.TempDir()
	write := func(name string, v any) string {
		b, _ := json.Marshal(v)
		p := filepath.Join(dir, name)
		os.WriteFile(p, b, 0o644)
		return p
	}
	pod := write("pod.json", map[string]any{
		"metadata":      map[string]any{"name": "crictl", "namespace": "default", "uid": "u-crictl"},
		"hostname":      "crictl-pod",
		"log_directory": filepath.Join(e.logs, "crictl"),
		"linux":         map[string]any{},
	})
	ctr := write("ctr.json", map[string]any{
		"metadata": map[string]any{"name": "main"},
		"image":    map[string]any{"image": "busybox"},
		"command":  []string{"sh", "-c", "echo hello from crictl; sleep 3600"},
		"log_path": "main.log",
		"linux":    map[string]any{},
	})

	for _, tc := range []struct{ args, want string }{
		{"version", "RuntimeName:  rudder"},
		{"info", "RuntimeReady"},
		{"images", "busybox"},
		{"imagefsinfo", "usedBytes"},
	} {
		if out := crictl(strings.Fields(tc.args)...); !strings.Contains(out, tc.want) {
			t.Errorf("crictl %s lacks %q:\n%s", tc.args, tc.want, out)
		}
	}
	podID := strings.TrimSpace(crictl("runp", pod))
	ctrID := strings.TrimSpace(crictl("create", "--no-pull", podID, ctr, pod))
	crictl("start", ctrID)
	if out := crictl("pods"); !strings.Contains(out, podID[:13]) || !strings.Contains(out, "Ready") {
		t.Errorf("crictl pods:\n%s", out)
	}
	if out := crictl("ps"); !strings.Contains(out, ctrID[:13]) || !strings.Contains(out, "Running") {
		t.Errorf("crictl ps:\n%s", out)
	}
	if out := crictl("exec", "-s", ctrID, "hostname"); strings.TrimSpace(out) != "crictl-pod" {
		t.Errorf("crictl exec -s hostname: %q", out)
	}
	// Through the streaming server (SPDY), as kubectl exec goes.
	if out := crictl("exec", ctrID, "sh", "-c", "echo streamed; cat /etc/hostname"); out != "streamed\ncrictl-pod\n" {
		t.Errorf("crictl exec (streaming): %q", out)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := crictl("logs", ctrID)
		if strings.Contains(out, "hello from crictl") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("crictl logs: %q", out)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, tc := range []struct{ args, want string }{
		{"inspect " + ctrID, `"state": "CONTAINER_RUNNING"`},
		{"inspectp " + podID, `"state": "SANDBOX_READY"`},
		{"stats", ctrID[:13]},
		{"statsp", "crictl"},
	} {
		if out := crictl(strings.Fields(tc.args)...); !strings.Contains(out, tc.want) {
			t.Errorf("crictl %s lacks %q:\n%s", tc.args, tc.want, out)
		}
	}
	crictl("stop", "--timeout", "1", ctrID)
	if out := crictl("ps", "-a"); !strings.Contains(out, "Exited") {
		t.Errorf("crictl ps -a after stop:\n%s", out)
	}
	crictl("rm", ctrID)
	crictl("stopp", podID)
	crictl("rmp", podID)
	if out := crictl("pods", "-q"); strings.TrimSpace(out) != "" {
		t.Errorf("pods after rmp: %q", out)
	}
	if left := e.leftovers(); len(left) > 0 {
		t.Errorf("left behind:\n%s", strings.Join(left, "\n"))
	}
}
