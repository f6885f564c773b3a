package kubelet

import (
	"os"
	"path/filepath"
	"testing"
)

// The atomic writer: names are symlinks through ..data; an update swaps
// ..data and drops keys that went; an unchanged payload is left alone.
func TestWriteAtomic(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "vol")
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	if err := writeAtomic(dir, []volumeFile{{path: "a", data: []byte("1"), mode: 0o644}, {path: "sub/b", data: []byte("2"), mode: 0o600}}); err != nil {
		t.Fatal(err)
	}
	if read("a") != "1" || read("sub/b") != "2" {
		t.Fatalf("a=%q sub/b=%q", read("a"), read("sub/b"))
	}
	if target, err := os.Readlink(filepath.Join(dir, "a")); err != nil || target != "..data/a" {
		t.Errorf("a links to %q (%v), want ..data/a", target, err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, "sub/b")); fi.Mode().Perm() != 0o600 {
		t.Errorf("sub/b mode %v", fi.Mode().Perm())
	}
	first, _ := os.Readlink(filepath.Join(dir, "..data"))

	if err := writeAtomic(dir, []volumeFile{{path: "sub/b", data: []byte("2"), mode: 0o600}, {path: "a", data: []byte("1"), mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.Readlink(filepath.Join(dir, "..data")); again != first {
		t.Errorf("an unchanged payload was rewritten: %s then %s", first, again)
	}

	if err := writeAtomic(dir, []volumeFile{{path: "a", data: []byte("one"), mode: 0o644}}); err != nil {
		t.Fatal(err)
	}
	if read("a") != "one" {
		t.Errorf("a=%q after the update", read("a"))
	}
	if _, err := os.Lstat(filepath.Join(dir, "sub")); !os.IsNotExist(err) {
		t.Errorf("sub survived its key's removal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, first)); !os.IsNotExist(err) {
		t.Errorf("the old payload directory %s survived: %v", first, err)
	}
	for _, bad := range []string{"../escape", "/abs", "..hidden"} {
		if err := writeAtomic(dir, []volumeFile{{path: bad, data: nil, mode: 0o644}}); err == nil {
			t.Errorf("path %q accepted", bad)
		}
	}
}

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{
		`/var/lib/kubelet`:        "/var/lib/kubelet",
		`/tmp/with\040space`:      "/tmp/with space",
		`/tmp/tab\011and\134back`: "/tmp/tab\tand\\back",
		`/tmp/trailing\04`:        `/tmp/trailing\04`,
	} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}
