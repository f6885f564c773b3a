// Package kubelet is rudder's node agent: it registers its Node, keeps
// the node's lease and status, runs the pods bound to the node as
// containers through any CRI runtime, reports their status, and serves
// the kubelet API (logs, exec, attach, port-forward, stats) that the API
// server reaches for kubectl.
//
// It talks to exactly two things: the API server (client-go, as
// system:node:<name>) and the container runtime (the CRI gRPC API on a
// unix socket — rudder's internal/runtime, or containerd, or CRI-O). It
// imports no other component.
//
// # Usage
//
//	k, err := kubelet.New(kubelet.Config{
//		NodeName:        "node-1",
//		Client:          nodeClient,                 // system:node:node-1
//		RuntimeEndpoint: "unix:///run/rudder/cri.sock",
//		KubeletPort:     kubelet.DefaultKubeletPort,
//		ServingCert:     cert, ClientCAs: clusterCAs,
//	})
//	go k.Run(ctx)   // until ctx ends; pods keep running after
//	<-k.Ready()     // registered, pods informer synced
//
// # The loops
//
//	node status   every 10 s: capacity, allocatable, conditions, images;
//	              posted when changed, or every 5 min (node.go)
//	lease         kube-node-lease/<node>, renewed every 10 s (node.go)
//	pod informer  pods with spec.nodeName=<node>: a change of spec or
//	              deletion wakes the pod's worker (kubelet.go)
//	relist        every 1 s, ListPodSandbox + ListContainers diffed against
//	              the last: a pod whose containers changed is woken; a pod
//	              the runtime has and the API does not is woken too, and
//	              its worker removes it (orphan GC) (worker.go)
//	pod workers   one goroutine per pod UID: syncs never overlap; wake-ups
//	              while syncing fold into one more sync; a back-off's end and
//	              a 1 min resync wake it as well (worker.go)
//	probe workers one goroutine per (container instance, probe type:
//	              liveness, readiness, startup), from when a sync sees the
//	              container running to when it does not; first probe after
//	              initialDelaySeconds from the container's start, then one
//	              per periodSeconds on the clock's ticker; a result that
//	              passes its threshold wakes the pod's worker (probe.go)
//
// # A sync
//
// Each sync of a pod is observe → plan → execute → observe → status:
//
//  1. observe (runtime.go) reads the pod's sandboxes and containers from
//     the runtime by the io.kubernetes.pod.uid label. Everything the
//     kubelet knows of a running pod is there — restart counts in the
//     io.kubernetes.container.restartCount annotation, the spec a
//     container was made from in io.kubernetes.container.hash — so a
//     restarted kubelet adopts what is running and starts nothing twice.
//  2. computePlan (plan.go) is a pure function of the pod, what was
//     observed, the back-offs and the time: the actions (create sandbox,
//     pull image, start container i, kill, remove, stop sandbox) and the
//     waiting reasons of what it will not start yet (CrashLoopBackOff,
//     ImagePullBackOff, ErrImageNeverPull, InvalidImageName). Restart
//     policies, init containers in order, native sidecars (plan_init.go:
//     init containers with restartPolicy Always, each started — startup
//     probe passed — before the next init container, kept running and
//     restarted whatever the pod's policy, stopped when the pod is done),
//     the crash-loop back-off (10 s doubling to 5 min, reset after 10 min
//     of quiet) and image pull policies all live there, tested as tables
//     with a fixed clock.
//  3. execute (executor.go) runs the actions through the CRI. Only here is
//     anything changed: the sandbox config (sandbox.go: hostname, DNS,
//     ports, the QoS cgroup parent kubepods[/burstable|/besteffort]/
//     pod<uid> — made with the pod's cpu.shares, CFS quota and memory
//     limit first when Config.CgroupsPerQOS (qos.go, v1 and v2) —,
//     namespaces), volumes (volumes.go: emptyDir, configMap,
//     secret, downwardAPI and projected token files written atomically
//     under RootDir/pods/<uid>/volumes), the environment (env.go: values,
//     fieldRefs, resourceFieldRefs, configMap and secret keys, envFrom,
//     service links, $(VAR) expansion) and the container config
//     (container.go: resources, OOM score, security context, log path
//     <container>/<restart>.log). A failed step shows as the container's
//     waiting reason: ErrImagePull, CreateContainerConfigError,
//     CreateContainerError, RunContainerError.
//  4. computeStatus (status.go), also pure, makes the pod status —
//     phase, conditions, container states with last states, restart
//     counts, IPs, readiness from the probes' current results
//     (probe.go: a readiness probe makes a container start not ready; a
//     startup probe holds readiness until it succeeds) — and the status writer (statuswriter.go) sends it to
//     the status subresource only when it differs from the API's.
//
// A pod with activeDeadlineSeconds is woken at startTime + the deadline;
// past it, it fails at once (Failed, reason DeadlineExceeded, "Pod was
// active on the node longer than the specified deadline", a
// DeadlineExceeded event) and its containers are stopped.
//
// Before its first start a pod is admitted (admit.go): it must fit beside
// the pods already admitted (pods capacity, cpu, memory,
// ephemeral-storage requests against allocatable), or it is rejected for
// good (Failed, OutOf<resource>). Each step is recorded as an event for
// kubectl describe (events.go: Pulling, Pulled, Created, Started,
// Killing, BackOff, Failed, FailedMount, Unhealthy).
//
// A liveness or startup probe that reaches its failureThreshold has the
// next sync kill the container first, within the probe's own
// terminationGracePeriodSeconds if set (Killing: "Container x failed
// liveness probe, will be restarted", also its terminated message); the
// restart policy and back-off then apply as to any exit. httpGet,
// tcpSocket and grpc (grpc.health.v1, probe_grpc.go) probes dial the
// pod's IP — the node's for a hostNetwork pod — (or the handler's host)
// and fail with "pod has no IP" without one.
//
// # Deletion
//
// Lifecycle hooks (hooks.go): postStart and preStop with exec, httpGet
// and sleep handlers. A failed postStart kills the container
// (FailedPostStartHook, PostStartHookError); a preStop runs before the
// stop signal and its time counts against the grace period; a failed
// one is a FailedPreStopHook event.
//
// A pod with a deletionTimestamp is only stopped: preStop hooks run
// and containers are stopped within what is left of the grace period (at
// least 2 s) — the main containers in parallel, then the sidecars in
// reverse order, each after those it outlives — then the sandbox. When nothing runs, the final
// status is written (terminal: Succeeded if every container exited 0,
// else Failed), the pod is deleted from the API with grace period 0 and
// a UID precondition — which is what ends a graceful deletion — and its
// containers, sandboxes and directories are removed. A pod deleted from
// the API while the kubelet was down is found by the relist and removed
// the same way, without API writes.
//
// # The kubelet API
//
// HTTPS on NodeIP:KubeletPort (server.go): a client certificate signed by
// ClientCAs is required and each request is authorized by a
// SubjectAccessReview on nodes/<subresource>, shared with the simulated
// nodes in internal/kubeletapi. /containerLogs reads the CRI log files
// (logs.go, crilog.go); /exec, /attach and /portForward get a streaming
// URL from the runtime and proxy the upgraded connection to it
// (streaming.go); /stats/summary and /metrics/resource come from the
// runtime's container stats and /proc (stats.go).
//
// # Not yet
//
// Eviction, persistent volumes, image garbage collection,
// admission beyond pods/cpu/memory/ephemeral-storage (admit.go), static
// pods, the kubepods cgroup's memory limit (node allocatable
// enforcement), QoS-level memory reservations (upstream's QOSReserved),
// oom_score_adj below what the host permits, in-place resize of pod
// cgroups.
//
// # Tests
//
// Most tests run the kubelet against a CRI runtime in memory
// (fakecri_test.go) and a real API server (e2e_env_test.go). Those named
// *RealNode (realnode_test.go) run it against rudder's own runtime —
// real runc containers from a busybox image built from /bin/busybox —
// and check what kubectl shows; they need root and runc and skip
// without them.
package kubelet
