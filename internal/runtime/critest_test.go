package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"

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
	imagetest.Push(t, host, "e2e/busybox:1", testImage.img)
	cf, err := testImage.img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cf = cf.DeepCopy()
	cf.Config.Cmd = []string{"httpd", "-f", "-p", "80", "-h", "/www"}
	web, err := mutate.ConfigFile(testImage.img, cf)
	if err != nil {
		t.Fatal(err)
	}
	imagetest.Push(t, host, "e2e/web:1", web)
	images := filepath.Join(t.TempDir(), "images.yaml")
	os.WriteFile(images, []byte(fmt.Sprintf("defaultTestContainerImage: %s/e2e/busybox:1\nwebServerTestImage: %s/e2e/web:1\n", host, host)), 0o644)
	args := []string{"--runtime-endpoint", "unix://" + e.sock, "--image-endpoint", "unix://" + e.sock,
		"--test-images-file", images, "--ginkgo.no-color", "--ginkgo.timeout", "20m"}
	if f := os.Getenv("RUDDER_CRITEST_FOCUS"); f != "" {
		args = append(args, "--ginkgo.focus", f)
	}
	if s := os.Getenv("RUDDER_CRITEST_SKIP"); s != "" {
		args = append(args, "--ginkgo.skip", s)
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
