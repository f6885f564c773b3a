// Package server wires the control plane: certificates, etcd (embedded or
// external), the API server with its authentication, authorization and
// admission, and the HTTPS listener, started in readiness order.
//
// Start returns once the API answers, which is what `rudder server` runs
// and what tests and benchmarks use to get a real server in-process:
//
//	srv, err := server.Start(ctx, server.Config{DataDir: t.TempDir()})
//	defer srv.Stop()
//	cfg, _ := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
//
// Start-up order: data directory lock → certificates (pki) → etcd → API
// server watch caches synced → bootstrap objects (system namespaces, RBAC
// policy; existing bootstrap RBAC brought up to date unless annotated
// rbac.authorization.kubernetes.io/autoupdate: "false") → listener →
// ready → the Node authorizer's graph (reflectors over pods, claims and
// volume attachments) → scheduler, controllers. Shutdown runs the other
// way: the listener drains, watches end, then etcd closes its files and
// the lock is released.
//
// The lock is an flock on <data-dir>/rudder.lock, holding the PID of the
// server: a second server on the same directory fails at once naming
// it, instead of waiting forever on etcd's own database lock.
//
// Authentication takes client certificates, the token file, bootstrap
// tokens (kube-system/bootstrap-token-<id>, for joining nodes) and
// service-account tokens; authorization is Node,RBAC behind the
// system:masters short cut; NodeRestriction is on unless disabled.
//
// Two hooks let the API live in another network namespace too, as
// `rudder up --nodes` needs (internal/localcluster): Config.ExtraListener
// is a second listener, served like the first (a socket opened inside a
// namespace stays there), and Config.KubeletDial opens the connections
// to kubelets (logs, exec, attach, port-forward, node proxy, resource
// metrics) where the nodes' InternalIPs are reachable. When the extra
// listener is on the AdvertiseAddress, the kubernetes Service targets
// its port.
//
// Once serving, a level-based loop (systemobjects.go) keeps the system
// namespaces, the default/kubernetes Service and its Endpoints and
// EndpointSlice (naming Config.AdvertiseAddress) in place, as upstream's
// API server does: a deleted one is back within seconds. The same loop
// creates kube-system/kube-dns, the cluster DNS Service on the tenth
// service IP (10.96.0.10) with no selector — the agents list their DNS
// servers in its endpoints — and the RBAC that lets nodes run DNS
// (dnsobjects.go).
package server
