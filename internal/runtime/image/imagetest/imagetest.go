package imagetest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// BusyboxPath is the static busybox the Busybox image is made from.
const BusyboxPath = "/bin/busybox"

// DefaultPath is the PATH a container gets from the images built here.
const DefaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// BusyboxApplets are the /bin symlinks to busybox the Busybox image holds.
var BusyboxApplets = []string{
	"sh", "ls", "cat", "echo", "sleep", "ps", "id", "env", "hostname", "wget",
	"mkdir", "touch", "true", "false", "kill", "head", "tail", "grep", "ip",
	"rm", "cp", "mv", "ln", "chmod", "chown", "stat", "wc", "test", "[", "sed",
	"printf", "pwd", "date", "df", "du", "mount", "umount", "nslookup", "nc",
	"top", "uname", "whoami", "yes", "seq", "sort", "uniq", "tr", "cut", "tee",
	"find", "xargs", "dd", "readlink", "realpath", "basename", "dirname",
	"ping", "ifconfig", "route", "netstat", "vi", "tar", "gzip", "gunzip",
	"httpd", "sync", "usleep", "timeout", "nproc", "free", "stty",
}

// Entry is one tar entry of a layer built by Layer. Type defaults to a
// regular file (tar.TypeReg), Mode to 0644 for files and 0755 for
// directories.
type Entry struct {
	Name     string
	Type     byte
	Mode     int64
	Body     string
	Linkname string // symlink target or hardlink source
	UID, GID int
	// Devmajor/Devminor are for tar.TypeChar and tar.TypeBlock.
	Devmajor, Devminor int64
	// Xattrs are written as PAX "SCHILY.xattr." records.
	Xattrs map[string]string
}

// epoch is the mtime of every entry built here, so images are
// reproducible (the same entries give the same digests).
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Tar renders entries as an uncompressed tar stream, in order, with
// nothing added or checked: it can express malformed layers ("../x").
func Tar(t testing.TB, entries ...Entry) []byte {
	t.Helper()
	b, err := tarOf(entries)
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	return b
}

