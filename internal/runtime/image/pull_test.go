package image

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
)

// A multi-platform index resolves to this platform's image.
func TestPullIndex(t *testing.T) {
	requireRoot(t)
	host := imagetest.Registry(t)
	amd := imagetest.Busybox(t)
	other := imagetest.Image(t, imagetest.Layer(t, imagetest.Entry{Name: "arm", Body: "x"}))
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: other, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: platform.OS, Architecture: platform.Architecture}}},
	)
	ref, err := name.ParseReference(host+"/multi:1", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	idxDigest, _ := idx.Digest()
	want, _ := amd.ConfigName()

	s := newStore(t)
	img, err := s.Pull(context.Background(), host+"/multi:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if img.ID != want.String() {
		t.Fatalf("pulled %s, want the %s image %s", img.ID, platform.Architecture, want)
	}
	// Named by the index digest it was pulled by, as docker does.
	if _, err := s.Get(host + "/multi@" + idxDigest.String()); err != nil {
		t.Fatal(err)
	}
}

func TestPullAuth(t *testing.T) {
	requireRoot(t)
	host := imagetest.RegistryWith(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "secret" {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	ref, _ := name.ParseReference(host+"/private:1", name.Insecure)
	img := imagetest.Busybox(t)
	if err := remote.Write(ref, img, remote.WithAuth(authenticator(&Auth{Username: "user", Password: "secret"}))); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	ctx := context.Background()
	for _, a := range []*Auth{nil, {Username: "user", Password: "wrong"}} {
		if _, err := s.Pull(ctx, host+"/private:1", a); err == nil || !strings.Contains(err.Error(), "UNAUTHORIZED") {
			t.Fatalf("pull with %+v: %v, want unauthorized", a, err)
		}
	}
	if _, err := s.Pull(ctx, host+"/private:1", &Auth{Username: "user", Password: "secret"}); err != nil {
		t.Fatal(err)
	}
	// An unreachable registry fails fast enough, naming the reference.
	if _, err := s.Pull(ctx, "127.0.0.1:1/x:1", nil); err == nil || !strings.Contains(err.Error(), "127.0.0.1:1/x:1") {
		t.Fatalf("pull from a closed port: %v", err)
	}
}

// Open clears what crashed operations left: dead processes' temp dirs,
// layer dirs no image names.
func TestOpenCleansCrashLeftovers(t *testing.T) {
	requireRoot(t)
	root := t.TempDir()
	s := openStore(t, root)
	importImage(t, s, "busybox:1", imagetest.Busybox(t))
	dead := filepath.Join(root, "tmp", "4194305-layer-123")
	orphan := filepath.Join(root, "layers", "77")
	live := filepath.Join(root, "tmp", itoaPid()+"-import-1")
	for _, d := range []string{dead, orphan, live} {
		if err := os.MkdirAll(filepath.Join(d, "x"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s2 := openStore(t, root)
	for d, want := range map[string]bool{dead: false, orphan: false, live: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s exists = %v, want %v", d, err == nil, want)
		}
	}
	if _, err := s2.Get("busybox:1"); err != nil {
		t.Fatal(err)
	}
	rootfs := mount(t, s2, "after", "busybox:1")
	if out := inRootfs(t, rootfs, "echo", "ok"); out != "ok\n" {
		t.Fatalf("%q", out)
	}
	if _, err := Open(Config{Root: filepath.Join(root, "a,b")}); err == nil {
		t.Fatal("Open of a root with ',' succeeded")
	}
	if _, err := Open(Config{}); err == nil {
		t.Fatal("Open without Root succeeded")
	}
	// A corrupt index is an error, not an empty store.
	if err := os.WriteFile(filepath.Join(root, "index.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Get("busybox:1"); err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("Get with a corrupt index: %v", err)
	}
}

func itoaPid() string { return strconv.Itoa(os.Getpid()) }

func TestDefaultInsecure(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "localhost:5000": true, "127.0.0.1:5000": true, "127.5.0.1": true, "[::1]:5000": true,
		"docker.io": false, "10.0.0.1:5000": false, "example.com:443": false,
	} {
		if got := DefaultInsecure(host); got != want {
			t.Errorf("DefaultInsecure(%q) = %v, want %v", host, got, want)
		}
	}
}

// Concurrent pulls of one reference download its blobs once.
func TestConcurrentPulls(t *testing.T) {
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
	imagetest.Push(t, host, "busybox:1", imagetest.Busybox(t))
	s := newStore(t)
	var wg sync.WaitGroup
	ids := make([]string, 5)
	errs := make([]error, 5)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			img, err := s.Pull(context.Background(), host+"/busybox:1", nil)
			ids[i], errs[i] = img.ID, err
		}()
	}
	wg.Wait()
	for i := range ids {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Fatalf("pull %d: %s %v", i, ids[i], errs[i])
		}
	}
	if n := blobGets.Load(); n != 2 { // config + layer, once
		t.Fatalf("5 concurrent pulls fetched %d blobs", n)
	}
	if n := len(s.List()); n != 1 {
		t.Fatalf("%d images", n)
	}
}
