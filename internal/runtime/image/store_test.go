package image

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
)

func TestImportAndRun(t *testing.T) {
	bb := imagetest.Busybox(t)
	want, _ := bb.ConfigName()
	tests := []struct {
		name  string
		write func(t *testing.T, path string)
		tag   string
	}{
		{"docker-archive", func(t *testing.T, p string) { imagetest.WriteDockerArchive(t, p, "busybox:1", bb) }, "docker.io/library/busybox:1"},
		{"oci-archive", func(t *testing.T, p string) { imagetest.WriteOCIArchive(t, p, "example.com/tools/bb:oci", bb) }, "example.com/tools/bb:oci"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			path := filepath.Join(t.TempDir(), "a.tar")
			tt.write(t, path)
			imgs := importFile(t, s, path)
			if len(imgs) != 1 || imgs[0].ID != want.String() {
				t.Fatalf("imported %+v, want ID %s", imgs, want)
			}
			if !slices.Equal(imgs[0].RepoTags, []string{tt.tag}) {
				t.Fatalf("RepoTags = %q, want [%s]", imgs[0].RepoTags, tt.tag)
			}
			if !slices.Equal(imgs[0].Config.Cmd, []string{"sh"}) || imgs[0].Size == 0 || len(imgs[0].Layers) != 1 {
				t.Fatalf("image = %+v", imgs[0])
			}
			for _, ref := range []string{tt.tag, want.String(), want.Hex, want.Hex[:12]} {
				if got, err := s.Get(ref); err != nil || got.ID != want.String() {
					t.Errorf("Get(%q) = %v, %v", ref, got.ID, err)
				}
			}
			rootfs := mount(t, s, "c1", tt.tag)
			out := inRootfs(t, rootfs, "ls", "/bin")
			for _, f := range []string{"busybox", "sh", "wget"} {
				if !slices.Contains(strings.Fields(out), f) {
					t.Errorf("ls /bin in the rootfs: no %s in %q", f, out)
				}
			}
			if out := inRootfs(t, rootfs, "cat", "/etc/passwd"); !strings.Contains(out, "nobody:x:65534") {
				t.Errorf("/etc/passwd = %q", out)
			}
			// The container writes into its upper dir, not the layer.
			inRootfs(t, rootfs, "touch", "/tmp/written")
			if _, err := os.Stat(filepath.Join(s.Root(), "rootfs", "c1", "upper", "tmp", "written")); err != nil {
				t.Errorf("write did not land in the upper dir: %v", err)
			}
		})
	}
}

func TestGetNames(t *testing.T) {
	s := newStore(t)
	img := importImage(t, s, "busybox:latest", imagetest.Busybox(t))
	for _, ref := range []string{"busybox", "busybox:latest", "docker.io/library/busybox", "library/busybox:latest", "index.docker.io/library/busybox:latest"} {
		if got, err := s.Get(ref); err != nil || got.ID != img.ID {
			t.Errorf("Get(%q) = %q, %v", ref, got.ID, err)
		}
	}
	for _, ref := range []string{"busybox:2", "other", img.ID[7:18], "sha256:" + strings.Repeat("0", 64), "", "Bad Name"} {
		if _, err := s.Get(ref); err == nil {
			t.Errorf("Get(%q) succeeded", ref)
		} else if ref == "busybox:2" && !errors.Is(err, ErrNotFound) {
			t.Errorf("Get(%q) = %v, want ErrNotFound", ref, err)
		}
	}
}

func TestImportCorrupt(t *testing.T) {
	bb := imagetest.Busybox(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "good.tar")
	imagetest.WriteDockerArchive(t, good, "busybox:1", bb)
	raw, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"truncated", raw[:len(raw)/2]},
		// manifest.json is last: cut inside its content.
		{"truncated-in-last-file", raw[:len(raw)-1024-512+100]},
		{"empty", nil},
		{"not-a-tar", []byte("hello, this is not an archive at all, just some text......")},
		{"flipped-layer-byte", flipAt(raw, len(raw)/2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStore(t)
			before := tree(t, s.Root())
			imgs, err := s.Import(context.Background(), bytes.NewReader(tt.data))
			if err == nil {
				t.Fatalf("Import succeeded: %+v", imgs)
			}
			t.Logf("error: %v", err)
			if after := tree(t, s.Root()); after != before {
				t.Fatalf("Root changed by a failed import:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if n := len(s.List()); n != 0 {
				t.Fatalf("%d images after a failed import", n)
			}
		})
	}
}

