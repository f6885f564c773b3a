package registry

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// componentStatusesResource is core v1 componentstatuses (`kubectl get
// cs`): deprecated since 1.19 but still served, read-only, computed by the
// API server from the health checks of the scheduler, the controller
// manager and etcd on each read.
func componentStatusesResource() *Resource {
	return &Resource{Version: "v1", Resource: "componentstatuses", Kind: "ComponentStatus", Singular: "componentstatus",
		ShortNames: []string{"cs"}, Verbs: []string{"get", "list"}, Virtual: true, Computed: true,
		New:   func() runtime.Object { return &corev1.ComponentStatus{} },
		Table: componentStatusTable}
}

// componentStatusTable: STATUS is Healthy, Unhealthy or Unknown from the
// Healthy condition, as upstream prints it.
var componentStatusTable = &Table{
	Columns: []metav1.TableColumnDefinition{
		nameColumn,
		{Name: "Status", Type: "string", Description: "Status of the component conditions"},
		{Name: "Message", Type: "string", Description: "Message of the component conditions"},
		{Name: "Error", Type: "string", Description: "Error of the component conditions"},
	},
	Row: func(obj runtime.Object) []interface{} {
		cs := obj.(*corev1.ComponentStatus)
		status, message, errText := "Unknown", "", ""
		for _, c := range cs.Conditions {
			if c.Type != corev1.ComponentHealthy {
				continue
			}
			switch c.Status {
			case corev1.ConditionTrue:
				status = "Healthy"
			case corev1.ConditionFalse:
				status = "Unhealthy"
			}
			message, errText = c.Message, c.Error
			break
		}
		return []interface{}{cs.Name, status, message, errText}
	},
}
