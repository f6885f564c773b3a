package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
)

func runImages(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := imagesCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestImagesCommand(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("rudder images needs root (layers keep their owners)")
	}
	dir := t.TempDir()
	arch := filepath.Join(dir, "bb.tar")
	imagetest.WriteDockerArchive(t, arch, "busybox:1.36", imagetest.Busybox(t))
	dd := "--data-dir=" + filepath.Join(dir, "data")

	if out, err := runImages(t, "import", dd, arch); err != nil || !strings.Contains(out, "docker.io/library/busybox:1.36") {
		t.Fatalf("import: %v\n%s", err, out)
	}
	out, err := runImages(t, "ls", dd)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || strings.Join(strings.Fields(lines[0]), " ") != "IMAGE TAG IMAGE ID SIZE" {
		t.Fatalf("ls:\n%s", out)
	}
	if f := strings.Fields(lines[1]); len(f) != 4 || f[0] != "docker.io/library/busybox" || f[1] != "1.36" || len(f[2]) != 13 || !strings.HasSuffix(f[3], "MB") {
		t.Fatalf("ls row: %q", lines[1])
	}
	exported := filepath.Join(dir, "out.tar")
	if _, err := runImages(t, "export", dd, "-o", exported, "busybox:1.36"); err != nil {
		t.Fatal(err)
	}
	if _, err := runImages(t, "rm", dd, "busybox:1.36", "missing:1"); err == nil {
		t.Fatal("rm of a missing image succeeded")
	}
	if out, _ := runImages(t, "ls", dd); strings.Contains(out, "busybox") {
		t.Fatalf("busybox still listed:\n%s", out)
	}
	if _, err := runImages(t, "import", dd, exported); err != nil {
		t.Fatalf("re-import of the export: %v", err)
	}
	if _, err := runImages(t, "import", dd, filepath.Join(dir, "nope.tar")); err == nil {
		t.Fatal("import of a missing file succeeded")
	}
}

// TestImagesCommandNodes checks `rudder images` on the data directory of
// `rudder up --nodes`: every node's store by default, one with --node.
func TestImagesCommandNodes(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("rudder images needs root (layers keep their owners)")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	for _, n := range []string{"node-1", "node-2", "node-10"} {
		if err := os.MkdirAll(filepath.Join(data, "nodes", n, "agent"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	arch := filepath.Join(dir, "bb.tar")
	imagetest.WriteDockerArchive(t, arch, "busybox:1.36", imagetest.Busybox(t))
	dd := "--data-dir=" + data

	out, err := runImages(t, "import", dd, arch)
	if err != nil {
		t.Fatalf("import: %v\n%s", err, out)
	}
	for _, n := range []string{"node-1", "node-2", "node-10"} {
		if !strings.Contains(out, n+": imported ") {
			t.Errorf("import into %s not reported:\n%s", n, out)
		}
	}
	if _, err := runImages(t, "rm", dd, "--node", "node-2", "busybox:1.36"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want []string // rows, fields joined by one space, after the header
	}{
		{"every node", []string{"ls", dd}, []string{"node-1 docker.io/library/busybox 1.36", "node-10 docker.io/library/busybox 1.36"}},
		{"one node", []string{"ls", dd, "--node", "node-10"}, []string{"docker.io/library/busybox 1.36"}},
		{"a node without it", []string{"ls", dd, "--node", "node-2"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runImages(t, tc.args...)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			var rows []string
			for _, l := range lines[1:] {
				f := strings.Fields(l)
				rows = append(rows, strings.Join(f[:len(f)-2], " ")) // without ID and size
			}
			if strings.Join(rows, "|") != strings.Join(tc.want, "|") {
				t.Errorf("rows %q, want %q\n%s", rows, tc.want, out)
			}
		})
	}
	if _, err := runImages(t, "ls", dd, "--node", "node-3"); err == nil || !strings.Contains(err.Error(), "node-1, node-2, node-10") {
		t.Errorf("an unknown node: %v, want an error listing the nodes", err)
	}
}