func flipAt(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 0xff
	return c
}

func TestExportRoundTrip(t *testing.T) {
	s := newStore(t)
	img := importImage(t, s, "busybox:1", imagetest.Busybox(t))
	var buf bytes.Buffer
	if err := s.Export(context.Background(), &buf, "busybox:1"); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, t.TempDir())
	imgs, err := s2.Import(context.Background(), &buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(imgs) != 1 || imgs[0].ID != img.ID || !slices.Equal(imgs[0].RepoTags, img.RepoTags) {
		t.Fatalf("round trip: %+v, want %+v", imgs, img)
	}
	if err := s.Export(context.Background(), &buf, "nope:1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Export of a missing image: %v", err)
	}
}

func TestPull(t *testing.T) {
	requireRoot(t)
	var blobGets atomic.Int64
	host := imagetest.RegistryWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
				blobGets.Add(1)
			}
			h.ServeHTTP(w, r)
		})
	})
	bb := imagetest.Busybox(t)
	digest := imagetest.Push(t, host, "tools/busybox:1", bb)
	id, _ := bb.ConfigName()
	ctx := context.Background()

	s := newStore(t)
	img, err := s.Pull(ctx, host+"/tools/busybox:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if img.ID != id.String() || !slices.Equal(img.RepoTags, []string{host + "/tools/busybox:1"}) ||
		!slices.Equal(img.RepoDigests, []string{host + "/tools/busybox@" + digest}) {
		t.Fatalf("pulled %+v", img)
	}
	if n := blobGets.Load(); n != 2 { // config + layer
		t.Fatalf("first pull fetched %d blobs, want 2", n)
	}
	rootfs := mount(t, s, "p1", host+"/tools/busybox:1")
	if out := inRootfs(t, rootfs, "echo", "hi"); out != "hi\n" {
		t.Fatalf("echo in pulled image: %q", out)
	}

	blobGets.Store(0)
	for _, ref := range []string{host + "/tools/busybox:1", host + "/tools/busybox@" + digest, host + "/tools/busybox:1"} {
		again, err := s.Pull(ctx, ref, nil)
		if err != nil || again.ID != img.ID {
			t.Fatalf("re-pull %s: %v %v", ref, again.ID, err)
		}
	}
	if n := blobGets.Load(); n != 0 {
		t.Fatalf("re-pulls fetched %d blobs, want 0", n)
	}

	// By digest into an empty store: named by digest only.
	s2 := newStore(t)
	byDigest, err := s2.Pull(ctx, host+"/tools/busybox@"+digest, &Auth{})
	if err != nil {
		t.Fatal(err)
	}
	if byDigest.ID != img.ID || len(byDigest.RepoTags) != 0 || len(byDigest.RepoDigests) != 1 {
		t.Fatalf("pull by digest: %+v", byDigest)
	}
	if _, err := s2.Get(host + "/tools/busybox@" + digest); err != nil {
		t.Fatal(err)
	}

	if _, err := s.Pull(ctx, host+"/tools/missing:1", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("pull of a missing image: %v, want ErrNotFound", err)
	}
	if _, err := s.Pull(ctx, "UPPER/case", nil); err == nil {
		t.Fatal("pull of an invalid reference succeeded")
	}
}

// corruptBlob flips a byte in the body of GETs of blob digest.
func corruptBlob(digest *atomic.Value) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			d, _ := digest.Load().(string)
			if d != "" && r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+d) {
				w = &flipWriter{ResponseWriter: w, at: 200}
			}
			h.ServeHTTP(w, r)
		})
	}
}

type flipWriter struct {
	http.ResponseWriter
	at, n int
}

func (f *flipWriter) Write(p []byte) (int, error) {
	if f.at >= f.n && f.at < f.n+len(p) {
		p = slices.Clone(p)
		p[f.at-f.n] ^= 0xff
	}
	f.n += len(p)
	return f.ResponseWriter.Write(p)
}

