package bench

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestStartupOneRun builds the real rudder binary, because the scenario
// execs it: the test binary itself has no `server` subcommand.
func TestStartupOneRun(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH: cannot build the rudder binary")
	}
	bin := filepath.Join(t.TempDir(), "rudder")
	build := exec.Command(goBin, "build", "-o", bin, "github.com/rudder-dev/rudder/cmd/rudder")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := RunStartup(ctx, StartupConfig{Nodes: 3, Runs: 1, Seed: 7, Binary: bin, RunTimeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := printedJSON(t, res)
	if got["scenario"] != "startup" || got["nodes"] != float64(3) {
		t.Errorf("scenario/nodes = %v/%v", got["scenario"], got["nodes"])
	}
	for _, k := range []string{"readyz_ms", "all_nodes_ready_ms", "warm_readyz_ms"} {
		s, ok := got[k].(map[string]any)
		if !ok || s["p50"] == nil || s["max"] == nil {
			t.Errorf("%s = %v, want {p50,max}", k, got[k])
		}
	}
	if _, ok := got["ok"].(bool); !ok {
		t.Errorf("ok = %v, want a bool", got["ok"])
	}
	if rss, _ := got["server_rss_mib"].(float64); rss <= 0 {
		t.Errorf("server_rss_mib = %v", got["server_rss_mib"])
	}
	runs, _ := got["runs"].([]any)
	if len(runs) != 1 {
		t.Fatalf("runs = %v", got["runs"])
	}
	r := res.Runs[0]
	// All nodes Ready is reached after /readyz, so it must be later; a zero
	// would mean the wait was skipped.
	if r.ReadyzMS <= 0 || r.AllNodesReadyMS < r.ReadyzMS || r.WarmReadyzMS <= 0 {
		t.Errorf("implausible run: %+v", r)
	}
	t.Logf("%v", got)
}

func TestStartupRejectsKubeconfig(t *testing.T) {
	if _, err := RunStartup(context.Background(), StartupConfig{Nodes: 1, Runs: 1, Kubeconfig: "/x"}); err == nil || !strings.Contains(err.Error(), "--kubeconfig") {
		t.Fatalf("err = %v, want a --kubeconfig error", err)
	}
}
