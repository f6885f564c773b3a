package runtime

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rudder-dev/rudder/internal/runtime/monitor"
)

// initTrace runs this test binary with GODEBUG=inittrace=1 and returns
// the bytes each package's initialisers allocated, in order, and the
// rest of the output.
func initTrace(t *testing.T, args ...string) (pkgs []string, bytes map[string]int, out string, err error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	b, err := cmd.CombinedOutput()
	bytes = map[string]int{}
	var rest strings.Builder
	for _, line := range strings.Split(string(b), "\n") {
		// init PKG @T ms, T ms clock, B bytes, N allocs
		f := strings.Fields(line)
		if len(f) >= 9 && f[0] == "init" && f[8] == "bytes," {
			n, _ := strconv.Atoi(f[7])
			pkgs = append(pkgs, f[1])
			bytes[f[1]] = n
			continue
		}
		rest.WriteString(line + "\n")
	}
	return pkgs, bytes, rest.String(), err
}

// TestMonitorRunsBeforeHeavyInits checks, in this test binary (which
// links gRPC, protobuf and the CRI API as rudder does), that a monitor
// process takes over before nearly all package initialisers have run:
// the reason the monitor is a package of its own (monitor/doc.go).
func TestMonitorRunsBeforeHeavyInits(t *testing.T) {
	_, all, out, err := initTrace(t, "-test.run=^$")
	if err != nil {
		t.Fatalf("test binary: %v\n%s", err, out)
	}
	pkgs, before, out, err := initTrace(t, monitor.Subcommand, "/nonexistent/shim.json")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(out, "runtime-shim: config:") {
		t.Fatalf("monitor with a missing config: %v\n%s", err, out)
	}
	sum := func(m map[string]int) (n int) {
		for _, b := range m {
			n += b
		}
		return n
	}
	// The packages that cannot wait (those the monitor imports, and a
	// few that import nothing later than "os") allocate a few percent
	// of what all initialisers do.
	if got, total := sum(before), sum(all); total == 0 || got*10 > total {
		sort.Slice(pkgs, func(i, j int) bool { return before[pkgs[i]] > before[pkgs[j]] })
		var top []string
		for _, p := range pkgs[:min(10, len(pkgs))] {
			top = append(top, fmt.Sprintf("%s %d", p, before[p]))
		}
		t.Errorf("initialisers run before the monitor allocated %d of %d bytes; the largest: %v", got, total, top)
	}
	if _, ok := before["google.golang.org/grpc"]; ok {
		t.Error("gRPC initialised before the monitor ran")
	}
}
