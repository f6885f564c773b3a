package runtime

import (
	"context"
	"net/http"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/rudder-dev/rudder/internal/runtime/streaming"
)

// TestStreamingEndToEnd: the Exec and Attach RPCs return URLs of the
// streaming server, which client-go's SPDY executor (kubectl's) drives.
func TestStreamingEndToEnd(t *testing.T) {
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
	pod, pcfg := e.runPod("e2e")
	id := e.createStart(pod, pcfg, ctrConfig("main", "sleep", "3600"))

	resp, err := e.rs.Exec(e.ctx(), &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"sh", "-c", "hostname; exit 3"}, Stdout: true, Stderr: true})
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	if !strings.HasPrefix(resp.Url, ss.URL()) {
		t.Fatalf("exec URL %q is not the streaming server's %q", resp.Url, ss.URL())
	}
	var out, errb syncBuffer
	err = stream(t, resp.Url, remotecommand.StreamOptions{Stdout: &out, Stderr: &errb})
	if err == nil || !strings.Contains(err.Error(), "exit code 3") || out.String() != "e2e\n" {
		t.Errorf("exec over SPDY: err %v, stdout %q stderr %q", err, out.String(), errb.String())
	}

	if _, err := e.rs.Exec(e.ctx(), &runtimeapi.ExecRequest{ContainerId: "nope", Cmd: []string{"sh"}, Stdout: true}); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("Exec of an unknown container: %v", err)
	}
	pf, err := e.rs.PortForward(e.ctx(), &runtimeapi.PortForwardRequest{PodSandboxId: pod, Port: []int32{80}})
	if err != nil || !strings.HasPrefix(pf.Url, ss.URL()) {
		t.Errorf("PortForward: %v %v", pf, err)
	}
}

func stream(t *testing.T, url string, opts remotecommand.StreamOptions) error {
	t.Helper()
	ex, err := remotecommand.NewSPDYExecutor(&rest.Config{}, http.MethodPost, mustURL(t, url))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return ex.StreamWithContext(ctx, opts)
}

func mustURL(t *testing.T, s string) *neturl.URL {
	u, err := neturl.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