func tarOf(entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{
			Name: e.Name, Typeflag: e.Type, Mode: e.Mode, Linkname: e.Linkname,
			Uid: e.UID, Gid: e.GID, Devmajor: e.Devmajor, Devminor: e.Devminor,
			ModTime: epoch, Format: tar.FormatPAX,
		}
		if hdr.Typeflag == 0 {
			hdr.Typeflag = tar.TypeReg
		}
		if hdr.Mode == 0 {
			hdr.Mode = 0o644
			if hdr.Typeflag == tar.TypeDir {
				hdr.Mode = 0o755
			}
		}
		if hdr.Typeflag == tar.TypeReg {
			hdr.Size = int64(len(e.Body))
		}
		for k, v := range e.Xattrs {
			if hdr.PAXRecords == nil {
				hdr.PAXRecords = map[string]string{}
			}
			hdr.PAXRecords["SCHILY.xattr."+k] = v
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, fmt.Errorf("tar header %q: %w", e.Name, err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := io.WriteString(tw, e.Body); err != nil {
				return nil, fmt.Errorf("tar body %q: %w", e.Name, err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("tar close: %w", err)
	}
	return buf.Bytes(), nil
}

// Layer builds a gzip-compressed layer from entries (see Tar).
func Layer(t testing.TB, entries ...Entry) v1.Layer {
	t.Helper()
	return LayerFromTar(t, Tar(t, entries...))
}

// LayerFromTar wraps an uncompressed tar stream as a gzip-compressed layer.
func LayerFromTar(t testing.TB, tarBytes []byte) v1.Layer {
	t.Helper()
	l, err := layerOf(tarBytes)
	if err != nil {
		t.Fatalf("imagetest: layer: %v", err)
	}
	return l
}

func layerOf(tarBytes []byte) (v1.Layer, error) {
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	})
}

// Image builds a linux/amd64 image of layers (bottom first) with
// Cmd ["sh"] and the default PATH. Zero layers give an empty image.
func Image(t testing.TB, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := imageOf(layers)
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	return img
}

func imageOf(layers []v1.Layer) (v1.Image, error) {
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, fmt.Errorf("append layers: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", "amd64"
	cf.Created = v1.Time{Time: epoch}
	cf.Config.Cmd = []string{"sh"}
	cf.Config.Env = []string{DefaultPath}
	return mutate.ConfigFile(img, cf)
}

// BusyboxLayer is the single layer of the Busybox image. It skips the
// test when /bin/busybox is missing.
func BusyboxLayer(t testing.TB) v1.Layer {
	t.Helper()
	if _, err := os.Stat(BusyboxPath); err != nil {
		t.Skipf("imagetest: the busybox image needs a static %s (apt-get install busybox-static): %v", BusyboxPath, err)
	}
	l, err := busyboxLayer()
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	return l
}

func busyboxLayer() (v1.Layer, error) {
	bin, err := os.ReadFile(BusyboxPath)
	if err != nil {
		return nil, fmt.Errorf("the busybox image needs a static %s (apt-get install busybox-static): %w", BusyboxPath, err)
	}
	entries := []Entry{
		{Name: "bin/", Type: tar.TypeDir},
		{Name: "bin/busybox", Mode: 0o755, Body: string(bin)},
	}
	for _, a := range BusyboxApplets {
		entries = append(entries, Entry{Name: "bin/" + a, Type: tar.TypeSymlink, Linkname: "busybox", Mode: 0o777})
	}
	entries = append(entries,
		Entry{Name: "etc/", Type: tar.TypeDir},
		Entry{Name: "etc/passwd", Body: "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"},
		Entry{Name: "etc/group", Body: "root:x:0:\nnobody:x:65534:\n"},
		Entry{Name: "root/", Type: tar.TypeDir, Mode: 0o700},
		Entry{Name: "tmp/", Type: tar.TypeDir, Mode: 0o1777},
		Entry{Name: "proc/", Type: tar.TypeDir},
		Entry{Name: "sys/", Type: tar.TypeDir},
		Entry{Name: "dev/", Type: tar.TypeDir},
		Entry{Name: "var/", Type: tar.TypeDir},
	)
	b, err := tarOf(entries)
	if err != nil {
		return nil, err
	}
	return layerOf(b)
}

// Busybox is a one-layer linux/amd64 image: /bin/busybox with its applet
// symlinks (BusyboxApplets), /etc/passwd and /etc/group (root and nobody
// 65534), /tmp, Cmd ["sh"] and the default PATH. It skips the test when
// the host has no /bin/busybox.
func Busybox(t testing.TB) v1.Image {
	t.Helper()
	return Image(t, BusyboxLayer(t))
}

// WriteBusyboxArchive writes the Busybox image as a `docker save`
// tarball named tag, without a test: for benchmarks and tools.
func WriteBusyboxArchive(path, tag string) error {
	l, err := busyboxLayer()
	if err != nil {
		return err
	}
	img, err := imageOf([]v1.Layer{l})
	if err != nil {
		return err
	}
	ref, err := name.NewTag(tag, name.WeakValidation)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(path, ref, img)
}

// WriteDockerArchive writes img as a `docker save` tarball at path, named
// tag ("busybox:1", "127.0.0.1:5000/x:y").
func WriteDockerArchive(t testing.TB, path, tag string, img v1.Image) {
	t.Helper()
	ref, err := name.NewTag(tag, name.WeakValidation)
	if err != nil {
		t.Fatalf("imagetest: tag %q: %v", tag, err)
	}
	if err := tarball.WriteToFile(path, ref, img); err != nil {
		t.Fatalf("imagetest: write docker archive: %v", err)
	}
}

// WriteOCILayout writes img into dir as an OCI image layout (oci-layout,
// index.json, blobs/sha256/…), appending to a layout already there.
func WriteOCILayout(t testing.TB, dir string, img v1.Image) {
	t.Helper()
	writeLayout(t, dir, img, nil)
}

func writeLayout(t testing.TB, dir string, img v1.Image, annotations map[string]string) {
	t.Helper()
	p, err := layout.FromPath(dir)
	if err != nil {
		if p, err = layout.Write(dir, empty.Index); err != nil {
			t.Fatalf("imagetest: oci layout %s: %v", dir, err)
		}
	}
	var opts []layout.Option
	if annotations != nil {
		opts = append(opts, layout.WithAnnotations(annotations))
	}
	if err := p.AppendImage(img, opts...); err != nil {
		t.Fatalf("imagetest: oci layout append: %v", err)
	}
}

// WriteOCIArchive writes img as a tarball of an OCI image layout at path
// (what `skopeo copy … oci-archive:` or `docker save` of recent Docker
// produce). A non-empty ref is recorded as the manifest's
// org.opencontainers.image.ref.name annotation.
func WriteOCIArchive(t testing.TB, path, ref string, img v1.Image) {
	t.Helper()
	dir := t.TempDir()
	var ann map[string]string
	if ref != "" {
		ann = map[string]string{"org.opencontainers.image.ref.name": ref}
	}
	writeLayout(t, dir, img, ann)
	TarDir(t, dir, path)
}

// TarDir writes the files under dir as a tarball at path, names relative
// to dir.
func TarDir(t testing.TB, dir, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("imagetest: %v", err)
	}
	defer f.Close()
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(fi, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if fi.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if fi.Mode().IsRegular() {
			src, err := os.Open(p)
			if err != nil {
				return err
			}
			defer src.Close()
			_, err = io.Copy(tw, src)
			return err
		}
		return nil
	})
	if err == nil {
		err = tw.Close()
	}
	if err != nil {
		t.Fatalf("imagetest: tar %s: %v", dir, err)
	}
}

// Registry serves an empty in-memory registry on a loopback port and
// returns its host:port. It is closed when the test ends.
func Registry(t testing.TB) string {
	t.Helper()
	return RegistryWith(t, nil)
}

// RegistryWith is Registry with wrap applied to the registry's handler,
// to count, delay or corrupt what it serves. A nil wrap serves it as is.
func RegistryWith(t testing.TB, wrap func(http.Handler) http.Handler) string {
	t.Helper()
	var h http.Handler = registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Push uploads img to the registry at host (plain HTTP) as repoTag
// ("busybox:1" or "library/busybox:1") and returns the manifest digest
// ("sha256:…").
func Push(t testing.TB, host, repoTag string, img v1.Image) string {
	t.Helper()
	ref, err := name.ParseReference(host+"/"+repoTag, name.WeakValidation, name.Insecure)
	if err != nil {
		t.Fatalf("imagetest: reference %q: %v", repoTag, err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatalf("imagetest: push %s: %v", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatalf("imagetest: digest: %v", err)
	}
	return d.String()
}
