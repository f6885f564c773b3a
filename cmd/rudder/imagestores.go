package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/rudder-dev/rudder/internal/localcluster"
	"github.com/rudder-dev/rudder/internal/runtime/image"
)

// nodeStore is one node's image store.
type nodeStore struct {
	node  string // "" for `rudder up`'s one node
	store *image.Store
}

// prefix labels a line about s when several stores are acted on.
func (s nodeStore) prefix(all []nodeStore) string {
	if len(all) < 2 {
		return ""
	}
	return s.node + ": "
}

// singleNodeLabel names `rudder up`'s in-process node in listings
// beside the nodes of `rudder up --nodes` (both exist when one data
// directory ran both).
const singleNodeLabel = "(up)"

// openImageStores opens the stores `rudder images` acts on: the named
// node's; else every node of `rudder up --nodes` (<data-dir>/nodes/*)
// and the store of `rudder up` (<data-dir>/agent) when they exist; else
// that of `rudder up`, created if need be.
func openImageStores(dataDir, node string) ([]nodeStore, error) {
	nodes := localNodes(dataDir)
	single := filepath.Join(dataDir, "agent")
	var out []nodeStore
	add := func(name, agentDir string) error {
		s, err := image.Open(image.Config{Root: filepath.Join(agentDir, "images")})
		if err != nil {
			return err
		}
		out = append(out, nodeStore{node: name, store: s})
		return nil
	}
	if node != "" {
		if !slices.Contains(nodes, node) {
			return nil, fmt.Errorf("--node %s: no such node under %s (nodes: %s)", node, localcluster.NodesDir(dataDir), strings.Join(nodes, ", "))
		}
		return out, add(node, filepath.Join(localcluster.NodesDir(dataDir), node, "agent"))
	}
	if _, err := os.Stat(single); err == nil || len(nodes) == 0 {
		if err := add(singleNodeLabel, single); err != nil {
			return nil, err
		}
	}
	for _, n := range nodes {
		if err := add(n, filepath.Join(localcluster.NodesDir(dataDir), n, "agent")); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// localNodes lists the nodes of `rudder up --nodes` on dataDir, by name
// order (node-2 before node-10).
func localNodes(dataDir string) []string {
	entries, _ := os.ReadDir(localcluster.NodesDir(dataDir))
	var out []string
	for _, e := range entries {
		if st, err := os.Stat(filepath.Join(localcluster.NodesDir(dataDir), e.Name(), "agent")); err == nil && st.IsDir() {
			out = append(out, e.Name())
		}
	}
	slices.SortFunc(out, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	return out
}

// rereadable makes an import argument readable more than once: standard
// input ("-") is copied to a temporary file when several stores read
// it.
func rereadable(path string, stdin io.Reader, several bool) (string, func(), error) {
	if path != "-" || !several {
		return path, func() {}, nil
	}
	f, err := os.CreateTemp("", "rudder-import-*.tar")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.Remove(f.Name()) }
	if _, err := io.Copy(f, stdin); err != nil {
		f.Close()
		cleanup()
		return "", nil, err
	}
	if err := f.Close(); err != nil {
		cleanup()
		return "", nil, err
	}
	return f.Name(), cleanup, nil
}
