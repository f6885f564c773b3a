package monitor

import (
	"os/exec"
	"strings"
	"testing"
)

const self = "github.com/rudder-dev/rudder/internal/runtime/monitor"

func goListDeps(t *testing.T, pkgs ...string) []string {
	t.Helper()
	out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	return strings.Fields(string(out))
}

// TestImportsStayFew keeps this package's init early (see "Why a package
// of its own" in doc.go). Every package it depends on must be
//   - golang.org/x/sys/unix, the only module outside the standard library;
//   - or a dependency of fmt, encoding/json or golang.org/x/sys/unix,
//     which nearly every package also depends on, so none of the heavy
//     initialisers is ready to run before them;
//   - or a standard package that sorts before this one (bufio), which
//     the order rule initialises as soon as its imports are.
//
// net, os/exec, path/filepath and runtime/debug break the rule: they
// sort after k8s.io and go.etcd.io and few packages need them early, so
// hundreds of initialisers would run first.
func TestImportsStayFew(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("needs the go command:", err)
	}
	common := map[string]bool{}
	for _, p := range goListDeps(t, "fmt", "encoding/json", "golang.org/x/sys/unix") {
		common[p] = true
	}
	deps := goListDeps(t, ".")
	if len(deps) < 10 || deps[len(deps)-1] != self {
		t.Fatalf("go list -deps gave %v", deps)
	}
	for _, p := range deps[:len(deps)-1] {
		std := !strings.Contains(strings.Split(p, "/")[0], ".")
		if !common[p] && !(std && p < self) {
			t.Errorf("the monitor depends on %s: its init would then wait for the initialisers of the packages that sort before %s", p, p)
		}
	}
}
