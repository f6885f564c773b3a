// Package kubeletapi holds the pure parts of the kubelet's HTTPS API that
// both kubelets of rudder serve — the real one (internal/kubelet) and the
// simulated nodes (internal/simnode) — so that they answer the API server
// the same way:
//
//   - auth.go: who is calling (the verified client certificate) and
//     whether they may (a SubjectAccessReview on nodes/<subresource>, as
//     upstream's kubelet does in webhook mode), with a decision cache.
//   - logs.go: the query of /containerLogs (follow, tailLines,
//     sinceSeconds, sinceTime, limitBytes, timestamps) and the writer
//     that applies it in the kubelet's order: time filter, then
//     tailLines, then limitBytes over everything written.
//   - metrics.go: /metrics/resource in the Prometheus text format
//     metrics-server scrapes (node_*, container_*, pod_* series).
//
// The package talks to nothing but the API server (for reviews) and owns
// no goroutines; each server decides how it finds pods, containers and
// usage.
//
// Usage, in a handler:
//
//	u, ok := kubeletapi.Authenticate(w, r)
//	if !ok || !authz.Authorize(w, r, u, nodeName) {
//		return // the refusal is written
//	}
package kubeletapi
