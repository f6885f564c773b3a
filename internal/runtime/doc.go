// Package runtime is rudder's container runtime: a CRI v1 server
// (RuntimeService and ImageService) on a unix socket, which the kubelet,
// crictl and critest talk to. Images come from the image store
// (runtime/image); containers are run by runc; exec, attach and
// port-forward streams are served by runtime/streaming.
//
// # Usage
//
//	store, _ := image.Open(image.Config{Root: "/var/lib/rudder/agent/images"})
//	rt, err := runtime.New(runtime.Config{
//		Root:   "/var/lib/rudder/agent/runtime",
//		RunDir: "/run/rudder/runtime",
//		Images: store,
//	})
//	ss, _ := streaming.New(streaming.Config{Addr: "127.0.0.1:0", Runtime: rt.StreamRuntime()})
//	ss.Start(ctx)
//	rt.SetStreaming(ss)
//	err = rt.Serve(ctx, "/run/rudder/cri.sock")
//
// Each container's monitor is the embedding binary re-executed as
// `<binary> runtime-shim CONFIG` (ShimSubcommand). The runtime/monitor
// package, which this package imports, takes over such a process from
// its init, before the binary's other initialisers and main: nothing
// needs to dispatch the subcommand (see "Monitor").
//
// # Sandboxes without a pause process
//
// A pod sandbox is a set of namespaces, not a process. RunPodSandbox
// creates the network, IPC and UTS namespaces on a locked OS thread
// (unshare), sets the pod's hostname, brings loopback up, and pins each
// namespace by bind-mounting /proc/thread-self/ns/<kind> onto a file in
// RunDir/sandboxes/<id>/. The thread is never unlocked: Go kills it when
// its goroutine ends (the main thread, which Go parks instead, is never
// used). Containers join the namespaces by path. Host network / IPC
// (NamespaceMode NODE) skip the namespace. The sandbox directory also
// holds the pod's hostname, hosts and resolv.conf (from the CRI DNS
// config, or the host's) and a tmpfs shared by the containers as
// /dev/shm. A pod-wide pid namespace (NamespaceMode POD) has no holder,
// so a container joins the pid namespace of the pod's oldest running
// container, or gets its own if none runs. Config.Network, when set,
// gives the sandbox its IPs; without it a pod has loopback only, and
// PodSandboxStatus reports the global addresses it finds in the pod's
// namespace (none, unless someone else configured them).
//
// # Containers
//
// CreateContainer mounts a rootfs from the image store at
// RunDir/containers/<id>/rootfs, renders the OCI config.json (spec.go:
// command/args merged with the image's Entrypoint/Cmd as Kubernetes does,
// env, user and groups resolved in the rootfs's /etc/passwd and
// /etc/group, Docker's default capabilities plus adds minus drops clipped
// to the host's bounding set, seccomp, masked and read-only paths, mounts,
// devices, resources with oom_score_adj never below the host's own) and
// starts the container's monitor, which runs `runc create`: the
// container's init then waits in runc's exec fifo until StartContainer
// runs `runc start`. So a bad entrypoint fails CreateContainer, with
// runc's reason, and the failed create removes everything it made.
//
// Cgroups use the cgroupfs driver, v1 (or hybrid) and v2 alike: a
// container's cgroupsPath is <pod cgroup>/<container id>; the pod cgroup
// is the kubelet's LinuxPodSandboxConfig.CgroupParent or
// Config.CgroupParent/pod-<id>. Relative paths are resolved as runc does
// (from the runtime's own cgroup in v1, from its parent in v2); absolute
// ones from each hierarchy's root.
//
// # Monitor
//
// Each container has a monitor process ("shim", package runtime/monitor):
// the runtime's own binary re-executed as `runtime-shim CONFIG` in its
// own session, with GOGC=25 and GOMAXPROCS=1. It becomes a child
// subreaper, runs `runc create` with stdio it owns (pipes, or a pty
// received on runc's console socket), writes the output to the CRI log ("<RFC3339Nano> stdout F
// text", P for pieces of lines over 16 KiB, rotated by size), reaps the
// container's init when it exits, writes exit.json (code, time, OOM kill
// from the memory cgroup's oom_kill counter) atomically into the
// container's state directory, and exits. Its socket serves attach
// (frames: stdin, stdout, stderr, resize, exit), wait, resize and log
// reopen. Because the monitor, not the runtime, is the container's
// parent, containers outlive a restart of the runtime, and exit codes
// are never lost. The monitor is a package of its own, importing almost
// nothing, so that it runs before the binary's heavy package
// initialisers: 1.6 MiB of private memory per container instead of 8.4
// (monitor/doc.go explains how). shimclient.go is its runtime side.
//
// # State and re-adoption
//
// Every sandbox and container has Root/{sandboxes,containers}/<id>/
// state.json, written atomically on each change. New loads them all: a
// created or running container whose exit.json exists is Exited with its
// code; one whose monitor is alive (pid and start time match) is adopted
// as it was; otherwise runc's state decides (still running: kept,
// unmonitored; gone: Exited, reason Unknown).
//
// # Removal
//
// RemoveContainer kills if needed, runs `runc delete --force`, unmounts
// the rootfs (removing its upper directory), and removes the cgroup,
// bundle and state directories. RemovePodSandbox does that for each
// container, then tears down the network, unmounts and deletes the
// namespace files and /dev/shm, and removes the pod cgroup and the
// sandbox's directories: nothing stays on the host.
//
// # Costs (measured on 2 shared cores, BenchmarkRunPod, TestMonitorRSS)
//
// RunPodSandbox + CreateContainer + StartContainer of busybox takes about
// 150-250 ms, most of it in `runc create` (~90 ms unloaded). Each
// monitor holds 3.3 MiB of private memory (RssAnon) when the binary is
// as small as the package's test binary (VmRSS 20 MiB, the rest shared
// file pages); re-executing the whole rudder binary (135 MiB) costs 8 MiB
// private, ~60 MiB VmRSS of which ~52 MiB are file pages shared by all
// monitors, and ~150 ms of start-up (its package initialisers) per
// container.
//
// # Compatibility
//
// TestCrictl (RUDDER_CRICTL=path) drives upstream crictl v1.34 through
// version, info, images, runp, create, start, ps, exec (-s and streamed),
// logs, inspect, stats, stop, rm, stopp, rmp. TestCritest
// (RUDDER_CRITEST=path) runs upstream critest v1.34 against images on a
// loopback registry; the specs that need public images, a pod network or
// applets Debian's busybox lacks are skipped (critestSkips says why).
//
// # Files
//
// runtime.go (Config, New, Serve, errors), sandbox.go, container.go,
// spec.go (OCI config), seccomp.go, user.go, namespaces.go, image.go
// (ImageService), status.go, stats.go (cgroup v1/v2 stats), exec.go
// (ExecSync, stream URLs, streaming.Runtime), shimclient.go (starting
// and calling the monitor), runc.go, host.go (capabilities, oom floor,
// cgroup hierarchies), state.go.
package runtime
