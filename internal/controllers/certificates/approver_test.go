package certificates_test

import (
	"context"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/certificates"
)

// TestApprover runs the approver and the signer together: a kubelet's
// client request from an identity RBAC allows is approved and then issued
// with no human involved; anything else waits.
func TestApprover(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	csrs := c.Client.CertificatesV1().CertificateSigningRequests()

	// Upstream's bootstrap roles, bound as kubeadm binds them: a bootstrap
	// identity may get any node's client certificate approved, a node its
	// own. Everyone here may create requests.
	grant(t, c.Client, "csr-creator", "certificatesigningrequests", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:authenticated"})
	grant(t, c.Client, "nodeclient", "certificatesigningrequests/nodeclient", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "kubelet-bootstrap"})
	grant(t, c.Client, "selfnodeclient", "certificatesigningrequests/selfnodeclient", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:nodes"})

	caPEM, caKeyPEM := clusterCA(t, c)
	controllertest.Run(t, c.Config, certificates.ApprovingDescriptor)
	controllertest.Run(t, c.Config, certificates.NewSigningDescriptor(caPEM, caKeyPEM))

	nodeRequest := func(t *testing.T, as kubernetes.Interface, name, node string, usages ...certificatesv1.KeyUsage) []byte {
		t.Helper()
		keyPEM, req := keyAndRequest(t, pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, nil, nil)
		if len(usages) == 0 {
			usages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
		}
		if _, err := as.CertificatesV1().CertificateSigningRequests().Create(ctx, newCSR(name, certificatesv1.KubeAPIServerClientKubeletSignerName, req, usages...), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		return keyPEM
	}
	waitApproved := func(t *testing.T, name, message string) {
		t.Helper()
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			got, err := csrs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == certificatesv1.CertificateApproved {
					return cond.Reason == "AutoApproved" && cond.Message == message, conditionsOf(got)
				}
			}
			return false, "not approved: " + conditionsOf(got)
		})
	}
	bootstrap := impersonating(t, c, "kubelet-bootstrap", "system:bootstrappers")

	t.Run("bootstrap identity gets a node client certificate", func(t *testing.T) {
		keyPEM := nodeRequest(t, bootstrap, "node-csr-n1", "n1")
		waitApproved(t, "node-csr-n1", "Auto approving kubelet client certificate after SubjectAccessReview.")
		cert := waitIssued(t, c.Client, "node-csr-n1")
		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
		// The node's new identity is what the API server sees.
		_, err := clientAs(t, c, certPEM, keyPEM).CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "system:node:n1" cannot list resource "secrets"`) {
			t.Errorf("with the issued certificate: %v, want 403 naming system:node:n1", err)
		}
	})

	t.Run("a node renews its own certificate", func(t *testing.T) {
		n2 := impersonating(t, c, "system:node:n2", "system:nodes")
		nodeRequest(t, n2, "n2-renewal", "n2")
		waitApproved(t, "n2-renewal", "Auto approving self kubelet client certificate after SubjectAccessReview.")
		waitIssued(t, c.Client, "n2-renewal")
	})

	t.Run("everything else waits for a human", func(t *testing.T) {
		n2 := impersonating(t, c, "system:node:n2", "system:nodes")
		stranger := impersonating(t, c, "stranger")
		// Another node's certificate would need nodeclient; NodeRestriction
		// (on by default) refuses the request before the approver sees it.
		_, req := keyAndRequest(t, pkix.Name{CommonName: "system:node:n3", Organization: []string{"system:nodes"}}, nil, nil)
		_, err := n2.CertificatesV1().CertificateSigningRequests().Create(ctx, newCSR("n2-for-n3", certificatesv1.KubeAPIServerClientKubeletSignerName, req,
			certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth), metav1.CreateOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "can only create a node CSR with CN=system:node:n2") {
			t.Errorf("a node asking for another node's certificate: %v, want 403 from NodeRestriction", err)
		}
		nodeRequest(t, stranger, "stranger-n4", "n4")
		nodeRequest(t, bootstrap, "bad-usages", "n5", certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth)
		_, apiClient := keyAndRequest(t, pkix.Name{CommonName: "someone"}, nil, nil)
		if _, err := bootstrap.CertificatesV1().CertificateSigningRequests().Create(ctx,
			newCSR("bootstrap-user-cert", certificatesv1.KubeAPIServerClientSignerName, apiClient, certificatesv1.UsageClientAuth), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The control is created last: once it is approved, the approver
		// has had its turn at the others.
		nodeRequest(t, bootstrap, "control", "n6")
		waitApproved(t, "control", "Auto approving kubelet client certificate after SubjectAccessReview.")
		controllertest.Consistently(t, 300*time.Millisecond, func() (bool, string) {
			for _, name := range []string{"stranger-n4", "bad-usages", "bootstrap-user-cert"} {
				got, err := csrs.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				if len(got.Status.Conditions) != 0 || len(got.Status.Certificate) != 0 {
					return false, fmt.Sprintf("%s was decided: %s", name, conditionsOf(got))
				}
			}
			return true, ""
		})
	})

	t.Run("a later grant is honoured", func(t *testing.T) {
		// stranger-n4 was refused above; the approver retries with backoff,
		// as upstream does, so RBAC granted now takes effect.
		grant(t, c.Client, "stranger-nodeclient", "certificatesigningrequests/nodeclient", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "stranger"})
		waitApproved(t, "stranger-n4", "Auto approving kubelet client certificate after SubjectAccessReview.")
	})
}

// grant makes a ClusterRole allowing "create" on resource in
// certificates.k8s.io (plus reads, for the main resource) and binds it to
// subject.
func grant(t *testing.T, cs kubernetes.Interface, name, resource string, subject rbacv1.Subject) {
	t.Helper()
	ctx := context.Background()
	verbs := []string{"create"}
	if !strings.Contains(resource, "/") {
		verbs = append(verbs, "get", "list", "watch")
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{resource}, Verbs: verbs}}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if subject.Kind != rbacv1.ServiceAccountKind {
		subject.APIGroup = rbacv1.GroupName
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects: []rbacv1.Subject{subject}}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
