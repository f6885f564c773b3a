package apiserver

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// servePprof serves Go's runtime profiles under /debug/pprof/, as
// kube-apiserver does with --profiling: the index, the named profiles
// (heap, goroutine, allocs, ...), a CPU profile (?seconds=N) and an
// execution trace. The request has been authenticated and authorized
// like any non-resource URL before it gets here, so only callers granted
// /debug/* (cluster-admin) can read them.
func servePprof(w http.ResponseWriter, r *http.Request) {
	switch name := strings.TrimPrefix(r.URL.Path, "/debug/pprof/"); name {
	case "cmdline":
		pprof.Cmdline(w, r)
	case "profile":
		pprof.Profile(w, r)
	case "symbol":
		pprof.Symbol(w, r)
	case "trace":
		pprof.Trace(w, r)
	default:
		// The index for "" and "/debug/pprof"; a named profile otherwise.
		pprof.Index(w, r)
	}
}
