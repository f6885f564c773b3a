package admission_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/server"
)

// pluginsClientAs returns a client that authenticates as user in groups
// with a client certificate from the cluster's CA, as a kubelet or a
// person with an issued certificate would.
func pluginsClientAs(t *testing.T, srv *server.Server, user string, groups ...string) kubernetes.Interface {
	t.Helper()
	certPEM, keyPEM, err := srv.PKI.IssueClientCert(user, groups, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	rc.CertFile, rc.KeyFile = "", ""
	rc.CertData, rc.KeyData = certPEM, keyPEM
	return kubernetes.NewForConfigOrDie(rc)
}

// pluginsGrant binds a new cluster role with rules to a user or group.
func pluginsGrant(t *testing.T, cs kubernetes.Interface, name string, subject rbacv1.Subject, rules ...rbacv1.PolicyRule) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if subject.Kind != rbacv1.ServiceAccountKind {
		subject.APIGroup = rbacv1.GroupName
	}
	crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, Subjects: []rbacv1.Subject{subject},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// pluginsWantForbidden fails unless err is a 403 with exactly msg.
func pluginsWantForbidden(t *testing.T, err error, msg string) {
	t.Helper()
	if !apierrors.IsForbidden(err) || err.Error() != msg {
		t.Fatalf("got %v\nwant 403 %q", err, msg)
	}
}

func pluginsCSRPEM(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// TestDefaultPluginsThroughTheAPI shows the storage, runtime, ingress and
// certificate plugins of the default set at work on a cluster started the
// way every test cluster is.
func TestDefaultPluginsThroughTheAPI(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	cs := c.Client
	ctx := context.Background()

	t.Run("DefaultStorageClass and PersistentVolumeClaimResize", func(t *testing.T) {
		for _, sc := range []*storagev1.StorageClass{
			{ObjectMeta: metav1.ObjectMeta{Name: "standard", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
				Provisioner: "example.com/disk", AllowVolumeExpansion: ptr.To(true)},
			{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}, Provisioner: "example.com/disk"},
		} {
			if _, err := cs.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		claim := func(name string, class *string) *corev1.PersistentVolumeClaim {
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
			out, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, pvc, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		grow := func(pvc *corev1.PersistentVolumeClaim) error {
			// No volume controller runs: the test binds the claim itself.
			pvc.Status.Phase = corev1.ClaimBound
			pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
			pvc, err := cs.CoreV1().PersistentVolumeClaims("default").UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
			_, err = cs.CoreV1().PersistentVolumeClaims("default").Update(ctx, pvc, metav1.UpdateOptions{})
			return err
		}

		data := claim("data", nil)
		if got := ptr.Deref(data.Spec.StorageClassName, "<nil>"); got != "standard" {
			t.Fatalf("storageClassName %s, want the default class", got)
		}
		if len(data.Finalizers) != 0 {
			t.Errorf("finalizers %v: StorageObjectInUseProtection must stay off without its controllers", data.Finalizers)
		}
		if none := claim("static", ptr.To("")); *none.Spec.StorageClassName != "" {
			t.Errorf("an explicit empty class became %q", *none.Spec.StorageClassName)
		}
		if err := grow(data); err != nil {
			t.Fatalf("growing a claim of an expandable class: %v", err)
		}
		pluginsWantForbidden(t, grow(claim("logs", ptr.To("fixed"))),
			`persistentvolumeclaims "logs" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`)
	})

	t.Run("RuntimeClass", func(t *testing.T) {
		rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata",
			Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("120Mi")}},
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"sandbox": "kata"},
				Tolerations: []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}}}
		if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		pod := func(name, class string, selector map[string]string) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{RuntimeClassName: ptr.To(class), NodeSelector: selector,
				Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		}
		p, err := cs.CoreV1().Pods("default").Create(ctx, pod("sandboxed", "kata", map[string]string{"zone": "a"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.Overhead.Cpu().String() != "250m" || p.Spec.Overhead.Memory().String() != "120Mi" {
			t.Errorf("overhead %v", p.Spec.Overhead)
		}
		if p.Spec.NodeSelector["sandbox"] != "kata" || p.Spec.NodeSelector["zone"] != "a" {
			t.Errorf("nodeSelector %v", p.Spec.NodeSelector)
		}
		if !slicesContainsToleration(p.Spec.Tolerations, "sandbox") {
			t.Errorf("tolerations %v", p.Spec.Tolerations)
		}
		_, err = cs.CoreV1().Pods("default").Create(ctx, pod("clash", "kata", map[string]string{"sandbox": "gvisor"}), metav1.CreateOptions{})
		pluginsWantForbidden(t, err, `pods "clash" is forbidden: conflict: runtimeClass.scheduling.nodeSelector[sandbox] = kata; pod.spec.nodeSelector[sandbox] = gvisor`)
		_, err = cs.CoreV1().Pods("default").Create(ctx, pod("missing", "gvisor", nil), metav1.CreateOptions{})
		pluginsWantForbidden(t, err, `pods "missing" is forbidden: pod rejected: RuntimeClass "gvisor" not found`)
	})

	t.Run("DefaultIngressClass", func(t *testing.T) {
		ic := &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx", Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}},
			Spec: networkingv1.IngressClassSpec{Controller: "k8s.io/ingress-nginx"}}
		if _, err := cs.NetworkingV1().IngressClasses().Create(ctx, ic, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		ing := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: networkingv1.IngressSpec{
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
		out, err := cs.NetworkingV1().Ingresses("default").Create(ctx, ing, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ptr.Deref(out.Spec.IngressClassName, "<nil>"); got != "nginx" {
			t.Fatalf("ingressClassName %s, want the default class", got)
		}
	})

	t.Run("CertificateSubjectRestriction, CertificateApproval, CertificateSigning", func(t *testing.T) {
		csr := func(name, signer string, req []byte, usages ...certificatesv1.KeyUsage) *certificatesv1.CertificateSigningRequest {
			return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Request: req, Usages: usages}}
		}
		_, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr("root", certificatesv1.KubeAPIServerClientSignerName,
			pluginsCSRPEM(t, "mallory", "system:masters"), certificatesv1.UsageClientAuth), metav1.CreateOptions{})
		pluginsWantForbidden(t, err, `certificatesigningrequests.certificates.k8s.io "root" is forbidden: use of kubernetes.io/kube-apiserver-client signer with system:masters group is not allowed`)

		// alice may write CSRs and their approval and status, but holds no
		// signer permission until the test grants it.
		alice := pluginsClientAs(t, c.Server, "alice")
		pluginsGrant(t, cs, "csr-writer", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"}, rbacv1.PolicyRule{
			Verbs: []string{"create", "get", "update"}, APIGroups: []string{"certificates.k8s.io"},
			Resources: []string{"certificatesigningrequests", "certificatesigningrequests/approval", "certificatesigningrequests/status"}})
		_, err = alice.CertificatesV1().CertificateSigningRequests().Create(ctx, csr("widget", "example.com/widgets",
			pluginsCSRPEM(t, "widget"), certificatesv1.UsageDigitalSignature), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		approve := func() error {
			cur, err := alice.CertificatesV1().CertificateSigningRequests().Get(ctx, "widget", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Status.Conditions = append(cur.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Test", Message: "ok"})
			_, err = alice.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, "widget", cur, metav1.UpdateOptions{})
			return err
		}
		issue := func() error {
			cur, err := alice.CertificatesV1().CertificateSigningRequests().Get(ctx, "widget", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			cur.Status.Certificate = c.Server.PKI.CAPEM // any PEM certificate will do for the check
			_, err = alice.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, cur, metav1.UpdateOptions{})
			return err
		}
		pluginsWantForbidden(t, approve(), `certificatesigningrequests.certificates.k8s.io "widget" is forbidden: user not permitted to approve requests with signerName "example.com/widgets"`)
		pluginsGrant(t, cs, "widget-approver", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"}, rbacv1.PolicyRule{
			Verbs: []string{"approve"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/*"}})
		if err := pluginsEventually(approve); err != nil {
			t.Fatalf("approving with approve on example.com/*: %v", err)
		}
		pluginsWantForbidden(t, issue(), `certificatesigningrequests.certificates.k8s.io "widget" is forbidden: user not permitted to sign requests with signerName "example.com/widgets"`)
		pluginsGrant(t, cs, "widget-signer", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "alice"}, rbacv1.PolicyRule{
			Verbs: []string{"sign"}, APIGroups: []string{"certificates.k8s.io"}, Resources: []string{"signers"}, ResourceNames: []string{"example.com/widgets"}})
		if err := pluginsEventually(issue); err != nil {
			t.Fatalf("issuing with sign on the signer: %v", err)
		}
	})
}

// pluginsEventually retries fn while it is refused: a new RBAC binding
// reaches the authorizer through the watch cache a moment after it is
// created.
func pluginsEventually(fn func() error) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := fn()
		if err == nil || !apierrors.IsForbidden(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func slicesContainsToleration(ts []corev1.Toleration, key string) bool {
	for _, t := range ts {
		if t.Key == key {
			return true
		}
	}
	return false
}

// TestNodeRestrictionThroughTheAPI has a kubelet, authenticated by a
// client certificate as system:node:node-a, write through the API with
// NodeRestriction enabled by name (it is off by default upstream too).
// RBAC lets the node do anything, so every refusal is the plugin's.
func TestNodeRestrictionThroughTheAPI(t *testing.T) {
	srv, admin := startServer(t, server.Config{EnableAdmissionPlugins: []string{"NodeRestriction", "StorageObjectInUseProtection"}})
	ctx := context.Background()
	pluginsGrant(t, admin, "nodes-do-anything", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:nodes"},
		rbacv1.PolicyRule{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}})
	kubelet := pluginsClientAs(t, srv, "system:node:node-a", "system:nodes")

	// The first write waits for the binding to reach the authorizer.
	var nodeA *corev1.Node
	if err := pluginsEventually(func() error {
		var err error
		nodeA, err = kubelet.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a",
			Labels: map[string]string{"kubernetes.io/hostname": "node-a", "topology.kubernetes.io/zone": "z1"}}}, metav1.CreateOptions{})
		return err
	}); err != nil {
		t.Fatalf("a node registering itself: %v", err)
	}
	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-b"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("nodes", func(t *testing.T) {
		_, err := kubelet.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-c"}}, metav1.CreateOptions{})
		pluginsWantForbidden(t, err, `nodes "node-c" is forbidden: node "node-a" is not allowed to modify node "node-c"`)
		_, err = kubelet.CoreV1().Nodes().Patch(ctx, "node-b", types.MergePatchType, []byte(`{"metadata":{"labels":{"x":"y"}}}`), metav1.PatchOptions{})
		pluginsWantForbidden(t, err, `nodes "node-b" is forbidden: node "node-a" is not allowed to modify node "node-b"`)
		_, err = kubelet.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, []byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`), metav1.PatchOptions{})
		pluginsWantForbidden(t, err, `nodes "node-a" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane`)
		_, err = kubelet.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, []byte(`{"spec":{"taints":[{"key":"k","effect":"NoSchedule"}]}}`), metav1.PatchOptions{})
		pluginsWantForbidden(t, err, `nodes "node-a" is forbidden: node "node-a" is not allowed to modify taints`)
		if _, err := kubelet.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, []byte(`{"metadata":{"labels":{"kubernetes.io/arch":"arm64","team":"a"}}}`), metav1.PatchOptions{}); err != nil {
			t.Errorf("kubelet labels on its own node: %v", err)
		}
		// Only nodes are restricted: the administrator may do all of it.
		if _, err := admin.CoreV1().Nodes().Patch(ctx, "node-a", types.MergePatchType, []byte(`{"metadata":{"labels":{"node-role.kubernetes.io/control-plane":""}}}`), metav1.PatchOptions{}); err != nil {
			t.Errorf("the administrator labelling a node: %v", err)
		}
	})

	t.Run("leases", func(t *testing.T) {
		lease := func(name string) *coordinationv1.Lease {
			return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(name)}}
		}
		if _, err := kubelet.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease("node-a"), metav1.CreateOptions{}); err != nil {
			t.Errorf("its own lease: %v", err)
		}
		_, err := kubelet.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease("node-b"), metav1.CreateOptions{})
		pluginsWantForbidden(t, err, `leases.coordination.k8s.io "node-b" is forbidden: can only access node lease with the same name as the requesting node`)
	})

	t.Run("pods", func(t *testing.T) {
		pod := func(name, node string) *corev1.Pod {
			return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
		}
		for _, p := range []*corev1.Pod{pod("on-a", "node-a"), pod("on-b", "node-b")} {
			if _, err := admin.CoreV1().Pods("default").Create(ctx, p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		_, err := kubelet.CoreV1().Pods("default").Create(ctx, pod("made-up", "node-a"), metav1.CreateOptions{})
		pluginsWantForbidden(t, err, `pods "made-up" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "node-a" can only create mirror pods`)

		mirror := pod("static-web-node-a", "node-a")
		mirror.Annotations = map[string]string{corev1.MirrorPodAnnotationKey: "abc"}
		mirror.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "node-a", UID: nodeA.UID, Controller: ptr.To(true)}}
		if _, err := kubelet.CoreV1().Pods("default").Create(ctx, mirror, metav1.CreateOptions{}); err != nil {
			t.Errorf("a mirror pod: %v", err)
		}
		mirror.Name, mirror.Spec.NodeName = "static-web-node-b", "node-b"
		_, err = kubelet.CoreV1().Pods("default").Create(ctx, mirror, metav1.CreateOptions{})
		pluginsWantForbidden(t, err, `pods "static-web-node-b" is forbidden: node "node-a" can only create pods with spec.nodeName set to itself`)

		for name, wantErr := range map[string]string{
			"on-a": "",
			"on-b": `pods "on-b" is forbidden: node "node-a" can only update pod status for pods with spec.nodeName set to itself`,
		} {
			p, err := kubelet.CoreV1().Pods("default").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			p.Status.Phase = corev1.PodRunning
			_, err = kubelet.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{})
			if wantErr == "" && err != nil {
				t.Errorf("status of its own pod: %v", err)
			} else if wantErr != "" {
				pluginsWantForbidden(t, err, wantErr)
			}
		}
		_, err = kubelet.CoreV1().Pods("default").Patch(ctx, "on-a", types.MergePatchType, []byte(`{"metadata":{"labels":{"a":"b"}}}`), metav1.PatchOptions{})
		pluginsWantForbidden(t, err, `pods "on-a" is forbidden: unexpected operation "UPDATE", node "node-a" can only create and delete mirror pods`)
		err = kubelet.CoreV1().Pods("default").Delete(ctx, "on-b", metav1.DeleteOptions{})
		pluginsWantForbidden(t, err, `pods "on-b" is forbidden: node "node-a" can only delete pods with spec.nodeName set to itself`)
		if err := kubelet.CoreV1().Pods("default").Delete(ctx, "on-a", metav1.DeleteOptions{}); err != nil {
			t.Errorf("deleting its own pod: %v", err)
		}
	})

	t.Run("certificate signing requests", func(t *testing.T) {
		csr := func(name, cn string) *certificatesv1.CertificateSigningRequest {
			return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: certificatesv1.CertificateSigningRequestSpec{
				SignerName: certificatesv1.KubeletServingSignerName, Request: pluginsCSRPEM(t, cn, "system:nodes"),
				Usages: []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}}}
		}
		_, err := kubelet.CertificatesV1().CertificateSigningRequests().Create(ctx, csr("steal", "system:node:node-b"), metav1.CreateOptions{})
		pluginsWantForbidden(t, err, `certificatesigningrequests.certificates.k8s.io "steal" is forbidden: can only create a node CSR with CN=system:node:node-a`)
		if _, err := kubelet.CertificatesV1().CertificateSigningRequests().Create(ctx, csr("mine", "system:node:node-a"), metav1.CreateOptions{}); err != nil {
			t.Errorf("its own serving CSR: %v", err)
		}
	})

	t.Run("StorageObjectInUseProtection, enabled by name", func(t *testing.T) {
		pvc, err := admin.CoreV1().PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pv, err := admin.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
			Spec: corev1.PersistentVolumeSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(pvc.Finalizers, ",") != "kubernetes.io/pvc-protection" || strings.Join(pv.Finalizers, ",") != "kubernetes.io/pv-protection" {
			t.Fatalf("claim finalizers %v, volume finalizers %v", pvc.Finalizers, pv.Finalizers)
		}
	})
}
