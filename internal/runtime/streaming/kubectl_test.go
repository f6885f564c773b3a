package streaming

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// findKubectl prefers $KUBECTL, then kubectl 1.33 beside the kubectl on
// PATH (the Cloud SDK ships a version dispatcher with kubectl.1.NN next
// to it), then kubectl itself.
func findKubectl(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	k, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not found")
	}
	if real, err := filepath.EvalSymlinks(k); err == nil {
		if v := filepath.Join(filepath.Dir(real), "kubectl.1.33"); fileExists(v) {
			return v
		}
	}
	return k
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// fakeAPIServer is the least of an API server `kubectl exec` and
// `kubectl port-forward` need: discovery, one running pod, and its exec
// and portforward subresources, which it serves by mounting the streaming
// server's Handler as a kubelet's proxy would reach it.
func fakeAPIServer(t *testing.T, rt Runtime) (string, *upgrades) {
	t.Helper()
	seen := &upgrades{}
	var s *Server
	mux := http.NewServeMux()
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	var err error
	s, err = New(Config{BaseURL: ts.URL + "/cri", Runtime: rt})
	if err != nil {
		t.Fatal(err)
	}
	json := func(body string) http.HandlerFunc {
		return func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, body)
		}
	}
	mux.HandleFunc("/version", json(`{"major":"1","minor":"33","gitVersion":"v1.33.0"}`))
	mux.HandleFunc("/api", json(`{"kind":"APIVersions","versions":["v1"],"serverAddressByClientCIDRs":[{"clientCIDR":"0.0.0.0/0","serverAddress":"127.0.0.1"}]}`))
	mux.HandleFunc("/apis", json(`{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`))
	mux.HandleFunc("/api/v1", json(`{"kind":"APIResourceList","groupVersion":"v1","resources":[
		{"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list"],"shortNames":["po"]},
		{"name":"pods/exec","singularName":"","namespaced":true,"kind":"PodExecOptions","verbs":["create","get"]},
		{"name":"pods/portforward","singularName":"","namespaced":true,"kind":"PodPortForwardOptions","verbs":["create","get"]}]}`))
	mux.HandleFunc("/api/v1/namespaces/default/pods/p", json(`{"kind":"Pod","apiVersion":"v1",
		"metadata":{"name":"p","namespace":"default","uid":"u1"},
		"spec":{"containers":[{"name":"c","image":"busybox"}]},
		"status":{"phase":"Running"}}`))
	mux.HandleFunc("/api/v1/namespaces/default/pods/p/exec", func(w http.ResponseWriter, r *http.Request) {
		seen.add(r)
		q := r.URL.Query()
		resp, err := s.GetExec(&runtimeapi.ExecRequest{
			ContainerId: q.Get("container"), Cmd: q["command"],
			Stdin: q.Get("stdin") == "true", Stdout: q.Get("stdout") == "true",
			Stderr: q.Get("stderr") == "true", Tty: q.Get("tty") == "true",
		})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		serveAt(s, w, r, resp.Url, ts.URL+"/cri")
	})
	mux.HandleFunc("/api/v1/namespaces/default/pods/p/portforward", func(w http.ResponseWriter, r *http.Request) {
		seen.add(r)
		resp, err := s.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: "p"})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		serveAt(s, w, r, resp.Url, ts.URL+"/cri")
	})
	return ts.URL, seen
}

// upgrades records how each streaming request asked to be upgraded.
type upgrades struct {
	mu   sync.Mutex
	last string
}

func (u *upgrades) add(r *http.Request) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.last = r.Header.Get("Upgrade") + " " + r.Header.Get("Sec-WebSocket-Protocol") + " " + strings.Join(r.Header.Values("X-Stream-Protocol-Version"), ",")
}

func (u *upgrades) get() string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.last
}

// serveAt hands r to the streaming handler as a request for streamURL.
func serveAt(s *Server, w http.ResponseWriter, r *http.Request, streamURL, base string) {
	r2 := r.Clone(r.Context())
	r2.URL.Path = strings.TrimPrefix(streamURL, base)
	r2.URL.RawPath = ""
	s.Handler().ServeHTTP(w, r2)
}

func kubectlCmd(t *testing.T, ctx context.Context, server string, env []string, args ...string) *exec.Cmd {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "none"), []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, findKubectl(t), append([]string{"--server=" + server, "--kubeconfig=" + filepath.Join(home, "none"), "--cache-dir=" + filepath.Join(home, "cache")}, args...)...)
	cmd.Env = append(append(os.Environ(), "HOME="+home, "KUBECONFIG="), env...)
	return cmd
}

