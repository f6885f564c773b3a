// Package deployment is the Deployment controller: it rolls a Deployment's
// pod template out through ReplicaSets, the way kube-controller-manager's
// deployment controller does, so kubectl rollout status/history/undo/
// pause/resume/restart behave as on Kubernetes.
//
// # The model
//
// A Deployment never touches pods. Each distinct pod template gets its own
// ReplicaSet, named "<deployment>-<pod-template-hash>", owned by the
// Deployment through a controller ownerReference, and told apart from its
// siblings by a pod-template-hash label added to its selector, its
// template and its own labels. The ReplicaSet whose template equals the
// Deployment's (ignoring that label) is the "new" one; every other owned
// ReplicaSet is "old". A rollout moves replicas from the old ReplicaSets
// to the new one; the ReplicaSet controller does the pods.
//
//	Deployment web (template v2, replicas 3, maxSurge 1, maxUnavailable 0)
//	 ├── web-7c9f8 (v1, revision 1)  3 → 2 → 1 → 0   scaled down as v2 becomes available
//	 └── web-5d8f  (v2, revision 2)  1 → 2 → 3       scaled up within replicas+maxSurge
//
// Every ReplicaSet carries annotations the controller reads back:
// deployment.kubernetes.io/revision (its place in the rollout history;
// a new ReplicaSet takes max+1, and a rollback to an old template bumps
// that ReplicaSet to max+1 and keeps its former numbers in
// revision-history), and desired-replicas / max-replicas (the
// Deployment's size and size+surge when the ReplicaSet was last scaled,
// which is how a change of spec.replicas mid-rollout is told apart from
// rollout progress and spread proportionally).
//
// # One sync
//
// Reconcile is level-based. It claims the ReplicaSets (adopting orphans
// the selector matches, releasing owned ones it no longer matches), then
// hands the Deployment and its ReplicaSets to Compute, the pure core,
// which returns a Plan: replica-set creates and updates in order, the
// old ReplicaSets to delete (revisionHistoryLimit), the new status and
// revision, events, and when to look again (progressDeadlineSeconds).
// Reconcile applies the plan and stops at the first failed write; the
// next sync starts over from what the informers then show. Names are
// deterministic and writes carry resourceVersions, so a restart at any
// point converges without extra ReplicaSets or over-scaling.
//
// Compute follows upstream's order of decisions:
//
//   - paused, or spec.replicas changed (a "scaling event"): only scale,
//     proportionally across the active ReplicaSets;
//   - Recreate: scale every old ReplicaSet to 0, wait until none of
//     their pods is running, then create and scale up the new one;
//   - RollingUpdate: scale the new ReplicaSet up while the total stays
//     within replicas+maxSurge, else scale old ones down (unhealthy
//     replicas first) while the available count stays at least
//     replicas-maxUnavailable;
//   - then status: counts summed from the ReplicaSets' status, the
//     Available condition, and the Progressing condition, which turns
//     ProgressDeadlineExceeded once no progress was seen for
//     progressDeadlineSeconds.
//
// Usage, through the controller manager:
//
//	runnables, err := deployment.Descriptor.New(ctx, cx)
package deployment
