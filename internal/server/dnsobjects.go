package server

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/rudder-dev/rudder/internal/auth"
)

// Cluster DNS, as the server prepares it. Pods reach DNS at the kube-dns
// Service's cluster IP (the tenth of the service network, 10.96.0.10, the
// kubelet's ClusterDNS), ports 53/UDP, 53/TCP and 9153 (metrics), as in a
// kubeadm cluster. The Service has no selector: the DNS servers are not
// pods but each agent's internal/dns, and each agent lists its own in an
// EndpointSlice kube-system/kube-dns-<node> (managed-by dns.rudder.dev),
// which the service proxy programs like any other.
//
// The agents act as their nodes (system:node:<name>), so the nodes group
// is granted what DNS needs: to read Services, EndpointSlices and
// Namespaces everywhere, and to write EndpointSlices in kube-system only.

const (
	kubeDNSService = "kube-dns"
	dnsReaderRole  = "system:rudder:dns"
	dnsWriterRole  = "system:rudder:dns-endpoints"
)

// kubeDNSServiceObject is kube-system/kube-dns on ip; nil without one.
func kubeDNSServiceObject(ip string) *corev1.Service {
	if ip == "" {
		return nil
	}
	port := func(name string, proto corev1.Protocol, n int32) corev1.ServicePort {
		return corev1.ServicePort{Name: name, Protocol: proto, Port: n, TargetPort: intstr.FromInt32(n)}
	}
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: kubeDNSService, Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{"k8s-app": "kube-dns", "kubernetes.io/name": "CoreDNS", "kubernetes.io/cluster-service": "true"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: ip,
			Ports: []corev1.ServicePort{port("dns", corev1.ProtocolUDP, 53), port("dns-tcp", corev1.ProtocolTCP, 53),
				port("metrics", corev1.ProtocolTCP, 9153)},
			SessionAffinity: corev1.ServiceAffinityNone,
		},
	}
}

// reconcileDNSService creates kube-dns when it is missing. An IP already
// taken (a user's service got it first) is warned about once: DNS then
// has no Service until that one goes.
func (o *systemObjects) reconcileDNSService(ctx context.Context) {
	if o.dnsService == nil {
		return
	}
	services := o.client.CoreV1().Services(metav1.NamespaceSystem)
	if _, err := services.Get(ctx, kubeDNSService, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		return
	}
	_, err := services.Create(ctx, o.dnsService.DeepCopy(), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) && !o.dnsWarned {
		o.dnsWarned = true
		slog.Warn("system objects: cannot create the kube-dns service", "clusterIP", o.dnsService.Spec.ClusterIP, "err", err)
	}
}

// dnsRBACObjects let nodes run DNS: read everywhere, write EndpointSlices
// in kube-system.
func dnsRBACObjects() []runtime.Object {
	meta := func(name, ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{auth.BootstrappingLabel: auth.BootstrappingLabelValue},
			Annotations: map[string]string{auth.AutoUpdateAnnotation: "true"}}
	}
	nodes := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:nodes"}}
	reader := &rbacv1.ClusterRole{ObjectMeta: meta(dnsReaderRole, ""), Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"services", "namespaces"}},
		{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}},
	}}
	reader.SetGroupVersionKind(rbacGVK("ClusterRole"))
	readerBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: meta(dnsReaderRole, ""),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: dnsReaderRole}, Subjects: nodes}
	readerBinding.SetGroupVersionKind(rbacGVK("ClusterRoleBinding"))
	writer := &rbacv1.Role{ObjectMeta: meta(dnsWriterRole, metav1.NamespaceSystem), Rules: []rbacv1.PolicyRule{
		{Verbs: []string{"get", "create", "update", "delete"}, APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"}},
	}}
	writer.SetGroupVersionKind(rbacGVK("Role"))
	writerBinding := &rbacv1.RoleBinding{ObjectMeta: meta(dnsWriterRole, metav1.NamespaceSystem),
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: dnsWriterRole}, Subjects: nodes}
	writerBinding.SetGroupVersionKind(rbacGVK("RoleBinding"))
	return []runtime.Object{reader, readerBinding, writer, writerBinding}
}
