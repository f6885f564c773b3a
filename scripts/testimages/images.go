package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

const (
	busyboxPath = "/bin/busybox"
	defaultPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	e2e         = "registry.k8s.io/e2e-test-images/"
	criTools    = "gcr.io/k8s-staging-cri-tools/"
)

// epoch is every file's mtime and every image's creation time, so the
// same inputs give the same digests.
var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// entry is one tar entry of a layer.
type entry struct {
	name, body, link string
	typ              byte
	mode             int64
}

func layer(entries []entry) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: e.mode, Linkname: e.link, ModTime: epoch, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
			if h.Typeflag == tar.TypeDir {
				h.Mode = 0o755
			}
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, e.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

func dirs(names ...string) []entry {
	var es []entry
	for _, n := range names {
		es = append(es, entry{name: n + "/", typ: tar.TypeDir})
	}
	return es
}

// busyboxLayer is /bin/busybox with a link for every applet where
// busybox would install it, a root filesystem's usual directories and
// the passwd and group files given.
func busyboxLayer(passwd, group string) (v1.Layer, error) {
	bin, err := os.ReadFile(busyboxPath)
	if err != nil {
		return nil, fmt.Errorf("the images are built from a static %s (apt-get install busybox-static): %w", busyboxPath, err)
	}
	out, err := exec.Command(busyboxPath, "--list-full").Output()
	if err != nil {
		return nil, fmt.Errorf("busybox --list-full: %w", err)
	}
	es := dirs("bin", "sbin", "usr", "usr/bin", "usr/sbin", "usr/local", "usr/local/bin", "etc", "tmp", "proc", "sys", "dev", "var", "var/run", "var/www", "root", "home")
	es = append(es, entry{name: "bin/busybox", body: string(bin), mode: 0o755})
	for _, p := range strings.Fields(string(out)) {
		if p == "bin/busybox" {
			continue
		}
		// A hard link carries its target's mode: extractors (containerd's)
		// chmod the shared inode to it.
		es = append(es, entry{name: p, typ: tar.TypeLink, link: "bin/busybox", mode: 0o755})
	}
	es = append(es, entry{name: "etc/passwd", body: passwd}, entry{name: "etc/group", body: group},
		// Debian's busybox-static has no pgrep or ipcs applet; critest
		// uses both (ipcs -m to find a segment's id).
		entry{name: "usr/bin/pgrep", mode: 0o755, body: "#!/bin/sh\n# pgrep NAME: the pids of the processes named NAME\nout=$(pidof \"$1\") || exit 1\nfor p in $out; do echo \"$p\"; done\n"},
		entry{name: "usr/bin/ipcs", mode: 0o755, body: "#!/bin/sh\n# ipcs -m: the shared memory segments of this IPC namespace\ncat /proc/sysvipc/shm\n"})
	for i := range es {
		if es[i].name == "tmp/" {
			es[i].mode = 0o1777
		}
	}
	return layer(es)
}

const (
	basePasswd = "root:x:0:0:root:/root:/bin/sh\nwww-data:x:33:33:www-data:/var/www:/bin/false\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
	baseGroup  = "root:x:0:\nwww-data:x:33:\nusers:x:100:\nnobody:x:65534:\n"
)

// spec describes one image: extra files over busybox and its config.
type spec struct {
	names      []string
	passwd     string // "" for basePasswd
	group      string // "" for baseGroup
	self       []entry
	files      []entry
	user       string
	entrypoint []string
	cmd        []string
}

// selfAt is this binary installed at path with mode.
func selfAt(path string, mode int64) entry { return entry{name: path, mode: mode} }

