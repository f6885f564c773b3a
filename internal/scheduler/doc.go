// Package scheduler assigns pending pods to nodes, as kube-scheduler does,
// talking to the cluster only through the API server.
//
// The pipeline, one pod at a time:
//
//	informers ──► Queue (active heap │ backoff │ unschedulable pool)
//	   │                 │ Pop
//	   ▼                 ▼
//	 Cache ──UpdateSnapshot──► Snapshot ──► Profile: PreFilter → Filter (parallel,
//	   ▲                                      stops after enough feasible nodes)
//	   │ AssumePod                            → PreScore → Score (parallel) → pick
//	   └──────────────────────────────────── Reserve → Permit
//	                                         │ go bindingCycle: PreBind → Bind → PostBind
//
// The Cache holds every node with the pods bound (or assumed) to it; a
// Snapshot copies only node infos changed since the last cycle. An
// assumed pod counts on its node at once, so the next cycle does not wait
// for the bind to reach etcd. When no node fits, the PostFilter plugins
// (preemption) may nominate a node, the pod gets a FailedScheduling event
// and a PodScheduled=False condition with upstream's message ("0/N nodes
// are available: ..."), and waits in the unschedulable pool until a
// cluster event that one of the rejecting plugins registered could make
// it fit.
//
// Profiles come from a KubeSchedulerConfiguration (k8s.io/kube-scheduler
// config/v1 types): each schedulerName gets its plugin set, weights and
// arguments. The plugins live in internal/scheduler/plugins; the shared
// types in internal/scheduler/framework.
//
// Usage:
//
//	s, err := scheduler.New(ctx, scheduler.Config{Client: client})
//	go s.Run(ctx)
package scheduler
