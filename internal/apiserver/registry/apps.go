package registry

import (
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func appsResources() []*Resource {
	return []*Resource{
		{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Singular: "deployment", Namespaced: true, ShortNames: []string{"deploy"}, Categories: []string{"all"}, HasStatus: true, HasGeneration: true,
			New:     func() runtime.Object { return &appsv1.Deployment{} },
			Default: defaultDeployment, PrepareForCreate: prepareDeploymentCreate, PrepareForUpdate: prepareDeploymentUpdate,
			Validate: validateDeployment, ValidateUpdate: validateDeploymentUpdate, ValidateStatusUpdate: validateDeploymentStatusUpdate,
			Table: deploymentTable, Scale: deploymentScale},
		{Group: "apps", Version: "v1", Resource: "replicasets", Kind: "ReplicaSet", Singular: "replicaset", Namespaced: true, ShortNames: []string{"rs"}, Categories: []string{"all"}, HasStatus: true, HasGeneration: true,
			New:     func() runtime.Object { return &appsv1.ReplicaSet{} },
			Default: defaultReplicaSet, PrepareForCreate: prepareReplicaSetCreate,
			Validate: validateReplicaSet, ValidateUpdate: validateReplicaSetUpdate, ValidateStatusUpdate: validateReplicaSetStatusUpdate,
			Fields: replicaSetFields, Table: replicaSetTable, Scale: replicaSetScale},
		{Group: "apps", Version: "v1", Resource: "statefulsets", Kind: "StatefulSet", Singular: "statefulset", Namespaced: true, ShortNames: []string{"sts"}, Categories: []string{"all"}, HasStatus: true, HasGeneration: true,
			New:     func() runtime.Object { return &appsv1.StatefulSet{} },
			Default: defaultStatefulSet, PrepareForCreate: prepareStatefulSetCreate, PrepareForUpdate: prepareStatefulSetUpdate,
			Validate: validateStatefulSet, ValidateUpdate: validateStatefulSetUpdate, ValidateStatusUpdate: validateStatefulSetStatusUpdate,
			Table: statefulSetTable, Scale: statefulSetScale},
		{Group: "apps", Version: "v1", Resource: "daemonsets", Kind: "DaemonSet", Singular: "daemonset", Namespaced: true, ShortNames: []string{"ds"}, Categories: []string{"all"}, HasStatus: true, HasGeneration: true,
			New:     func() runtime.Object { return &appsv1.DaemonSet{} },
			Default: defaultDaemonSet, PrepareForCreate: prepareDaemonSetCreate, PrepareForUpdate: prepareDaemonSetUpdate,
			Validate: validateDaemonSet, ValidateUpdate: validateDaemonSetUpdate, ValidateStatusUpdate: validateDaemonSetStatusUpdate,
			Table: daemonSetTable},
		{Group: "apps", Version: "v1", Resource: "controllerrevisions", Kind: "ControllerRevision", Singular: "controllerrevision", Namespaced: true,
			New:      func() runtime.Object { return &appsv1.ControllerRevision{} },
			Validate: validateControllerRevision, ValidateUpdate: validateControllerRevisionUpdate, Table: controllerRevisionTable},
	}
}
