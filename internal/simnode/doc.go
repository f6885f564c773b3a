// Package simnode runs simulated nodes: thousands of kubelets without
// containers in one process. Each registers a Node, renews its Lease,
// posts status and moves the pods bound to it through their phases, all
// by list+watch and writes against the API server and nothing else — so
// a fleet works against rudder or any other Kubernetes API server. It is
// how the scheduler and controllers are tested and measured at scale on
// one machine (as kwok and kubemark do upstream).
//
// # Usage
//
//	fleet, err := simnode.New(simnode.Config{
//		Client: client, // a kubernetes.Interface: protobuf, no client-side rate limit
//		Count:  500,
//		Prefix: "sim-",
//		Zones:  3,
//	})
//	if err != nil { ... }
//	if err := fleet.Start(ctx); err != nil { ... }
//	<-fleet.Ready() // every Node and Lease written, watches synced
//	...
//	fleet.Stop()
//
// Run(ctx, cfg) does the same until ctx ends. From the command line:
//
//	rudder server --data-dir /tmp/r --simulated-nodes 1000   # in-process, over the API listener
//	rudder simnodes --kubeconfig K --count 500 --zones 3     # against any cluster
//
// # Nodes
//
// Node i is named Prefix+i (sim-0, sim-1, ...) and registers as a kubelet
// does: it creates its Node with the status filled in, or, when the Node
// exists (a fleet restarted), adopts it — labels reconciled, podCIDR kept.
//
//   - labels: kubernetes.io/hostname, kubernetes.io/os=linux,
//     kubernetes.io/arch=amd64, node.kubernetes.io/instance-type,
//     topology.kubernetes.io/region and topology.kubernetes.io/zone
//     (zone-0..zone-(Zones-1), round-robin), plus
//     simnode.rudder.dev/simulated=true (LabelSimulated), which the fleet
//     watches by and workloads can select or tolerate on;
//   - spec: podCIDR, the i-th /24 of 10.128.0.0/9; Config.Taints;
//   - status: capacity and allocatable (cpu 32, memory 256Gi, pods 110,
//     ephemeral-storage 100Gi and any extended resources; an extended
//     resource someone else patched into capacity is kept, and made
//     allocatable, as a kubelet keeps it), conditions
//     MemoryPressure/DiskPressure/PIDPressure False and Ready True
//     (KubeletReady), nodeInfo (kubeletVersion v1.36.3-simnode, machine,
//     system and boot IDs), an InternalIP from 198.18.0.0/15 (127.1.0.0/16
//     when serving the kubelet API) and the Hostname, daemonEndpoints
//     (kubelet port 0 unless serving the kubelet API), images.
//
// Addresses are strings in the API, never routed: the node IPs come from
// the benchmarking range of RFC 2544, and pod IPs from each node's podCIDR
// (network, .1 and broadcast skipped, round-robin, freed when the pod ends).
// Port 0 tells the API server there is no kubelet to dial.
//
// A node keeps the kubelet's cadence with leases: it renews its Lease in
// kube-node-lease (holder = node name, 40 s duration, owned by the Node)
// every 10 s plus 0-4% jitter; it compares its status with the API's every
// 10 s and posts it only when something other than heartbeats differs (a
// controller marked it Unknown, say) or 5 min have passed. The first
// renewal of each node falls at a random point of the period, and each
// later one is due a period after the last was due (not after it ran), so
// N nodes renew at an even N/10 per second, not in bursts, even after a
// moment's backlog.
//
// # Pods
//
// One watch serves the whole fleet: pods with spec.nodeName set, picked
// out by node name (there is never a watch per node). For a pod on one of
// its nodes, the node:
//
//   - after PodStartDelay (1 s) writes it Running: hostIP(s), podIP(s),
//     startTime, conditions PodReadyToStartContainers, Initialized, Ready
//     (unless a readiness gate holds it back), ContainersReady and
//     PodScheduled True; every container running, started and ready with
//     a simnode:// containerID and an imageID; init containers terminated
//     Completed, sidecars running. hostNetwork pods get the node's IP;
//   - for the pods of a Job (restartPolicy Never/OnFailure), or pods
//     annotated simnode.rudder.dev/run-duration or exit-code, after
//     JobDuration (5 s) or the run-duration annotation, ends the
//     containers with exit code 0 (Succeeded, reason Completed) or the
//     simnode.rudder.dev/exit-code annotation's (Failed, reason Error; with
//     OnFailure the containers instead crash-loop — CrashLoopBackOff, then
//     a restart with restartCount+1, back-off 10 s doubling to 5 min);
//     Any other pod runs until deleted, whatever its restartPolicy;
//   - for a pod whose image cannot exist (its reference contains
//     "invalid", "nonexistent", "non-existent" or "doesnotexist") or
//     annotated simnode.rudder.dev/image-pull-error, writes the container
//     waiting in ErrImagePull, then ImagePullBackOff, the pod Pending;
//   - writes the status again whenever the API's copy differs from what
//     it runs, as the kubelet's status manager does: a pod another writer
//     marked not Ready (the node lifecycle controller, while the node was
//     lost) is Ready again once the node is back, a spec change is
//     reported in status.observedGeneration, a changed image restarts the
//     container with it. To make a pod unready, as a failing readiness
//     probe would, annotate it simnode.rudder.dev/ready=false;
//   - fails a pod past spec.activeDeadlineSeconds (DeadlineExceeded);
//   - when the pod is deleted gracefully, waits PodStopDelay (500 ms, never
//     more than the grace period) and confirms with a zero-grace DELETE
//     carrying the pod's UID as a precondition — and again once the
//     finalizers that held it are removed.
//
// Each step is one status write, planned by a pure function (planPod)
// from the pod, the node's memory of it and the clock. The write's own
// watch event brings the pod back for its next step; a conflicting write
// is retried with per-pod back-off; a pod that disappears is forgotten.
//
// # The kubelet API: kubectl top and kubectl logs
//
// With Config.KubeletAPI set (rudder server --simulated-nodes does it;
// rudder simnodes --kubelet-api --kubelet-ca-dir DIR) every node serves a
// little of the kubelet's HTTPS API, and the API server reaches it as it
// reaches a kubelet, for kubectl top (its own metrics.k8s.io) and kubectl
// logs. So that nothing ever dials out for a simulated node, node i then
// has the loopback InternalIP 127.1.0.0+i+1 (127.1.0.1, 127.1.0.2, ...)
// and the fleet listens on that address at one port (Config.KubeletAPI.Port,
// or one free on all the addresses): one socket per node, one
// http.Server for all, which tells the node by the address a connection
// came in on. Clients need a certificate of the cluster CA, and are
// authorized as a kubelet in webhook mode authorizes them: a
// SubjectAccessReview on nodes/<subresource> (metrics, log, stats, proxy;
// pods, healthz, configz then proxy), decisions cached 5 min (allowed)
// and 30 s (denied); others get 403 "Forbidden (user=..., verb=...,
// resource=nodes, subresource(s)=[...])". It serves:
//
//   - /healthz: ok;
//   - /metrics/resource: what metrics-server scrapes, in the Prometheus
//     text format with timestamps: container_cpu_usage_seconds_total,
//     container_memory_working_set_bytes and container_start_time_seconds
//     per running container, pod_* sums, node_cpu_usage_seconds_total and
//     node_memory_working_set_bytes;
//   - /containerLogs/{namespace}/{pod}/{container}: three synthesized
//     lines (tailLines, limitBytes, sinceSeconds, sinceTime and
//     timestamps honoured); with follow=true one more line a second until
//     the client leaves or the container stops; with previous=true the
//     log of the run before a restart, or the kubelet's 400 "previous
//     terminated container ... not found" when there was none.
//
// Usage: a pod annotated simnode.rudder.dev/cpu-usage and/or
// simnode.rudder.dev/memory-usage (quantities: "250m", "300Mi") uses that,
// shared evenly by its running containers. Otherwise each running
// container uses a fixed fraction of its requests, 25-75% picked by a hash
// of the pod's UID and the container's name (so pods differ but each
// reports the same every time); without a request, 1m CPU and 4Mi. A
// node uses the sum of its pods plus 100m CPU and 512Mi for the system.
// CPU counters grow at the rate in force since the last scrape, so a
// changed annotation shows from the next scrape on and counters never go
// back. A stopped node answers 503, so its metrics are missing, as a dead
// machine's would be. Exec, attach and port-forward are answered 400,
// "runs no containers".
//
// # Stopping a node
//
// Annotate a Node simnode.rudder.dev/stopped=true and that node stops, as
// if its machine died: no lease renewals, no status posts, its pods left
// as they are (deletions unconfirmed). Remove the annotation and it starts
// again: it renews its lease and posts its status at once, and takes up
// its pods. The fleet follows the annotation with one watch on its nodes.
//
//	kubectl annotate node sim-3 simnode.rudder.dev/stopped=true
//	kubectl annotate node sim-3 simnode.rudder.dev/stopped-
//
// Marking a stopped node NotReady (Unknown) once its lease expires, and
// evicting its pods, is the node lifecycle controller's job, not the
// node's; until that controller exists a stopped node's Ready condition
// stays as last posted, and only its lease shows it is gone. A Node that
// is deleted is not registered again until the fleet restarts, as with a
// kubelet.
//
// # How it scales
//
// A node costs no goroutine. Two work queues (client-go's delaying
// queues: one timer heap and goroutine each) drive everything: one for
// node work (registration, lease renewals, status checks) and one for
// pods, each drained by a fixed pool of workers (NodeWorkers 8, PodWorkers
// one per 16 nodes, 16 to 64), so a burst of pods never delays a lease
// renewal. The fleet's
// informers drop managedFields. A node's own state is a few hundred bytes,
// plus its Node (in the fleet's informer) and its last Lease.
//
// Measured on a 2-core machine with 1,000 nodes at the default cadence:
// registered in about 1.2 s; 50 goroutines in all (0.05 per node); about
// 100 renewals/s, the busiest 100 ms 1.8× the mean (what a uniform spread
// gives); `rudder simnodes` alone about 10 KiB RSS per node and 8% of a
// core; fleet and in-process server together about 36-55 KiB RSS and 30
// KiB Go heap per node. Reproduce with
//
//	go test -run '^$' -bench BenchmarkFleet -benchtime 1x ./internal/simnode
//
// Serving the kubelet API costs a listening socket and an accept
// goroutine per node, about 10 KiB RSS: rudder server --simulated-nodes
// idle at 270 MiB without it and 280 MiB with it for 1,000 nodes, 839
// and 884 MiB for 5,000.
//
// Not simulated yet: a terminal status
// written before a deleted pod is confirmed (the kubelet sets Failed or
// Succeeded first; here the pod goes straight away), probes, volumes and
// events.
package simnode
