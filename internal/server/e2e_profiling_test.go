package server

import (
	"strings"
	"testing"
)

// TestProfiling reads Go's profiles from /debug/pprof/ as an admin and is
// refused as a user RBAC does not grant /debug/*; with --profiling=false
// the path does not exist.
func TestProfiling(t *testing.T) {
	e := newAPIEnv(t, Config{Profiling: true})
	if r := e.do(t, "GET", "/debug/pprof/heap?debug=1", nil, nil); r.code != 200 || !strings.Contains(string(r.body), "heap profile") {
		t.Errorf("heap profile as admin: %d %.200s", r.code, r.body)
	}
	if r := e.do(t, "GET", "/debug/pprof/", nil, nil); r.code != 200 || !strings.Contains(string(r.body), "goroutine") {
		t.Errorf("index as admin: %d %.200s", r.code, r.body)
	}
	if r := e.do(t, "GET", "/debug/pprof/heap", map[string]string{"Impersonate-User": "jane"}, nil); r.code != 403 {
		t.Errorf("heap profile as jane: %d %.200s, want 403", r.code, r.body)
	}

	off := newAPIEnv(t, Config{})
	if r := off.do(t, "GET", "/debug/pprof/heap", nil, nil); r.code != 404 {
		t.Errorf("profiling off: %d, want 404", r.code)
	}
}
