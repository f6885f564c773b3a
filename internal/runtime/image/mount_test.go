package image

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"

	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
)

func TestWhiteouts(t *testing.T) {
	s := newStore(t)
	lower := imagetest.Layer(t,
		imagetest.Entry{Name: "a/keep", Body: "k"},
		imagetest.Entry{Name: "a/gone", Body: "g"},
		imagetest.Entry{Name: "b/x", Body: "x"},
		imagetest.Entry{Name: "b/sub/y", Body: "y"},
		imagetest.Entry{Name: "c/", Type: tar.TypeDir},
		imagetest.Entry{Name: "c/z", Body: "z"},
	)
	upper := imagetest.Layer(t,
		imagetest.Entry{Name: "a/.wh.gone"},
		imagetest.Entry{Name: "b/new", Body: "n"},
		imagetest.Entry{Name: "b/.wh..wh..opq"}, // after b/new: still opaque to lower layers only
		imagetest.Entry{Name: ".wh.c"},
	)
	importImage(t, s, "wh:1", imagetest.Image(t, lower, upper))
	rootfs := mount(t, s, "w1", "wh:1")
	for path, want := range map[string]bool{
		"a/keep": true, "a/gone": false, "b/x": false, "b/sub": false, "b/new": true, "c": false, "c/z": false,
	} {
		_, err := os.Lstat(filepath.Join(rootfs, path))
		if got := err == nil; got != want {
			t.Errorf("%s present = %v, want %v (%v)", path, got, want, err)
		}
	}
	// The upper layer on disk holds overlay's forms of the whiteouts.
	ix, _ := s.idx.view()
	img, _ := s.Get("wh:1")
	dir := s.layerPath(ix.Layers[img.Layers[1]].Dir)
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(dir, "a", "gone"), &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("a/gone in the layer: mode %o rdev %d, %v; want a 0/0 char device", st.Mode, st.Rdev, err)
	}
	buf := make([]byte, 8)
	if n, err := unix.Lgetxattr(filepath.Join(dir, "b"), overlayOpaque, buf); err != nil || string(buf[:n]) != "y" {
		t.Errorf("b's %s = %q, %v", overlayOpaque, buf[:n], err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "b", ".wh..wh..opq")); err == nil {
		t.Error("the OCI opaque marker was written as a file")
	}
}

func TestZeroLayers(t *testing.T) {
	s := newStore(t)
	importImage(t, s, "scratch:1", imagetest.Image(t))
	rootfs := mount(t, s, "z1", "scratch:1")
	entries, err := os.ReadDir(rootfs)
	if err != nil || len(entries) != 0 {
		t.Fatalf("empty image's rootfs: %v %v", entries, err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Root(), "empty")); len(entries) != 0 {
		t.Fatalf("a write reached the shared empty lower dir: %v", entries)
	}
}

// TestManyLayers mounts 45 layers under a root whose absolute lowerdirs
// overflow the one-page option limit: the relative-path mount must work.
func TestManyLayers(t *testing.T) {
	requireRoot(t)
	root := filepath.Join(t.TempDir(), strings.Repeat("r", 150))
	s := openStore(t, root)
	const n = 45
	var layers []v1.Layer
	for i := range n {
		layers = append(layers, imagetest.Layer(t,
			imagetest.Entry{Name: fmt.Sprintf("l%d", i), Body: "x"},
			imagetest.Entry{Name: "same", Body: fmt.Sprint(i)},
		))
	}
	img := importImage(t, s, "tall:1", imagetest.Image(t, layers...))
	ix, _ := s.idx.view()
	lowers, err := lowerDirs(ix, ix.Images[img.ID])
	if err != nil {
		t.Fatal(err)
	}
	if opts := s.overlayOptions(lowers, s.rootfsPath("t1"), false); len(opts) <= maxMountData {
		t.Fatalf("absolute options are %d bytes: the test must overflow %d", len(opts), maxMountData)
	}
	rootfs := mount(t, s, "t1", "tall:1")
	if b, err := os.ReadFile(filepath.Join(rootfs, "same")); err != nil || string(b) != fmt.Sprint(n-1) {
		t.Fatalf("top layer's file = %q, %v", b, err)
	}
	for _, f := range []string{"l0", "l22", fmt.Sprintf("l%d", n-1)} {
		if _, err := os.Stat(filepath.Join(rootfs, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	cwd, _ := os.Getwd()
	if strings.HasPrefix(cwd, root) {
		t.Fatalf("the relative mount moved the process's working directory to %s", cwd)
	}
}

func TestConcurrentMounts(t *testing.T) {
	s := newStore(t)
	importImage(t, s, "busybox:1", imagetest.Busybox(t))
	const n = 20
	targets := make([]string, n)
	dir := t.TempDir()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("c%d", i)
			targets[i] = filepath.Join(dir, id)
			if _, err := s.Mount(context.Background(), id, "busybox:1", targets[i]); err != nil {
				errs <- err
				return
			}
			errs <- os.WriteFile(filepath.Join(targets[i], "tmp", "mine"), []byte(id), 0o644)
		}()
	}
	wg.Wait()
	close(errs)
	t.Cleanup(func() {
		for i, target := range targets {
			if err := s.Unmount(fmt.Sprintf("c%d", i), target, true); err != nil {
				t.Errorf("Unmount c%d: %v", i, err)
			}
		}
	})
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, target := range targets {
		b, err := os.ReadFile(filepath.Join(target, "tmp", "mine"))
		if err != nil || string(b) != fmt.Sprintf("c%d", i) {
			t.Fatalf("c%d sees %q, %v", i, b, err)
		}
		if _, err := os.Stat(filepath.Join(target, "bin", "busybox")); err != nil {
			t.Fatal(err)
		}
	}
	if img, _ := s.Get("busybox:1"); img.LastUsed.IsZero() {
		t.Error("LastUsed not recorded")
	}
}

func TestMountErrors(t *testing.T) {
	s := newStore(t)
	importImage(t, s, "busybox:1", imagetest.Busybox(t))
	dir := t.TempDir()
	for _, tc := range []struct{ id, image, target string }{
		{"../x", "busybox:1", filepath.Join(dir, "a")},
		{"", "busybox:1", filepath.Join(dir, "b")},
		{"ok", "missing:1", filepath.Join(dir, "c")},
		{"ok", "busybox:1", ""},
	} {
		if _, err := s.Mount(context.Background(), tc.id, tc.image, tc.target); err == nil {
			t.Errorf("Mount(%q, %q, %q) succeeded", tc.id, tc.image, tc.target)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(s.Root(), "rootfs")); len(entries) != 0 {
		t.Errorf("failed mounts left %v", entries)
	}
	// Unmount of something never mounted is a no-op.
	if err := s.Unmount("never", filepath.Join(dir, "never"), true); err != nil {
		t.Error(err)
	}
}

// BenchmarkMount mounts and unmounts a prepared rootfs (its upper dir
// kept) of the busybox image.
func BenchmarkMount(b *testing.B) {
	s := newStore(b)
	importImage(b, s, "busybox:1", imagetest.Busybox(b))
	target := filepath.Join(b.TempDir(), "rootfs")
	ctx := context.Background()
	if _, err := s.Mount(ctx, "bench", "busybox:1", target); err != nil {
		b.Fatal(err)
	}
	if err := s.Unmount("bench", target, false); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Unmount("bench", target, true) })
	for b.Loop() {
		if _, err := s.Mount(ctx, "bench", "busybox:1", target); err != nil {
			b.Fatal(err)
		}
		if err := s.Unmount("bench", target, false); err != nil {
			b.Fatal(err)
		}
	}
}
