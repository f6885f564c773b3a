// Package monitor is a container's monitor ("shim"): the process that
// runs `runc create` for one container, owns its stdio, writes its CRI
// log, reaps it and records its exit. The runtime (package runtime)
// starts one per container by re-executing its own binary as
//
//	<binary> runtime-shim CONFIG.json
//
// with the ready pipe as fd 3, in a new session. Because the monitor,
// not the runtime, is the container's parent, containers outlive a
// restart of the runtime, and exit codes are never lost.
//
// # Why a package of its own, with so few imports
//
// A monitor lives as long as its container, so its memory is paid once
// per pod. A Go program runs every linked package's init before main,
// and rudder links the API machinery, etcd, gRPC and protobuf: a monitor
// dispatched from main carried all their registries and schemes, 8.2 MiB
// of private dirty memory each (820 MiB for 100 pods).
//
// The Go spec fixes the order of package initialisation: repeatedly, the
// first package in import-path order whose imports are all initialised.
// This package's path sorts before go.etcd.io, golang.org, google.golang.org,
// gopkg.in, k8s.io and sigs.k8s.io, and it imports only the standard
// library, golang.org/x/sys/unix and github.com/creack/pty. So its init
// runs as soon as those few are ready, before any heavy initialiser, and
// when os.Args[1] is Subcommand it runs the monitor and exits there. A
// monitor then holds about 1.5 MiB of private memory (numbers in
// internal/runtime/monitor's commit message and the runtime's doc).
//
// Any binary that links this package (rudder, and every test binary of a
// package that links the runtime) is therefore a monitor when started so;
// nothing needs to dispatch the subcommand. TestImportsStayFew fails if
// the package ever imports anything else: one import of, say, k8s.io
// would make this init wait for that package's whole dependency tree.
// GODEBUG=inittrace=1 shows the order: `rudder runtime-shim x` prints
// only standard packages before failing on its missing config.
//
// The monitor also keeps its heap small (GC at +25%, memory returned to
// the OS once the container runs, at most 2 Ps) and its goroutines few:
// one per output stream, one accepting on the socket, one per client.
//
// # Contract
//
// Config (JSON, the only argument) names every file. On fd 3 the monitor
// writes one line, "ok PID" once `runc create` has succeeded (PID is the
// container's init, waiting in runc's exec fifo for `runc start`), or
// "error: MESSAGE" (runc's reason, from its JSON log at Bundle/runc.log)
// and exits 1. It becomes a child subreaper, so the container's init and
// orphaned descendants are its children.
//
// Output goes to LogPath in the CRI format the kubelet reads (Log):
// "<RFC3339Nano> stdout|stderr F|P text", rotated by size. With Tty runc
// passes the pty master over the Console socket and everything is
// stdout.
//
// When the init exits the monitor drains the output (at most 2s more),
// writes ExitStatus to ExitFile atomically (WriteFileAtomic), sends it
// to attached clients as FrameExit, answers waiters, removes Socket and
// exits 0. So ExitFile exists exactly when the container has exited under
// a monitor; a monitor that died without writing it is detected by the
// runtime from its pid and start time.
//
// Socket takes one Request (a JSON line) per connection:
//
//	wait    → the ExitStatus JSON line, once exited
//	resize  → "ok" (pty only)
//	reopen  → "ok" or "error: ..." (the log file, after rotation by others)
//	attach  → "ok", then frames both ways: FrameStdin, FrameStdinClose and
//	          FrameResize from the client; FrameStdout, FrameStderr and a
//	          final FrameExit from the monitor, which then closes
//
// A frame is a kind byte, a big-endian uint32 length (at most 1 MiB) and
// the payload (WriteFrame, ReadFrame).
//
// # Files
//
// monitor.go (init, Main, runc create, reaping, exit), serve.go (the
// socket), config.go (Config, ExitStatus, Request, frames, atomic JSON
// files), log.go (the CRI log writer).
package monitor
