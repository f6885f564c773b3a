// Package netns holds Linux network namespaces for the code that builds
// nodes and pods apart from the host: `rudder up --nodes` (a namespace per
// node and a hub), and the tests and benchmarks of the pod network, the
// service proxy and NetworkPolicy, which run whole nodes in namespaces
// they create.
//
// A network namespace belongs to an OS thread, not to a goroutine or a
// process. Everything that must happen inside one runs on a thread of its
// own: the goroutine locks its thread, enters the namespace, runs, and
// returns the thread to where it was before unlocking it, so no other
// goroutine ever runs in a namespace it did not ask for. What such
// a thread creates keeps its namespace after the thread is gone: a socket
// stays in the namespace it was created in (Listen, DialContext), and a
// child process forked there starts there.
//
//	ns, _ := netns.New()                  // held by a descriptor only
//	defer ns.Close()                      // the kernel frees it once unused
//	ln, _ := ns.Listen("tcp", "10.0.0.1:80")
//	h, _ := netlink.NewHandleAt(...)      // or open ns.Path() for nftables
//
// New namespaces are held by a file descriptor and nothing else names
// them, so a crash cannot leave one behind that nothing uses; Pinned also
// bind-mounts one on a file, for tools that want a path that outlives
// this process.
package netns
