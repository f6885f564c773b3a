// Package streaming is the CRI streaming server: how `kubectl exec`,
// `kubectl attach` and `kubectl port-forward` reach a container.
//
// # The path of a stream
//
// The CRI calls Exec, Attach and PortForward do not carry any bytes. The
// kubelet asks the runtime for a URL (GetExec & co. here), and the runtime
// answers with one that names a single-use token:
//
//	kubectl ──► apiserver ──► kubelet ── CRI Exec ──► runtime: GetExec
//	                                    ◄── http://127.0.0.1:40123/exec/Qx3…
//	kubectl ◄═══ upgraded connection, proxied by apiserver and kubelet ═══► Server
//
// The upgraded connection is then served by this package, which runs the
// command through the Runtime interface (api.go) and copies its stdio.
//
// # Tokens
//
// A token is 128 random bits, base64url, stored with the request it was
// issued for. It can be used once, at the endpoint of its kind, within
// TokenTTL (default 1 minute); it is deleted on use. Unknown, expired and
// used tokens get 404 with a metav1.Status explaining so. The token is the
// only credential the URL carries, which is why it is random, short-lived
// and single-use; the kubelet is expected to proxy to a loopback address.
// A request that is not an upgrade we can serve (a plain GET, a WebSocket
// offering no subprotocol we speak) is refused before the token is looked
// up, so a client that falls back from WebSocket to SPDY still finds it.
//
// # Exec and attach: the remotecommand protocol
//
// There are five streams, numbered like file descriptors:
//
//	0 stdin   client → server
//	1 stdout  server → client
//	2 stderr  server → client (never with a tty: a terminal has one output)
//	3 error   server → client: the outcome, then end of stream
//	4 resize  client → server: JSON {"Width":80,"Height":24} per resize (tty only)
//
// and two transports:
//
//   - SPDY/3.1 (k8s.io/apimachinery/pkg/util/httpstream/spdy). The client
//     POSTs with "Upgrade: SPDY/3.1" and X-Stream-Protocol-Version headers
//     listing the versions it speaks; the server picks the client's first
//     one it knows: v5.channel.k8s.io, v4.channel.k8s.io,
//     v3.channel.k8s.io, v2.channel.k8s.io or channel.k8s.io (v1). The
//     client then creates one SPDY stream per role, named by its
//     "streamType" header (stdin, stdout, stderr, error, resize), and the
//     server waits up to StreamCreationTimeout until it has every stream
//     the stored request asked for. Each side half-closes a stream when it
//     is done writing: stdin's half-close is the command's end of input.
//   - WebSocket (k8s.io/apimachinery/pkg/util/httpstream/wsstream), the
//     default of kubectl 1.30+. The subprotocol (Sec-WebSocket-Protocol)
//     is v5.channel.k8s.io, v4.channel.k8s.io, channel.k8s.io or their
//     base64 variants. Every binary message starts with the stream number;
//     in v5, the message {255, n} half-closes stream n, which is the only
//     way a WebSocket client can end stdin (`echo x | kubectl exec -i`).
//     The server closes the WebSocket when the command is done. wsstream
//     reads one frame per message, so clients must not fragment messages
//     (client-go's write buffer holds a whole one).
//
// The error stream reports the outcome. From v4 on it carries a
// metav1.Status as JSON, Success included:
//
//	{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}
//	{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",
//	 "message":"command terminated with non-zero exit code 7",
//	 "reason":"NonZeroExitCode",
//	 "details":{"causes":[{"reason":"ExitCode","message":"7"}]}}
//
// The ExitCode cause is how `kubectl exec` exits with the command's code
// (client-go turns it into exec.CodeExitError). A Runtime error is a
// Failure with reason InternalError. Versions 1-3 send only a failure's
// message, as text, and nothing on success; they cannot carry exit codes.
// Resizing came with v3; v1 and v2 have no resize stream.
//
// The server closes stdout and stderr before it writes the status, so a
// client that sees the status has seen all output. The command's context
// ends when the connection does (client gone, StreamIdleTimeout without
// traffic, default 4 h as the kubelet's streaming-connection-idle-timeout,
// or the Start context ending), and so do all the session's goroutines.
//
// # Port-forward
//
// Three transports, all to Runtime.PortForward(sandbox, port, stream):
//
//   - SPDY/3.1 with subprotocol portforward.k8s.io. For every TCP
//     connection it forwards, the client opens two streams with the same
//     "requestID" and "port" headers: streamType "error" and "data". The
//     data stream carries the bytes; on failure the server writes the
//     error as text on the error stream and closes it, which client-go
//     reports before dropping the whole connection. A pair whose second
//     stream does not come within StreamCreationTimeout is dropped.
//   - The same SPDY session tunnelled through a WebSocket: subprotocol
//     "SPDY/3.1+portforward.k8s.io", binary messages carrying the SPDY
//     bytes. kubectl 1.31+ tries this first and falls back to plain SPDY
//     if the upgrade fails (client-go tools/portforward tunneling_dialer.go).
//   - A channel WebSocket (v4.channel.k8s.io) for browser-style clients:
//     the ports come from the "ports" query parameter (or the CRI request);
//     port i gets channel 2i for data and 2i+1 for errors, and each
//     channel's first message is the port as two little-endian bytes. One
//     connection per port; the WebSocket closes when all are done.
//
// # Usage
//
//	s, err := streaming.New(streaming.Config{Addr: "127.0.0.1:0", Runtime: rt})
//	if err != nil { ... }
//	if err := s.Start(ctx); err != nil { ... } // listens; serves until ctx ends
//	resp, err := s.GetExec(req)               // in the CRI Exec handler
//	// resp.Url = s.URL() + "/exec/" + token
//
// Mount s.Handler() on another server instead of calling Start by setting
// Config.BaseURL to where it is mounted.
package streaming
