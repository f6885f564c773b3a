package server

import (
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/nodeidentity"
)

// clusterInfoPath is the one path anonymous requests may take even with
// anonymous authentication off: a joining node reads the published CA
// there before it trusts the server (nodeidentity's token discovery).
const clusterInfoPath = "/api/v1/namespaces/" + nodeidentity.ClusterInfoNamespace + "/configmaps/" + nodeidentity.ClusterInfoName

// clusterInfoObjects are kubeadm's discovery objects: the ConfigMap
// kube-public/cluster-info holding a kubeconfig that names the server
// and its CA (the bootstrapsigner controller adds a signature per
// bootstrap token), and the Role and RoleBinding that let
// system:anonymous read it and nothing else.
func clusterInfoObjects(server string, caPEM []byte) ([]runtime.Object, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[""] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	kubeconfig, err := clientcmd.Write(*cfg)
	if err != nil {
		return nil, err
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: nodeidentity.ClusterInfoName, Namespace: nodeidentity.ClusterInfoNamespace},
		Data:       map[string]string{nodeidentity.ClusterInfoKubeconfigKey: string(kubeconfig)},
	}
	cm.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	const name = "rudder:bootstrap-signer-clusterinfo"
	role := &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nodeidentity.ClusterInfoNamespace},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"},
			ResourceNames: []string{nodeidentity.ClusterInfoName}}},
	}
	role.SetGroupVersionKind(rbacGVK("Role"))
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nodeidentity.ClusterInfoNamespace},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: auth.Anonymous}},
	}
	binding.SetGroupVersionKind(rbacGVK("RoleBinding"))
	return []runtime.Object{cm, role, binding}, nil
}
