package image

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
)

func requireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("image store tests need root (overlay mounts, device nodes, chown)")
	}
}

func openStore(t testing.TB, root string) *Store {
	t.Helper()
	s, err := Open(Config{Root: root})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s
}

func newStore(t testing.TB) *Store {
	t.Helper()
	requireRoot(t)
	return openStore(t, t.TempDir())
}

// importImage imports img through a docker-archive named tag.
func importImage(t testing.TB, s *Store, tag string, img v1.Image) Image {
	t.Helper()
	path := filepath.Join(t.TempDir(), "img.tar")
	imagetest.WriteDockerArchive(t, path, tag, img)
	imgs := importFile(t, s, path)
	if len(imgs) != 1 {
		t.Fatalf("import: %d images, want 1", len(imgs))
	}
	return imgs[0]
}

func importFile(t testing.TB, s *Store, path string) []Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	imgs, err := s.Import(context.Background(), f)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	return imgs
}

// mount mounts a rootfs of image for container id and unmounts it (and
// removes it) when the test ends.
func mount(t testing.TB, s *Store, id, image string) string {
	t.Helper()
	target := filepath.Join(t.TempDir(), "rootfs")
	if _, err := s.Mount(context.Background(), id, image, target); err != nil {
		t.Fatalf("Mount: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Unmount(id, target, true); err != nil {
			t.Errorf("Unmount: %v", err)
		}
	})
	return target
}

// inRootfs runs busybox applet args chrooted into rootfs and returns its
// output.
func inRootfs(t testing.TB, rootfs string, args ...string) string {
	t.Helper()
	// Path is resolved inside the chroot.
	cmd := &exec.Cmd{Path: "/bin/busybox", Args: append([]string{"busybox"}, args...)}
	cmd.Dir = "/"
	cmd.Env = []string{imagetest.DefaultPath}
	cmd.SysProcAttr = &syscall.SysProcAttr{Chroot: rootfs}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v in %s: %v: %s", args, rootfs, err, errb.String())
	}
	return out.String()
}

// tree lists every path under root with its type and size, to compare
// a directory before and after a failed operation.
func tree(t testing.TB, root string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		size := fi.Size()
		if fi.IsDir() {
			size = 0
		}
		lines = append(lines, rel+" "+fi.Mode().Type().String()+" "+strconv.FormatInt(size, 10))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}
