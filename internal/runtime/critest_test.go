package runtime

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/rudder-dev/rudder/internal/runtime/image"
	"github.com/rudder-dev/rudder/internal/runtime/image/imagetest"
	"github.com/rudder-dev/rudder/internal/runtime/streaming"
)

// TestCritest runs upstream's CRI validation suite against the runtime
// when RUDDER_CRITEST names a critest binary (go install
// sigs.k8s.io/cri-tools/cmd/critest@v1.34.0). Its images come from a
// loopback registry: busybox, and busybox's httpd on port 80 as the web
// server. RUDDER_CRITEST_FOCUS narrows it (a ginkgo regexp).
func TestCritest(t *testing.T) {
	bin := os.Getenv("RUDDER_CRITEST")
	if bin == "" {
		t.Skip("set RUDDER_CRITEST to a critest binary")
	}
	e := newEnv(t)
	// critest names images on public registries; this machine pulls
	// from loopback only.
	e.shutdown()
	aliases := map[string]string{}
	e.wrap = func(i image.Images) image.Images { return loopbackImages{i, aliases} }
	e.start()
	ss, err := streaming.New(streaming.Config{Addr: "127.0.0.1:0", Runtime: e.rt.StreamRuntime()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := ss.Start(ctx); err != nil {
		t.Fatal(err)
	}
	e.rt.SetStreaming(ss)
	host := imageRegistry(t)
	// critest's commands need more applets than imagetest's busybox has.
	list, err := exec.Command(imagetest.BusyboxPath, "--list").Output()
	if err != nil {
		t.Fatal(err)
	}
	// Hard links, as busybox images have: a spec masks /bin/ls, which
	// through a symlink would mask busybox itself.
	bb, err := os.ReadFile(imagetest.BusyboxPath)
	if err != nil {
		t.Fatal(err)
	}
	links := []imagetest.Entry{{Name: "bin/busybox", Mode: 0o755, Body: string(bb)}}
	for _, a := range strings.Fields(string(list)) {
		if a != "busybox" {
			links = append(links, imagetest.Entry{Name: "bin/" + a, Type: tar.TypeLink, Linkname: "bin/busybox"})
		}
	}
	full, err := mutate.AppendLayers(testImage.img, imagetest.Layer(t, links...))
	if err != nil {
		t.Fatal(err)
	}
	imagetest.Push(t, host, "e2e/busybox:1", full)
	cf, err := full.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Cmd = []string{"httpd", "-f", "-p", "80", "-h", "/www"}
	web, err := mutate.ConfigFile(full, cf)
	if err != nil {
		t.Fatal(err)
	}
	imagetest.Push(t, host, "e2e/web:1", web)
	// Some specs name their web server image outright.
	for _, ref := range []string{"registry.k8s.io/e2e-test-images/nginx:1.14-2", "registry.k8s.io/e2e-test-images/httpd:2.4.39-4"} {
		aliases[ref] = host + "/e2e/web:1"
	}
	images := filepath.Join(t.TempDir(), "images.yaml")
	os.WriteFile(images, []byte(fmt.Sprintf("defaultTestContainerImage: %s/e2e/busybox:1\nwebServerTestImage: %s/e2e/web:1\n", host, host)), 0o644)
	args := []string{"--runtime-endpoint", "unix://" + e.sock, "--image-endpoint", "unix://" + e.sock,
		"--test-images-file", images, "--ginkgo.no-color", "--ginkgo.timeout", "20m"}
	if f := os.Getenv("RUDDER_CRITEST_FOCUS"); f != "" {
		args = append(args, "--ginkgo.focus", f)
	}
	skip := strings.Join(critestSkips, "|")
	if s, ok := os.LookupEnv("RUDDER_CRITEST_SKIP"); ok {
		skip = s
	}
	if skip != "" {
		args = append(args, "--ginkgo.skip", skip)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	os.WriteFile("/tmp/critest.out", out, 0o644)
	lines := strings.Split(string(out), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	t.Logf("critest (full output in /tmp/critest.out):\n%s", strings.Join(lines, "\n"))
	if err != nil {
		t.Errorf("critest: %v", err)
	}
}

// critestSkips are the specs this machine cannot pass, and why.
var critestSkips = []string{
	"Image Manager",               // public images only (gcr.io/k8s-staging-cri-tools/...)
	"NoNewPrivs",                  // the nonewprivs image
	"HostPID|ContainerPID",        // need nginx's "master process"
	"portforward in host network", // hostnet-nginx image
	"port mapping|should support portforward \\[Conformance\\]|Multiple Containers.*should support network", // reach the pod IP: no pod network yet
	"execSync with timeout",              // pgrep, missing from Debian's busybox
	"HostIpc",                            // ipcs, missing from Debian's busybox
	"Multiple Containers.*container log", // expects real httpd's start-up log line
	"MaskedPaths",                        // masks /bin/ls, which Debian's busybox sh runs as a built-in applet
}

// loopbackImages refuses pulls from anywhere but a loopback registry,
// and serves some public names from loopback images (aliases).
type loopbackImages struct {
	image.Images
	aliases map[string]string
}

func (l loopbackImages) real(ref string) string {
	if a, ok := l.aliases[ref]; ok {
		return a
	}
	return ref
}

func (l loopbackImages) Pull(ctx context.Context, ref string, auth *image.Auth) (image.Image, error) {
	ref = l.real(ref)
	if !strings.HasPrefix(ref, "127.0.0.1:") {
		return image.Image{}, fmt.Errorf("pull %s: this test pulls from loopback registries only", ref)
	}
	return l.Images.Pull(ctx, ref, auth)
}

func (l loopbackImages) Get(ref string) (image.Image, error) { return l.Images.Get(l.real(ref)) }

func (l loopbackImages) Mount(ctx context.Context, id, img, target string) (image.Rootfs, error) {
	return l.Images.Mount(ctx, id, l.real(img), target)
}
