// Package plugins implements the scheduler's plugins, one file per plugin,
// each with upstream kube-scheduler's semantics: what it filters, how it
// scores, which cluster events can make a pod it rejected fit again, and
// the reason strings users see in FailedScheduling events.
//
// Every plugin has a Factory (see registry.go) taking its typed arguments
// from k8s.io/kube-scheduler/config/v1, already defaulted. Plugins keep
// per-pod data in the CycleState during PreFilter/PreScore and only read
// it in Filter/Score, which run in parallel across nodes.
package plugins
