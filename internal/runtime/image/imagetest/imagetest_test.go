package imagetest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

func TestBusyboxRoundTrips(t *testing.T) {
	img := Busybox(t)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Cmd; len(got) != 1 || got[0] != "sh" {
		t.Fatalf("Cmd = %q, want [sh]", got)
	}
	dir := t.TempDir()
	arch := filepath.Join(dir, "bb.tar")
	WriteDockerArchive(t, arch, "busybox:1", img)
	tag, _ := name.NewTag("busybox:1")
	back, err := tarball.ImageFromPath(arch, &tag)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := img.Digest()
	if got, _ := back.Digest(); got != want {
		t.Fatalf("docker archive digest %s, want %s", got, want)
	}
	WriteOCIArchive(t, filepath.Join(dir, "oci.tar"), "busybox:1", img)
	if fi, err := os.Stat(filepath.Join(dir, "oci.tar")); err != nil || fi.Size() < 1<<20 {
		t.Fatalf("oci archive: %v %v", fi, err)
	}

	host := Registry(t)
	d := Push(t, host, "busybox:1", img)
	if d != want.String() {
		t.Fatalf("pushed digest %s, want %s", d, want)
	}
	ref, _ := name.ParseReference(host+"/busybox@"+d, name.Insecure)
	if _, err := remote.Image(ref); err != nil {
		t.Fatalf("pull back: %v", err)
	}
}
