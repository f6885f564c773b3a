package registry

import (
	"flag"
	"fmt"
	"strings"
)

// update rewrites the golden files under testdata instead of comparing
// against them:
//
//	go test ./internal/apiserver/registry -update
//
// then review the diff: it is the change kubectl users will see.
var update = flag.Bool("update", false, "rewrite the golden files under testdata")

func updateGolden() bool { return *update }

// lineDiff shows the lines that differ, enough to see what changed.
func lineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n- %s\n+ %s\n", i+1, wl, gl)
		}
	}
	return b.String()
}