// TestKubectl drives the real kubectl binary, in both of its transports.
func TestKubectl(t *testing.T) {
	requireSh(t)
	server, seen := fakeAPIServer(t, newHostRuntime())
	echo := echoServer(t)
	for _, tc := range []struct {
		name string
		env  []string
		// what the exec and port-forward upgrades must have asked for
		execUpgrade, pfUpgrade string
	}{
		{"websocket (default)", nil, "websocket v5.channel.k8s.io", "websocket SPDY/3.1+portforward.k8s.io"},
		{"spdy", []string{"KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false", "KUBECTL_PORT_FORWARD_WEBSOCKETS=false"}, "SPDY/3.1", "SPDY/3.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			t.Run("exec exit code and streams", func(t *testing.T) {
				cmd := kubectlCmd(t, ctx, server, tc.env, "exec", "p", "-c", "c", "--", "sh", "-c", "echo out; echo err >&2; exit 7")
				var out, errOut bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &errOut
				err := cmd.Run()
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 7 {
					t.Fatalf("kubectl exit: %v, want code 7 (stderr %q)", err, errOut.String())
				}
				if out.String() != "out\n" || !strings.HasPrefix(errOut.String(), "err\n") {
					t.Fatalf("stdout %q stderr %q", out.String(), errOut.String())
				}
				if got := seen.get(); !strings.HasPrefix(got, tc.execUpgrade) {
					t.Fatalf("kubectl asked for %q, want %q", got, tc.execUpgrade)
				}
			})
			t.Run("exec -i stdin", func(t *testing.T) {
				cmd := kubectlCmd(t, ctx, server, tc.env, "exec", "-i", "p", "-c", "c", "--", "cat")
				cmd.Stdin = strings.NewReader("piped through kubectl\n")
				out, err := cmd.CombinedOutput()
				if err != nil || string(out) != "piped through kubectl\n" {
					t.Fatalf("got %q, %v", out, err)
				}
			})
			t.Run("exec -it on a terminal", func(t *testing.T) {
				// kubectl sends its terminal's size as the first resize;
				// the command must see it on its own pty.
				cmd := kubectlCmd(t, ctx, server, tc.env, "exec", "-it", "p", "-c", "c", "--", "sh", "-c",
					// The size may land just after the command starts: wait
					// (up to 10 s) for the pty to leave its initial 5x10.
					`for i in $(seq 200); do [ "$(stty size)" != "5 10" ] && break; sleep 0.05; done; stty size`)
				ptmx, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 33, Cols: 77})
				if err != nil {
					t.Fatal(err)
				}
				defer ptmx.Close()
				out, _ := io.ReadAll(ptmx) // EIO once kubectl exits
				if err := cmd.Wait(); err != nil {
					t.Fatalf("kubectl: %v (%q)", err, out)
				}
				if !strings.Contains(string(out), "33 77") {
					t.Fatalf("stty size printed %q, want \"33 77\"", out)
				}
			})
			t.Run("port-forward", func(t *testing.T) {
				cmd := kubectlCmd(t, ctx, server, tc.env, "port-forward", "--address=127.0.0.1", "pod/p", fmt.Sprintf(":%d", echo))
				stdout, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				var errOut bytes.Buffer
				cmd.Stderr = &errOut
				if err := cmd.Start(); err != nil {
					t.Fatal(err)
				}
				defer func() {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}()
				local := 0
				re := regexp.MustCompile(`Forwarding from 127\.0\.0\.1:(\d+) ->`)
				sc := bufio.NewScanner(stdout)
				for local == 0 && sc.Scan() {
					if m := re.FindStringSubmatch(sc.Text()); m != nil {
						local, _ = strconv.Atoi(m[1])
					}
				}
				if local == 0 {
					t.Fatalf("kubectl port-forward did not start: %s", errOut.String())
				}
				go func() { _, _ = io.Copy(io.Discard, stdout) }()
				payload := bytes.Repeat([]byte("kubectl port-forward;"), 5000)
				got, err := roundTrip(local, payload)
				if err != nil || !bytes.Equal(got, payload) {
					t.Fatalf("round trip: %d of %d bytes, %v (kubectl: %s)", len(got), len(payload), err, errOut.String())
				}
				if got := seen.get(); !strings.HasPrefix(got, tc.pfUpgrade) {
					t.Fatalf("kubectl asked for %q, want %q", got, tc.pfUpgrade)
				}
			})
		})
	}
}
