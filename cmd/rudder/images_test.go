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
