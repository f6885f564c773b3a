package streaming

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	rc "k8s.io/apimachinery/pkg/util/remotecommand"
)

type streamAndReply struct {
	stream    httpstream.Stream
	replySent <-chan struct{}
}

// openSPDYSession upgrades to SPDY/3.1 and waits until the client has
// created every stream the request calls for. In SPDY the client opens
// the streams, one per role, each named by its streamType header; the
// server only accepts them. It returns nil if the upgrade failed or the
// streams did not all arrive within StreamCreationTimeout.
func (s *Server) openSPDYSession(w http.ResponseWriter, r *http.Request, protocol string, opts stdio) *rcSession {
	want := map[string]bool{corev1.StreamTypeError: true}
	if opts.stdin {
		want[corev1.StreamTypeStdin] = true
	}
	if opts.stdout {
		want[corev1.StreamTypeStdout] = true
	}
	if opts.stderr {
		want[corev1.StreamTypeStderr] = true
	}
	if opts.tty && protocol != rc.StreamProtocolV1Name && protocol != rc.StreamProtocolV2Name {
		want[corev1.StreamTypeResize] = true // resizing came with v3
	}

	// The stream handler runs on spdystream's frame goroutine, so it must
	// never block: streams beyond what we wait for are refused.
	arrivals := make(chan streamAndReply, len(streamTypes))
	collecting := make(chan struct{})
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, r, func(st httpstream.Stream, replySent <-chan struct{}) error {
		select {
		case <-collecting:
			return errors.New("stream created after the session started")
		default:
		}
		select {
		case arrivals <- streamAndReply{st, replySent}:
			return nil
		default:
			return errors.New("too many streams")
		}
	})
	if conn == nil {
		return nil // the upgrader wrote the error response
	}
	conn.SetIdleTimeout(s.cfg.StreamIdleTimeout)
	defer close(collecting)

	timer := time.NewTimer(s.cfg.StreamCreationTimeout)
	defer timer.Stop()
	got := make(map[string]httpstream.Stream, len(want))
	replies := make(map[string]<-chan struct{}, len(want))
	for len(got) < len(want) {
		select {
		case a := <-arrivals:
			typ := a.stream.Headers().Get(corev1.StreamType)
			if !want[typ] || got[typ] != nil {
				s.log.Debug("refusing unexpected stream", "streamType", typ)
				_ = a.stream.Reset()
				continue
			}
			got[typ] = a.stream
			replies[typ] = a.replySent
		case <-timer.C:
			var missing []string
			for typ := range want {
				if got[typ] == nil {
					missing = append(missing, typ)
				}
			}
			sort.Strings(missing)
			msg := fmt.Sprintf("timed out after %v waiting for the client to create the %s stream(s) the request asked for",
				s.cfg.StreamCreationTimeout, strings.Join(missing, ", "))
			s.log.Error("streaming session not started", "protocol", protocol, "err", msg)
			// Without a status, a client would take the closed
			// connection for success.
			if es := got[corev1.StreamTypeError]; es != nil {
				select {
				case <-replies[corev1.StreamTypeError]:
					_, _ = es.Write(encodeStatus(protocol, badRequestStatus(msg)))
					_ = es.Close()
				case <-conn.CloseChan():
				}
			}
			_ = conn.Close()
			return nil
		case <-conn.CloseChan():
			_ = conn.Close()
			return nil
		}
	}
	// Writing before a stream's SYN_REPLY went out would confuse clients.
	for _, rs := range replies {
		select {
		case <-rs:
		case <-timer.C:
			_ = conn.Close()
			return nil
		case <-conn.CloseChan():
			_ = conn.Close()
			return nil
		}
	}

	var once sync.Once
	ss := &rcSession{
		closed: conn.CloseChan(),
		close:  func() { once.Do(func() { _ = conn.Close() }) },
	}
	if st := got[corev1.StreamTypeStdin]; st != nil {
		ss.stdin = st
	}
	if st := got[corev1.StreamTypeStdout]; st != nil {
		ss.stdout = st
	}
	if st := got[corev1.StreamTypeStderr]; st != nil {
		ss.stderr = st
	}
	if st := got[corev1.StreamTypeResize]; st != nil {
		ss.resize = st
	}
	errStream := got[corev1.StreamTypeError]
	ss.writeStatus = func(status *metav1.Status) error {
		if b := encodeStatus(protocol, status); len(b) > 0 {
			if _, err := errStream.Write(b); err != nil {
				return err
			}
		}
		// The half-close is the client's end-of-status.
		return errStream.Close()
	}
	return ss
}
