package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestScriptArguments checks scripts/conformance.sh's argument parsing
// without building or running anything (CONFORMANCE_PARSE_ONLY stops it
// right after parsing): the whole run takes hours, its parsing a moment.
func TestScriptArguments(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not found")
	}
	tests := []struct {
		name string
		args []string
		rc   int
		want []string // lines of the parse-only output, or of stderr when rc != 0
	}{
		{"defaults", nil, 0, []string{"nodes=2", "focus=", "kubeconfig=", "build-only=0"}},
		{"every option", []string{"--focus", "sig-api-machinery|sig-auth", "--skip=Watchers", "--nodes", "3", "--report-dir", t.TempDir(), "--dry-run"}, 0,
			[]string{"focus=sig-api-machinery|sig-auth", "skip=Watchers", "nodes=3", "dry-run=1"}},
		{"build only", []string{"--build-only"}, 0, []string{"build-only=1"}},
		{"kubeconfig that exists", []string{"--kubeconfig", "script_test.go"}, 0, []string{"kubeconfig=/", "/scripts/conformancereport/script_test.go"}},
		{"kubeconfig that does not", []string{"--kubeconfig", "/nonexistent/k"}, 2, []string{"cannot read kubeconfig"}},
		{"unknown flag", []string{"--bogus"}, 2, []string{"unknown argument --bogus"}},
		{"missing value", []string{"--focus"}, 2, []string{"--focus needs a value"}},
		{"zero nodes", []string{"--nodes", "0"}, 2, []string{"--nodes wants a positive number"}},
		{"nodes not a number", []string{"--nodes=two"}, 2, []string{"--nodes wants a positive number"}},
		{"bad regexp", []string{"--focus", "sig-(api"}, 2, []string{"bad regular expression"}},
		{"help", []string{"--help"}, 0, []string{"--kubeconfig K", "--report-dir D"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("bash", append([]string{"../conformance.sh"}, tc.args...)...)
			cmd.Env = append(cmd.Environ(), "CONFORMANCE_PARSE_ONLY=1")
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			rc := 0
			if ee, ok := err.(*exec.ExitError); ok {
				rc = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if rc != tc.rc {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", rc, tc.rc, out.String(), errb.String())
			}
			text := out.String()
			if rc != 0 {
				text = errb.String()
			}
			for _, w := range tc.want {
				if !strings.Contains(text, w) {
					t.Errorf("output lacks %q:\n%s", w, text)
				}
			}
		})
	}
}