// imageSet is every image critest and the benchmarks use, by the names
// they ask for. (critest's test-image-digest is pinned to upstream's
// manifest digest, which no image built here can have.)
func imageSet() []spec {
	web := func(name string, names ...string) spec {
		return spec{names: names, self: []entry{selfAt("usr/sbin/"+name, 0o755)}, entrypoint: []string{"/usr/sbin/" + name}}
	}
	s := []spec{
		{names: []string{e2e + "busybox:1.29-2", e2e + "busybox:1.36.1-1", "docker.io/library/busybox:latest"}, cmd: []string{"sh"}},
		web("nginx", e2e+"nginx:1.14-2", e2e+"nginx:1.15-4"),
		web("httpd", e2e+"httpd:2.4.39-4"),
		web("hostnet-nginx", criTools+"hostnet-nginx-amd64:latest"),
		{names: []string{e2e + "nonewprivs:1.3"}, self: []entry{selfAt("usr/local/bin/nnp", 0o4755)}, entrypoint: []string{"/usr/local/bin/nnp"}, user: "0"},
		{names: []string{"registry.k8s.io/pause:3.9", "k8s.gcr.io/pause:3.9", "registry.k8s.io/pause:3.10"}, self: []entry{selfAt("pause", 0o755)}, entrypoint: []string{"/pause"}},
		{names: []string{criTools + "test-image-latest:latest", criTools + "test-image-tag:test", criTools + "test-image-tags:1", criTools + "test-image-tags:2", criTools + "test-image-tags:3"}, cmd: []string{"sh"}},
		{names: []string{criTools + "test-image-tag:all"}, cmd: []string{"sh"}},
		{names: []string{criTools + "test-image-user-uid:latest"}, user: "1002", cmd: []string{"sh"}},
		{names: []string{criTools + "test-image-user-username:latest"}, user: "www-data", cmd: []string{"sh"}},
		{names: []string{criTools + "test-image-user-uid-group:latest"}, user: "1003:users", cmd: []string{"sh"}},
		{names: []string{criTools + "test-image-user-username-group:latest"}, user: "www-data:users", cmd: []string{"sh"}},
		{
			names:  []string{criTools + "test-image-predefined-group:latest"},
			passwd: basePasswd + "default-user:x:1000:1000:default-user:/home:/bin/sh\n",
			group:  baseGroup + "default-user:x:1000:\ngroup-defined-in-image:x:50000:default-user\n",
			user:   "1000", cmd: []string{"sh"},
		},
	}
	for i := 1; i <= 3; i++ {
		s = append(s, spec{
			names: []string{fmt.Sprintf("%stest-image-%d:latest", criTools, i)},
			cmd:   []string{"sh"},
		})
	}
	return s
}

// builder makes images, sharing the busybox layer among them.
type builder struct {
	self []byte
	base map[string]v1.Layer // by passwd+group
}

func newBuilder() (*builder, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	self, err := os.ReadFile(exe)
	if err != nil {
		return nil, err
	}
	return &builder{self: self, base: map[string]v1.Layer{}}, nil
}

func (b *builder) build(s spec) (v1.Image, error) {
	passwd, group := s.passwd, s.group
	if passwd == "" {
		passwd = basePasswd
	}
	if group == "" {
		group = baseGroup
	}
	base, ok := b.base[passwd+group]
	if !ok {
		var err error
		if base, err = busyboxLayer(passwd, group); err != nil {
			return nil, err
		}
		b.base[passwd+group] = base
	}
	layers := []v1.Layer{base}
	// Every spec is an image of its own (critest checks that different
	// names with different specs have different IDs).
	extra := append([]entry{{name: "etc/image-name", body: s.names[0] + "\n"}}, s.files...)
	for _, e := range s.self {
		e.body = string(b.self)
		extra = append(extra, e)
	}
	l, err := layer(extra)
	if err != nil {
		return nil, err
	}
	layers = append(layers, l)
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", "amd64", v1.Time{Time: epoch}
	cf.Config.Env = []string{defaultPath}
	cf.Config.User = s.user
	cf.Config.Entrypoint = s.entrypoint
	cf.Config.Cmd = s.cmd
	return mutate.ConfigFile(img, cf)
}
