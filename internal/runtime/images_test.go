package runtime

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/rudder-dev/rudder/internal/runtime/image"
	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
)

// testImage is imagetest's busybox plus a layer with a user "app" (1000,
// also in group "extra" 2000), unshare, a web root, and FROM_IMAGE=1 in
// its environment, tagged busybox:latest.
var testImage struct {
	once    sync.Once
	archive []byte
	img     v1.Image
}

func busyboxArchive(t testing.TB) []byte {
	t.Helper()
	testImage.once.Do(func() {
		extra := imagetest.Layer(t,
			imagetest.Entry{Name: "etc/passwd", Body: "root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"},
			imagetest.Entry{Name: "etc/group", Body: "root:x:0:\napp:x:1000:\nextra:x:2000:app\nnobody:x:65534:\n"},
			imagetest.Entry{Name: "bin/unshare", Type: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777},
			imagetest.Entry{Name: "www/", Type: tar.TypeDir},
			imagetest.Entry{Name: "www/index.html", Body: "hello from the pod\n"},
			imagetest.Entry{Name: "home/", Type: tar.TypeDir},
			imagetest.Entry{Name: "home/app/", Type: tar.TypeDir, UID: 1000, GID: 1000},
		)
		img := imagetest.Image(t, imagetest.BusyboxLayer(t), extra)
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.Config.Env = append(cf.Config.Env, "FROM_IMAGE=1")
		if img, err = mutate.ConfigFile(img, cf); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "busybox.tar")
		imagetest.WriteDockerArchive(t, path, "busybox:latest", img)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		testImage.archive, testImage.img = b, img
	})
	if testImage.archive == nil {
		t.Skip("no busybox test image")
	}
	return testImage.archive
}

// newImageStore opens a store under dir holding the test busybox image.
func newImageStore(t testing.TB, dir string) *image.Store {
	t.Helper()
	s, err := image.Open(image.Config{Root: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), bytes.NewReader(busyboxArchive(t))); err != nil {
		t.Fatalf("import busybox: %v", err)
	}
	return s
}

// imageRegistry serves the test image on a loopback registry as
// tools/busybox:1 and returns its host:port.
func imageRegistry(t testing.TB) string {
	busyboxArchive(t)
	host := imagetest.Registry(t)
	imagetest.Push(t, host, "tools/busybox:1", testImage.img)
	return host
}
