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
// per pod. A Go program runs every linked package's initialisers before
// main, and rudder links the API machinery, etcd, gRPC and protobuf
// (7 MB allocated by 500 initialisers): a monitor dispatched from main
// held 8.4 MiB of private dirty memory (smaps_rollup Private_Dirty; Pss
// 25.6 MiB), 840 MiB for 100 pods.
//
// The Go spec fixes the order of package initialisation: repeatedly, the
// first package in import-path order whose imports are all initialised.
// This package's init runs the monitor and exits when os.Args[1] is
// Subcommand, so every package initialised before it is paid for by
// every monitor. Two things make that set small:
//
//   - its import path sorts before go.etcd.io, golang.org, google.golang.org,
//     gopkg.in, k8s.io and sigs.k8s.io;
//   - it imports only golang.org/x/sys/unix and standard packages that
//     nearly every package also needs (those of fmt and encoding/json),
//     so it is ready as soon as "os" is. A dependency that sorts late
//     and that few packages need delays it until every package sorting
//     before that dependency has run: net (whose vendor/ dependencies
//     sort last) let 250 initialisers run first, 2 MB of allocations and
//     4.4 MiB per monitor; os/exec, path/filepath and runtime/debug each
//     let hundreds more. So the sockets are made with x/sys/unix
//     (socket.go), runc is started with os.StartProcess, paths are cut
//     with package path, and GOGC comes from the environment.
//
// Now about 100 small initialisers (100 KB) run before the monitor, and
// a monitor holds 1.6 MiB private dirty (Pss 10.6 MiB with two running,
// most of it the binary's text shared by every monitor); `rudder bench
// pods` measures rudder plus monitors at 168-174 MiB PSS with 10 pods
// and 181 MiB with 30, against 392-406 and 390-397 before.
//
// Any binary that links this package (rudder, and every test binary of a
// package that links the runtime) is therefore a monitor when started
// so; nothing needs to dispatch the subcommand. TestImportsStayFew fails
// when a dependency breaks the rule above, and the runtime's
// TestMonitorRunsBeforeHeavyInits measures the initialisers that run
// first (GODEBUG=inittrace=1 shows them).
//
// The monitor also keeps its heap small and its goroutines few: the
// runtime starts it with GOGC=25 and GOMAXPROCS=1 (1.6 MiB private
// instead of 2.2 with two Ps; runc does not inherit them), it collects
// once the container runs, and it has one goroutine per output stream,
// one accepting on the socket and one per connected client.
//
// # Contract
//
// Config (JSON, the only argument) names every file and runc by its
// absolute path; GOGC and GOMAXPROCS in the environment tune the
// monitor's Go runtime and are not passed on to runc. On fd 3 the monitor
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
// socket's requests), socket.go (unix sockets without package net),
// config.go (Config, ExitStatus, Request, frames, atomic JSON files),
// log.go (the CRI log writer).
package monitor
