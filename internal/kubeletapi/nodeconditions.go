package kubeletapi

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeCondition is one condition a kubelet reports on its Node, without
// the times SetNodeConditions keeps.
type NodeCondition struct {
	Type    corev1.NodeConditionType
	Status  corev1.ConditionStatus
	Reason  string
	Message string
}

// SetNodeConditions writes want into st as a kubelet posts them: every
// heartbeat time is now; a condition's transition time moves only when
// its status changes; conditions other writers own are kept.
func SetNodeConditions(st *corev1.NodeStatus, want []NodeCondition, now time.Time) {
	ts := metav1.NewTime(now)
	for _, w := range want {
		c := corev1.NodeCondition{Type: w.Type, Status: w.Status, Reason: w.Reason, Message: w.Message, LastHeartbeatTime: ts, LastTransitionTime: ts}
		found := false
		for i := range st.Conditions {
			if st.Conditions[i].Type != w.Type {
				continue
			}
			if st.Conditions[i].Status == w.Status {
				c.LastTransitionTime = st.Conditions[i].LastTransitionTime
			}
			st.Conditions[i], found = c, true
		}
		if !found {
			st.Conditions = append(st.Conditions, c)
		}
	}
}