func TestPullDigestMismatch(t *testing.T) {
	requireRoot(t)
	var bad atomic.Value
	host := imagetest.RegistryWith(t, corruptBlob(&bad))
	bb := imagetest.Busybox(t)
	imagetest.Push(t, host, "busybox:1", bb)
	layers, _ := bb.Layers()
	ld, _ := layers[0].Digest()
	bad.Store(ld.String())

	s := newStore(t)
	before := tree(t, s.Root())
	_, err := s.Pull(context.Background(), host+"/busybox:1", nil)
	if !errors.Is(err, ErrDigestMismatch) {
		t.Fatalf("pull of a corrupted blob: %v, want ErrDigestMismatch", err)
	}
	if !strings.Contains(err.Error(), ld.String()) || strings.Count(err.Error(), "sha256:") < 2 {
		t.Fatalf("error does not name both digests: %v", err)
	}
	if n := len(s.List()); n != 0 {
		t.Fatalf("%d images after a failed pull", n)
	}
	if after := tree(t, s.Root()); after != before {
		t.Fatalf("Root changed by a failed pull:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

func TestRemove(t *testing.T) {
	s := newStore(t)
	base := imagetest.BusyboxLayer(t)
	app := imagetest.Layer(t, imagetest.Entry{Name: "app/run.sh", Body: "echo app\n", Mode: 0o755})
	bb := imagetest.Image(t, base)
	appImg := imagetest.Image(t, base, app)
	one := importImage(t, s, "busybox:1", bb)
	importImage(t, s, "busybox:2", bb)
	two := importImage(t, s, "app:1", appImg)
	ctx := context.Background()

	// A tag goes alone while another remains.
	if err := s.Remove("busybox:1"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(one.ID); err != nil || !slices.Equal(got.RepoTags, []string{"docker.io/library/busybox:2"}) {
		t.Fatalf("after untag: %+v %v", got, err)
	}
	// In use: the last tag and the ID are refused.
	target := filepath.Join(t.TempDir(), "rootfs")
	if _, err := s.Mount(ctx, "c1", "busybox:2", target); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{"busybox:2", one.ID} {
		if err := s.Remove(ref); !errors.Is(err, ErrInUse) {
			t.Fatalf("Remove(%s) of a mounted image: %v, want ErrInUse", ref, err)
		}
	}
	if err := s.Unmount("c1", target, false); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(one.ID); !errors.Is(err, ErrInUse) {
		t.Fatalf("Remove while the rootfs exists (unmounted): %v, want ErrInUse", err)
	}
	if err := s.Unmount("c1", target, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove("busybox:2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(one.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get after Remove: %v", err)
	}
	// The shared base layer stays for app:1, which still runs.
	rootfs := mount(t, s, "c2", "app:1")
	if out := inRootfs(t, rootfs, "sh", "/app/run.sh"); out != "app\n" {
		t.Fatalf("app after removing busybox: %q", out)
	}
	if err := s.Unmount("c2", rootfs, true); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(two.ID[7:19]); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"blobs/sha256", "layers", "rootfs"} {
		if entries, _ := os.ReadDir(filepath.Join(s.Root(), d)); len(entries) != 0 {
			t.Errorf("%s not empty after removing every image: %v", d, entries)
		}
	}
	if err := s.Remove("app:1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Remove of a removed image: %v", err)
	}
}

// Two stores on one Root, as `rudder images import` beside the runtime.
func TestSharedRoot(t *testing.T) {
	requireRoot(t)
	root := t.TempDir()
	runtimeStore, cli := openStore(t, root), openStore(t, root)
	if n := len(runtimeStore.List()); n != 0 {
		t.Fatalf("%d images in a new store", n)
	}
	img := importImage(t, cli, "busybox:1", imagetest.Busybox(t))
	if got, err := runtimeStore.Get("busybox:1"); err != nil || got.ID != img.ID {
		t.Fatalf("other store's Get: %v %v", got.ID, err)
	}
	if err := runtimeStore.Remove("busybox:1"); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Get("busybox:1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("removed image still seen: %v", err)
	}
	u, err := cli.Usage()
	if err != nil || u.CapacityBytes == 0 || u.Mountpoint != cli.Root() {
		t.Fatalf("Usage = %+v, %v", u, err)
	}
}

func TestUsage(t *testing.T) {
	s := newStore(t)
	empty, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	importImage(t, s, "busybox:1", imagetest.Busybox(t))
	u, err := s.Usage()
	if err != nil {
		t.Fatal(err)
	}
	bin, _ := os.Stat(imagetest.BusyboxPath)
	if u.UsedBytes < empty.UsedBytes+uint64(bin.Size()) || u.InodesUsed < uint64(len(imagetest.BusyboxApplets)) {
		t.Fatalf("Usage after import = %+v (empty %+v)", u, empty)
	}
	if u.CapacityBytes == 0 || u.AvailableBytes > u.CapacityBytes {
		t.Fatalf("Usage = %+v", u)
	}
}
