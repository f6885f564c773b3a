package streaming

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"testing"

	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// echoRuntime's Exec copies stdin to stdout in-process, so a benchmark
// measures the server and the protocol, not fork and exec.
type echoRuntime struct{ *hostRuntime }

func (echoRuntime) Exec(_ context.Context, _ string, _ []string, stdin io.Reader, stdout, _ io.WriteCloser, _ bool, _ <-chan TerminalSize) (int, error) {
	_, err := io.Copy(stdout, stdin)
	return 0, err
}

// BenchmarkExecRoundTrip is one whole `kubectl exec -i` with a 1 KiB
// payload per iteration: GetExec, upgrade, streams, echo, status, close.
//
//	go test ./internal/runtime/streaming/ -run XXX -bench ExecRoundTrip
func BenchmarkExecRoundTrip(b *testing.B) {
	benchExec(b, 1<<10)
}

// BenchmarkExecThroughput pushes 4 MiB through stdin and back per
// iteration; b.SetBytes makes -bench print MB/s.
func BenchmarkExecThroughput(b *testing.B) {
	benchExec(b, 4<<20)
}

func benchExec(b *testing.B, size int) {
	s := startServer(b, echoRuntime{newHostRuntime()})
	payload := bytes.Repeat([]byte("x"), size)
	for _, c := range []struct {
		name string
		new  func(u string) (remotecommand.Executor, error)
	}{
		{"spdy", func(u string) (remotecommand.Executor, error) {
			pu, err := parseURL(u)
			if err != nil {
				return nil, err
			}
			return remotecommand.NewSPDYExecutor(restConfig(s), "POST", pu)
		}},
		{"websocket", func(u string) (remotecommand.Executor, error) {
			return remotecommand.NewWebSocketExecutor(restConfig(s), "GET", u)
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(2 * size))
			b.ReportAllocs()
			var out bytes.Buffer
			for b.Loop() {
				resp, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c", Cmd: []string{"cat"}, Stdin: true, Stdout: true})
				if err != nil {
					b.Fatal(err)
				}
				e, err := c.new(resp.Url)
				if err != nil {
					b.Fatal(err)
				}
				out.Reset()
				if err := e.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdin: bytes.NewReader(payload), Stdout: &out}); err != nil {
					b.Fatal(err)
				}
				if out.Len() != size {
					b.Fatalf("got %d bytes back, want %d", out.Len(), size)
				}
			}
		})
	}
}

func parseURL(u string) (*url.URL, error) { return url.Parse(u) }
