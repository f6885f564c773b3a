package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
)

func TestUnpackMetadata(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	mtime := time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC)
	data := tarOf(t,
		&tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755, ModTime: mtime},
		&tar.Header{Name: "d/", Typeflag: tar.TypeDir, Mode: 0o710, Uid: 7, Gid: 8, ModTime: mtime},
		&tar.Header{Name: "d/suid", Typeflag: tar.TypeReg, Mode: 0o4755, Uid: 1000, Gid: 1000, Size: 3, ModTime: mtime,
			PAXRecords: map[string]string{"SCHILY.xattr.user.rudder": "v", "SCHILY.xattr.trusted.overlay.redirect": "/etc"}},
		&tar.Header{Name: "d/hard", Typeflag: tar.TypeLink, Linkname: "d/suid"},
		&tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd", ModTime: mtime},
		&tar.Header{Name: "null", Typeflag: tar.TypeChar, Mode: 0o666, Devmajor: 1, Devminor: 3},
		&tar.Header{Name: "fifo", Typeflag: tar.TypeFifo, Mode: 0o600},
		&tar.Header{Name: "/abs/file", Typeflag: tar.TypeReg, Mode: 0o644},
		&tar.Header{Name: "x", Typeflag: tar.TypeReg, Mode: 0o644, Size: 3},
		&tar.Header{Name: "x", Typeflag: tar.TypeDir, Mode: 0o755}, // a later entry replaces
	)
	if _, _, err := unpackLayer(bytes.NewReader(data), dir); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	check := func(p string, mode uint32, uid, gid uint32) {
		t.Helper()
		if err := unix.Lstat(filepath.Join(dir, p), &st); err != nil {
			t.Fatal(err)
		}
		if st.Mode != mode || st.Uid != uid || st.Gid != gid {
			t.Errorf("%s: mode %o uid %d gid %d, want %o %d %d", p, st.Mode, st.Uid, st.Gid, mode, uid, gid)
		}
	}
	check("d", unix.S_IFDIR|0o710, 7, 8)
	if st.Mtim.Sec != mtime.Unix() {
		t.Errorf("d mtime %d, want %d", st.Mtim.Sec, mtime.Unix())
	}
	check("d/suid", unix.S_IFREG|0o4755, 1000, 1000)
	ino := st.Ino
	check("d/hard", unix.S_IFREG|0o4755, 1000, 1000)
	if st.Ino != ino || st.Nlink != 2 {
		t.Errorf("hardlink: ino %d nlink %d, want %d 2", st.Ino, st.Nlink, ino)
	}
	check("null", unix.S_IFCHR|0o666, 0, 0)
	if st.Rdev != unix.Mkdev(1, 3) {
		t.Errorf("null rdev %d", st.Rdev)
	}
	check("fifo", unix.S_IFIFO|0o600, 0, 0)
	check("abs/file", unix.S_IFREG|0o644, 0, 0)
	check("x", unix.S_IFDIR|0o755, 0, 0)
	if target, err := os.Readlink(filepath.Join(dir, "link")); err != nil || target != "/etc/passwd" {
		t.Errorf("link -> %q, %v", target, err)
	}
	buf := make([]byte, 16)
	n, err := unix.Lgetxattr(filepath.Join(dir, "d/suid"), "user.rudder", buf)
	switch {
	case errors.Is(err, unix.ENOTSUP):
		t.Log("no user xattrs on this filesystem")
	case err != nil || string(buf[:n]) != "v":
		t.Errorf("xattr user.rudder = %q, %v", buf[:n], err)
	}
	if _, err := unix.Lgetxattr(filepath.Join(dir, "d/suid"), "trusted.overlay.redirect", buf); err == nil {
		t.Error("a trusted.overlay xattr from the image was applied")
	}
}

func TestUnpackRefusesEscapes(t *testing.T) {
	requireRoot(t)
	tests := []struct {
		name    string
		entries func(outside string) []*tar.Header
	}{
		{"dotdot", func(string) []*tar.Header {
			return []*tar.Header{{Name: "../x", Typeflag: tar.TypeReg}}
		}},
		{"dotdot-inside", func(string) []*tar.Header {
			return []*tar.Header{{Name: "a/../../x", Typeflag: tar.TypeReg}}
		}},
		{"absolute-symlink", func(outside string) []*tar.Header {
			return []*tar.Header{
				{Name: "evil", Typeflag: tar.TypeSymlink, Linkname: outside},
				{Name: "evil/x", Typeflag: tar.TypeReg},
			}
		}},
		{"relative-symlink", func(string) []*tar.Header {
			return []*tar.Header{
				{Name: "up", Typeflag: tar.TypeSymlink, Linkname: ".."},
				{Name: "up/x", Typeflag: tar.TypeReg},
			}
		}},
		{"hardlink-out", func(string) []*tar.Header {
			return []*tar.Header{{Name: "h", Typeflag: tar.TypeLink, Linkname: "../x"}}
		}},
		{"hardlink-through-symlink", func(outside string) []*tar.Header {
			return []*tar.Header{
				{Name: "evil", Typeflag: tar.TypeSymlink, Linkname: outside},
				{Name: "h", Typeflag: tar.TypeLink, Linkname: "evil/secret"},
			}
		}},
		{"whiteout-through-symlink", func(outside string) []*tar.Header {
			return []*tar.Header{
				{Name: "evil", Typeflag: tar.TypeSymlink, Linkname: outside},
				{Name: "evil/.wh.secret", Typeflag: tar.TypeReg},
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := t.TempDir()
			outside := filepath.Join(base, "outside")
			if err := os.WriteFile(outside+"-marker", nil, 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(outside, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o644); err != nil {
				t.Fatal(err)
			}
			layer := filepath.Join(base, "layer")
			if err := os.Mkdir(layer, 0o755); err != nil {
				t.Fatal(err)
			}
			_, _, err := unpackLayer(bytes.NewReader(tarOf(t, tt.entries(outside)...)), layer)
			if err == nil {
				t.Fatal("unpack succeeded")
			}
			t.Logf("error: %v", err)
			entries, _ := os.ReadDir(base)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if strings.Join(names, ",") != "layer,outside,outside-marker" {
				t.Errorf("outside the layer: %v", names)
			}
			if got, _ := os.ReadDir(outside); len(got) != 1 {
				t.Errorf("outside dir changed: %v", got)
			}
		})
	}
}

// An escaping layer fails its import and stores nothing.
func TestImportEscapingLayer(t *testing.T) {
	s := newStore(t)
	before := tree(t, s.Root())
	bad := imagetest.Layer(t,
		imagetest.Entry{Name: "lib", Type: tar.TypeSymlink, Linkname: "/"},
		imagetest.Entry{Name: "lib/pwned", Body: "x"},
	)
	path := filepath.Join(t.TempDir(), "bad.tar")
	imagetest.WriteDockerArchive(t, path, "bad:1", imagetest.Image(t, imagetest.BusyboxLayer(t), bad))
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := s.Import(context.Background(), f); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("import of an escaping layer: %v", err)
	}
	if _, err := os.Stat("/pwned"); err == nil {
		t.Fatal("/pwned written")
	}
	if after := tree(t, s.Root()); after != before {
		t.Fatalf("Root changed:\n%s\n---\n%s", before, after)
	}
}

func tarOf(t testing.TB, hdrs ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if h.Typeflag == tar.TypeReg && h.Size > 0 {
			if err := tw.WriteHeader(h); err != nil {
				t.Fatal(err)
			}
			tw.Write(bytes.Repeat([]byte("a"), int(h.Size)))
			continue
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	tw.Close()
	return buf.Bytes()
}
