// Package agent wires a real node: the container runtime (internal/runtime,
// serving CRI on a unix socket) and the kubelet (internal/kubelet, a client
// of the API server and of that socket). It is a wiring package, like
// internal/server: the only place those components meet, and then only
// through their public contracts — the kubelet reaches the runtime through
// CRI gRPC on the socket, never by a Go call, so the same kubelet runs on
// containerd (Config.RuntimeEndpoint) and crictl reaches our runtime.
//
// Start runs in readiness order:
//
//  1. preflight: root, overlayfs, namespaces, the cgroup layout (v1/hybrid
//     or v2) and the OCI runtime; a host that lacks one is refused with a
//     line naming it (ErrHost);
//  2. the agent's directory becomes a shared mount, so volume mounts the
//     kubelet makes below it propagate into containers (the host's / may
//     be private);
//  3. the runtime serves CRI on <Dir>/../cri.sock (unless another runtime
//     is named), re-adopting the containers it left running;
//  4. the kubelet registers the node, renews its lease and runs the pods
//     bound to it.
//
// Stop ends the kubelet, then the runtime; containers keep running (their
// monitors hold them) and the next start adopts them.
//
// Usage, as `rudder up` does with the server's CA at hand:
//
//	creds, _ := agent.LocalCredentials(srv.PKI, dir, srv.URL, name, ip)
//	a, err := agent.Start(ctx, agent.Config{NodeName: name, NodeIP: ip, Dir: dir, Credentials: creds})
//	...
//	a.Stop()
package agent
