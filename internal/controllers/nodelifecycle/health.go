package nodelifecycle

import (
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nodeHealth is what the monitor remembers of one node between passes.
// Times in it are the controller's own clock, never the kubelet's: a
// heartbeat counts when it is seen to change, not by what it says.
type nodeHealth struct {
	// probe is when the node was last heard from: a lease renewTime or
	// Ready heartbeat seen to change.
	probe time.Time
	// ready is the Ready condition as last observed (nil: none).
	ready *corev1.NodeCondition
	// renew is the lease's renewTime as last observed (zero: none).
	renew time.Time
}

// observeHealth folds one look at node and its lease (nil if it has
// none) into h, what was known before (nil at first sight), at now.
//
// At first sight the node is given the benefit of the doubt: probe is
// now (the controller may just have started), except for a node that
// never posted a Ready condition, whose clock runs from its creation.
func observeHealth(h *nodeHealth, node *corev1.Node, lease *coordinationv1.Lease, now time.Time) nodeHealth {
	ready := findNodeCondition(node.Status.Conditions, corev1.NodeReady)
	var out nodeHealth
	if h != nil {
		out = *h
	}
	switch {
	case h == nil && ready == nil:
		out.probe = node.CreationTimestamp.Time
	case h == nil:
		out.probe = now
	case (h.ready == nil) != (ready == nil):
		// A Ready condition appeared (or, oddly, vanished): start over.
		out.probe = now
	case ready != nil && !ready.LastHeartbeatTime.Equal(&h.ready.LastHeartbeatTime):
		out.probe = now
	}
	out.ready = nil
	if ready != nil {
		c := *ready
		out.ready = &c
	}
	if lease != nil && lease.Spec.RenewTime != nil {
		if rt := lease.Spec.RenewTime.Time; out.renew.IsZero() || out.renew.Before(rt) {
			out.renew = rt
			out.probe = now
		}
	}
	return out
}

// stale reports whether the node has not been heard from for longer
// than its grace period at now: grace once it has a Ready condition,
// startupGrace before.
func (h *nodeHealth) stale(now time.Time, grace, startupGrace time.Duration) bool {
	g := grace
	if h.ready == nil {
		g = startupGrace
	}
	return now.After(h.probe.Add(g))
}

// kubeletConditions are the conditions only a live kubelet can vouch
// for. NetworkUnavailable is not among them: the network plugin owns it.
var kubeletConditions = []corev1.NodeConditionType{
	corev1.NodeReady,
	corev1.NodeMemoryPressure,
	corev1.NodeDiskPressure,
	corev1.NodePIDPressure,
}

// Reasons and messages of conditions the controller writes, as upstream.
const (
	reasonStatusUnknown      = "NodeStatusUnknown"
	messageStatusUnknown     = "Kubelet stopped posting node status."
	reasonStatusNeverUpdated = "NodeStatusNeverUpdated"
	messageNeverUpdated      = "Kubelet never posted node status."
)

// markUnknown returns node's conditions with every kubelet condition
// Unknown as of now, and whether that changed anything. A condition
// already Unknown keeps its reason and transition time; one the kubelet
// never posted is added with its heartbeat at the node's creation.
func markUnknown(node *corev1.Node, now time.Time) ([]corev1.NodeCondition, bool) {
	conds := make([]corev1.NodeCondition, len(node.Status.Conditions))
	copy(conds, node.Status.Conditions)
	ts := metav1.NewTime(now)
	changed := false
	for _, typ := range kubeletConditions {
		c := findNodeCondition(conds, typ)
		switch {
		case c == nil:
			conds = append(conds, corev1.NodeCondition{
				Type: typ, Status: corev1.ConditionUnknown,
				Reason: reasonStatusNeverUpdated, Message: messageNeverUpdated,
				LastHeartbeatTime: node.CreationTimestamp, LastTransitionTime: ts,
			})
			changed = true
		case c.Status != corev1.ConditionUnknown:
			c.Status = corev1.ConditionUnknown
			c.Reason = reasonStatusUnknown
			c.Message = messageStatusUnknown
			c.LastTransitionTime = ts
			changed = true
		}
	}
	return conds, changed
}

// findNodeCondition returns a pointer into conds, or nil.
func findNodeCondition(conds []corev1.NodeCondition, typ corev1.NodeConditionType) *corev1.NodeCondition {
	for i := range conds {
		if conds[i].Type == typ {
			return &conds[i]
		}
	}
	return nil
}

// readyStatus is the status of node's Ready condition, "" without one.
func readyStatus(node *corev1.Node) corev1.ConditionStatus {
	if c := findNodeCondition(node.Status.Conditions, corev1.NodeReady); c != nil {
		return c.Status
	}
	return ""
}

// labelExcludeDisruption keeps a node out of its zone's health count.
const labelExcludeDisruption = "node.kubernetes.io/exclude-disruption"

// zoneKey names node's failure zone as upstream does (region and zone
// joined by ":\x00:"), so per-zone metrics line up; "" without labels.
func zoneKey(node *corev1.Node) string {
	zone := node.Labels[corev1.LabelTopologyZone]
	if zone == "" {
		zone = node.Labels[corev1.LabelFailureDomainBetaZone]
	}
	region := node.Labels[corev1.LabelTopologyRegion]
	if region == "" {
		region = node.Labels[corev1.LabelFailureDomainBetaRegion]
	}
	if zone == "" && region == "" {
		return ""
	}
	return region + ":\x00:" + zone
}
