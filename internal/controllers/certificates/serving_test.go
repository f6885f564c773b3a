package certificates_test

import (
	"context"
	"crypto/x509/pkix"
	"net"
	"slices"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/certificates"
)

// TestServingApprover: a node's request for its own kubelet serving
// certificate, naming only itself and its Node's addresses, is approved
// and issued; one reaching beyond that waits for a human. (The Nodes
// here are API objects only: nothing is dialed.)
func TestServingApprover(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	csrs := c.Client.CertificatesV1().CertificateSigningRequests()
	// Nodes may create requests; so may everyone here, for the strangers.
	grant(t, c.Client, "csr-creator", "certificatesigningrequests", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "system:authenticated"})
	caPEM, caKeyPEM := clusterCA(t, c)
	controllertest.Run(t, c.Config, certificates.ApprovingDescriptor)
	controllertest.Run(t, c.Config, certificates.NewSigningDescriptor(caPEM, caKeyPEM))

	serving := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth}
	mkNode := func(t *testing.T, name string, ips ...string) {
		t.Helper()
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for _, ip := range ips {
			n.Status.Addresses = append(n.Status.Addresses, corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: ip})
		}
		created, err := c.Client.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(created.Status.Addresses) != len(ips) {
			created.Status.Addresses = n.Status.Addresses
			if _, err := c.Client.CoreV1().Nodes().UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	request := func(t *testing.T, as kubernetes.Interface, csrName, node string, dns []string, ips []string, usages ...certificatesv1.KeyUsage) {
		t.Helper()
		var parsed []net.IP
		for _, ip := range ips {
			parsed = append(parsed, net.ParseIP(ip))
		}
		_, req := keyAndRequest(t, pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, dns, parsed)
		if _, err := as.CertificatesV1().CertificateSigningRequests().Create(ctx, newCSR(csrName, certificatesv1.KubeletServingSignerName, req, usages...), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	asNode := func(name string) kubernetes.Interface {
		return impersonating(t, c, "system:node:"+name, "system:nodes")
	}
	waitApproved := func(t *testing.T, name string) {
		t.Helper()
		controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
			got, err := csrs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == certificatesv1.CertificateApproved {
					return cond.Reason == "AutoApproved", conditionsOf(got)
				}
			}
			return false, "not approved: " + conditionsOf(got)
		})
	}

	t.Run("a node's own name and addresses", func(t *testing.T) {
		mkNode(t, "sv1", "10.1.2.3", "10.1.2.4")
		request(t, asNode("sv1"), "sv1-serving", "sv1", []string{"sv1"}, []string{"10.1.2.4", "10.1.2.3"}, serving...)
		waitApproved(t, "sv1-serving")
		cert := waitIssued(t, c.Client, "sv1-serving")
		if !slices.Equal(cert.DNSNames, []string{"sv1"}) || len(cert.IPAddresses) != 2 || cert.Subject.CommonName != "system:node:sv1" {
			t.Errorf("issued %v %v %v", cert.Subject, cert.DNSNames, cert.IPAddresses)
		}
	})

	t.Run("ECDSA usages without key encipherment", func(t *testing.T) {
		mkNode(t, "sv2", "10.1.2.5")
		request(t, asNode("sv2"), "sv2-serving", "sv2", nil, []string{"10.1.2.5"}, certificatesv1.UsageServerAuth, certificatesv1.UsageDigitalSignature)
		waitApproved(t, "sv2-serving")
	})

	t.Run("a request made before its Node exists is approved once it does", func(t *testing.T) {
		request(t, asNode("sv3"), "sv3-serving", "sv3", []string{"sv3"}, []string{"10.1.2.6"}, serving...)
		mkNode(t, "sv3", "10.1.2.6")
		waitApproved(t, "sv3-serving")
	})

	t.Run("anything more waits for a human", func(t *testing.T) {
		mkNode(t, "sv4", "10.1.2.7")
		request(t, asNode("sv4"), "other-ip", "sv4", nil, []string{"10.9.9.9"}, serving...)
		request(t, asNode("sv4"), "other-dns", "sv4", []string{"sv4", "evil.example"}, []string{"10.1.2.7"}, serving...)
		request(t, asNode("sv4"), "client-usage", "sv4", []string{"sv4"}, nil, certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth, certificatesv1.UsageClientAuth)
		request(t, impersonating(t, c, "stranger"), "not-a-node", "sv4", []string{"sv4"}, []string{"10.1.2.7"}, serving...)
		request(t, impersonating(t, c, "system:node:sv4"), "not-in-nodes-group", "sv4", []string{"sv4"}, []string{"10.1.2.7"}, serving...)
		// The control is created last: once it is approved, the approver
		// has had its turn at the others.
		request(t, asNode("sv4"), "control", "sv4", []string{"sv4"}, []string{"10.1.2.7"}, serving...)
		waitApproved(t, "control")
		time.Sleep(300 * time.Millisecond)
		for _, name := range []string{"other-ip", "other-dns", "client-usage", "not-a-node", "not-in-nodes-group"} {
			got, err := csrs.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Status.Conditions) != 0 || len(got.Status.Certificate) != 0 {
				t.Errorf("%s was decided: %s", name, conditionsOf(got))
			}
		}
	})
}
