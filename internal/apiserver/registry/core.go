package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func coreResources() []*Resource {
	return []*Resource{
		{Version: "v1", Resource: "namespaces", Kind: "Namespace", Singular: "namespace", ShortNames: []string{"ns"}, HasStatus: true,
			New:     func() runtime.Object { return &corev1.Namespace{} },
			Default: defaultNamespace, PrepareForCreate: prepareCreateNamespace, PrepareForUpdate: prepareUpdateNamespace,
			Validate: validateNamespace, ValidateUpdate: validateNamespaceUpdate, ValidateStatusUpdate: validateNamespaceStatusUpdate,
			Fields: namespaceFields, Table: namespaceTable},
		{Version: "v1", Resource: "pods", Kind: "Pod", Singular: "pod", Namespaced: true, ShortNames: []string{"po"}, Categories: []string{"all"}, HasStatus: true, HasGeneration: true,
			New:     func() runtime.Object { return &corev1.Pod{} },
			Default: defaultPod, PrepareForCreate: prepareCreatePod,
			Validate: validatePod, ValidateUpdate: validatePodUpdate, ValidateStatusUpdate: validatePodStatusUpdate,
			Fields: podFields, Table: podTable},
		{Version: "v1", Resource: "nodes", Kind: "Node", Singular: "node", ShortNames: []string{"no"}, HasStatus: true,
			New:      func() runtime.Object { return &corev1.Node{} },
			Default:  defaultNode,
			Validate: validateNode, ValidateUpdate: validateNodeUpdate, ValidateStatusUpdate: validateNodeUpdate,
			Fields: nodeFields, Table: nodeTable},
		{Version: "v1", Resource: "services", Kind: "Service", Singular: "service", Namespaced: true, ShortNames: []string{"svc"}, Categories: []string{"all"}, HasStatus: true,
			New:     func() runtime.Object { return &corev1.Service{} },
			Default: defaultService, PrepareForCreate: prepareCreateService, PrepareForUpdate: prepareUpdateService,
			Validate: validateService, ValidateUpdate: validateServiceUpdate, ValidateStatusUpdate: validateServiceStatusUpdate,
			Fields: serviceFields, Table: serviceTable},
		{Version: "v1", Resource: "endpoints", Kind: "Endpoints", Singular: "endpoints", Namespaced: true, ShortNames: []string{"ep"},
			New:     func() runtime.Object { return &corev1.Endpoints{} },
			Default: defaultEndpoints, Validate: validateEndpoints, Table: endpointsTable},
		{Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Singular: "configmap", Namespaced: true, ShortNames: []string{"cm"},
			New:      func() runtime.Object { return &corev1.ConfigMap{} },
			Validate: validateConfigMap, ValidateUpdate: validateConfigMapUpdate, Table: configMapTable},
		{Version: "v1", Resource: "secrets", Kind: "Secret", Singular: "secret", Namespaced: true,
			New:     func() runtime.Object { return &corev1.Secret{} },
			Default: defaultSecret, Validate: validateSecret, ValidateUpdate: validateSecretUpdate,
			Fields: secretFields, Table: secretTable},
		{Version: "v1", Resource: "serviceaccounts", Kind: "ServiceAccount", Singular: "serviceaccount", Namespaced: true, ShortNames: []string{"sa"},
			New:      func() runtime.Object { return &corev1.ServiceAccount{} },
			Validate: validateServiceAccount, ValidateUpdate: validateServiceAccountUpdate, Table: serviceAccountTable},
		{Version: "v1", Resource: "events", Kind: "Event", Singular: "event", Namespaced: true, ShortNames: []string{"ev"},
			New:      func() runtime.Object { return &corev1.Event{} },
			Validate: validateCoreEvent, ValidateUpdate: validateCoreEventUpdate, Fields: coreEventFields, Table: coreEventTable},
	}
}
