package runtime

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/rudder-dev/rudder/internal/runtime/image"
)

// dirImages is a test image store of one image, "busybox": a directory
// holding /bin/busybox, mounted per container as an overlay with its
// own upper directory.
type dirImages struct {
	lower, work string
	mu          sync.Mutex
	mounted     map[string]bool
}

const testImageID = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func newDirImages(t testing.TB) *dirImages {
	t.Helper()
	base, err := os.MkdirTemp("", "rtimg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(base) })
	lower := filepath.Join(base, "lower")
	for _, d := range []string{"bin", "etc", "proc", "sys", "dev", "tmp", "www", "root", "home/app"} {
		if err := os.MkdirAll(filepath.Join(lower, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	os.Chmod(filepath.Join(lower, "tmp"), 0o1777)
	b, err := os.ReadFile("/bin/busybox")
	if err != nil {
		t.Skip("no /bin/busybox:", err)
	}
	if err := os.WriteFile(filepath.Join(lower, "bin/busybox"), b, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("/bin/busybox", "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range strings.Fields(string(out)) {
		if a != "busybox" {
			os.Symlink("busybox", filepath.Join(lower, "bin", a))
		}
	}
	files := map[string]string{
		"etc/passwd": "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n",
		"etc/group":  "root:x:0:\napp:x:1000:\nextra:x:2000:app\nnogroup:x:65534:\n",
		"www/index.html": "hello from the pod\n",
	}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(lower, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &dirImages{lower: lower, work: filepath.Join(base, "ctrs"), mounted: map[string]bool{}}
}

func (d *dirImages) img() image.Image {
	return image.Image{
		ID: testImageID, RepoTags: []string{"docker.io/library/busybox:latest"}, Size: 2 << 20,
		Config: image.RunConfig{Cmd: []string{"sh"}, Env: []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "FROM_IMAGE=1"}},
	}
}

func (d *dirImages) Pull(ctx context.Context, ref string, auth *image.Auth) (image.Image, error) {
	return d.Get(ref)
}
func (d *dirImages) Import(ctx context.Context, r io.Reader) ([]image.Image, error) {
	return nil, fmt.Errorf("not supported")
}
func (d *dirImages) Get(ref string) (image.Image, error) {
	switch ref {
	case "busybox", "busybox:latest", "docker.io/library/busybox:latest", testImageID:
		return d.img(), nil
	}
	return image.Image{}, fmt.Errorf("%s: %w", ref, image.ErrNotFound)
}
func (d *dirImages) List() []image.Image { return []image.Image{d.img()} }
func (d *dirImages) Remove(ref string) error {
	_, err := d.Get(ref)
	return err
}
func (d *dirImages) Usage() (image.FilesystemUsage, error) {
	return image.FilesystemUsage{Mountpoint: d.lower, UsedBytes: 2 << 20, InodesUsed: 400}, nil
}
func (d *dirImages) Mount(ctx context.Context, id, img, target string) (image.Rootfs, error) {
	if _, err := d.Get(img); err != nil {
		return image.Rootfs{}, err
	}
	upper, work := filepath.Join(d.work, id, "upper"), filepath.Join(d.work, id, "work")
	for _, p := range []string{upper, work, target} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return image.Rootfs{}, err
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", d.lower, upper, work)
	if err := unix.Mount("overlay", target, "overlay", 0, opts); err != nil {
		return image.Rootfs{}, fmt.Errorf("overlay: %w", err)
	}
	d.mu.Lock()
	d.mounted[target] = true
	d.mu.Unlock()
	return image.Rootfs{Target: target}, nil
}
func (d *dirImages) Unmount(id, target string, remove bool) error {
	if err := unix.Unmount(target, unix.MNT_DETACH); err != nil && err != unix.EINVAL && err != unix.ENOENT {
		return err
	}
	d.mu.Lock()
	delete(d.mounted, target)
	d.mu.Unlock()
	if remove {
		return os.RemoveAll(filepath.Join(d.work, id))
	}
	return nil
}
func (d *dirImages) Export(ctx context.Context, w io.Writer, refs ...string) error {
	return fmt.Errorf("not supported")
}
