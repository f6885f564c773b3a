package certificates_test

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/clustertest"
	"github.com/rudder-dev/rudder/internal/controller/controllertest"
	"github.com/rudder-dev/rudder/internal/controllers/certificates"
)

// TestSigner runs the signer against a real API server and drives it as
// an administrator does: kubectl certificate approve and deny.
func TestSigner(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	csrs := c.Client.CertificatesV1().CertificateSigningRequests()
	caPEM, caKeyPEM := clusterCA(t, c)
	// A two-hour maximum, so the cap is visible without waiting a year.
	controllertest.Run(t, c.Config, certificates.NewSigningDescriptorWithConfig(certificates.SigningConfig{
		CACertPEM: caPEM, CAKeyPEM: caKeyPEM, Duration: 2 * time.Hour}))
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)

	approve := func(t *testing.T, name string) {
		t.Helper()
		// kubectl only talks to /approval; nothing else approves here.
		controllertest.KubectlOutput(t, c.Server.Kubeconfig, "certificate", "approve", name)
	}

	t.Run("approved client certificate is issued and authenticates", func(t *testing.T) {
		keyPEM, req := keyAndRequest(t, pkix.Name{CommonName: "jane", Organization: []string{"devs", "qa"}}, nil, nil)
		csr := newCSR("jane", certificatesv1.KubeAPIServerClientSignerName, req, certificatesv1.UsageClientAuth, certificatesv1.UsageDigitalSignature)
		csr.Spec.ExpirationSeconds = new(int32(3600))
		if _, err := csrs.Create(ctx, csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		approve(t, "jane")
		issuedAt := time.Now()
		cert := waitIssued(t, c.Client, "jane")

		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Errorf("certificate does not chain to the cluster CA for client auth: %v", err)
		}
		// DER sorts the values of one attribute set: compare as sets.
		if cert.Subject.CommonName != "jane" || !slices.Equal(slices.Sorted(slices.Values(cert.Subject.Organization)), []string{"devs", "qa"}) {
			t.Errorf("subject = %v, want CN=jane O=devs,qa", cert.Subject)
		}
		if cert.IsCA || cert.KeyUsage != x509.KeyUsageDigitalSignature {
			t.Errorf("IsCA=%v keyUsage=%v, want a leaf for digital signature", cert.IsCA, cert.KeyUsage)
		}
		// One hour from signing, backdated five minutes for clock skew.
		if got := cert.NotAfter.Sub(cert.NotBefore); got != time.Hour+5*time.Minute {
			t.Errorf("validity %v, want 1h5m", got)
		}
		if d := cert.NotAfter.Sub(issuedAt.Add(time.Hour)); d < -10*time.Second || d > 10*time.Second {
			t.Errorf("NotAfter %v is %v away from an hour after approval", cert.NotAfter, d)
		}

		certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
		_, err := clientAs(t, c, certPEM, keyPEM).CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "jane" cannot list resource "pods"`) {
			t.Errorf("listing pods with the issued certificate: %v, want 403 naming user jane", err)
		}

		out := controllertest.KubectlOutput(t, c.Server.Kubeconfig, "get", "csr", "jane", "--no-headers")
		if f := strings.Fields(out); len(f) != 6 || f[2] != certificatesv1.KubeAPIServerClientSignerName || f[4] != "60m" || f[5] != "Approved,Issued" {
			t.Errorf("kubectl get csr jane: %q", out)
		}
	})

	t.Run("lifetime capped by the signing duration", func(t *testing.T) {
		_, req := keyAndRequest(t, pkix.Name{CommonName: "long"}, nil, nil)
		csr := newCSR("long", certificatesv1.KubeAPIServerClientSignerName, req, certificatesv1.UsageClientAuth)
		csr.Spec.ExpirationSeconds = new(int32(24 * 3600))
		if _, err := csrs.Create(ctx, csr, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		approve(t, "long")
		if got := waitIssued(t, c.Client, "long"); got.NotAfter.Sub(got.NotBefore) != 2*time.Hour+5*time.Minute {
			t.Errorf("validity %v, want the 2h maximum (+5m backdate)", got.NotAfter.Sub(got.NotBefore))
		}
	})

	t.Run("denied and unapproved requests are never signed", func(t *testing.T) {
		for _, name := range []string{"mallory", "pending", "control"} {
			_, req := keyAndRequest(t, pkix.Name{CommonName: name}, nil, nil)
			if _, err := csrs.Create(ctx, newCSR(name, certificatesv1.KubeAPIServerClientSignerName, req, certificatesv1.UsageClientAuth), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		controllertest.KubectlOutput(t, c.Server.Kubeconfig, "certificate", "deny", "mallory")
		// The control is approved after the denial: once it is issued, the
		// signer has seen mallory denied.
		approve(t, "control")
		waitIssued(t, c.Client, "control")
		controllertest.Consistently(t, 200*time.Millisecond, func() (bool, string) {
			for _, name := range []string{"mallory", "pending"} {
				got, err := csrs.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				if len(got.Status.Certificate) > 0 {
					return false, fmt.Sprintf("%s was issued a certificate; conditions %s", name, conditionsOf(got))
				}
			}
			return true, ""
		})
		if out := controllertest.KubectlOutput(t, c.Server.Kubeconfig, "get", "csr", "mallory", "--no-headers"); !strings.HasSuffix(strings.TrimSpace(out), "Denied") {
			t.Errorf("kubectl get csr mallory: %q", out)
		}
		// An approver cannot overturn a denial: the API refuses both.
		got, _ := csrs.Get(ctx, "mallory", metav1.GetOptions{})
		got.Status.Conditions = append(got.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "Overturn"})
		if _, err := csrs.UpdateApproval(ctx, "mallory", got, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
			t.Errorf("approving a denied request: %v, want 422", err)
		}
	})

	t.Run("requests breaking their signer's rules fail", func(t *testing.T) {
		node := func(cn string, orgs ...string) pkix.Name { return pkix.Name{CommonName: cn, Organization: orgs} }
		cases := []struct {
			name, signer string
			subject      pkix.Name
			dns          []string
			ips          []net.IP
			usages       []certificatesv1.KeyUsage
			message      string
		}{
			{"client-without-client-auth", certificatesv1.KubeAPIServerClientSignerName, node("bob"), nil, nil,
				[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature},
				"missing required usage for client certificate: client auth"},
			{"client-for-serving", certificatesv1.KubeAPIServerClientSignerName, node("bob"), nil, nil,
				[]certificatesv1.KeyUsage{certificatesv1.UsageClientAuth, certificatesv1.UsageServerAuth},
				"invalid usage for client certificate: server auth"},
			{"kubelet-client-wrong-org", certificatesv1.KubeAPIServerClientKubeletSignerName, node("system:node:n1", "devs"), nil, nil,
				[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
				"subject organization is not system:nodes"},
			{"kubelet-client-with-san", certificatesv1.KubeAPIServerClientKubeletSignerName, node("system:node:n1", "system:nodes"), []string{"n1"}, nil,
				[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth},
				"DNS subjectAltNames are not allowed"},
			{"kubelet-serving-without-san", certificatesv1.KubeletServingSignerName, node("system:node:n1", "system:nodes"), nil, nil,
				[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
				"DNS or IP subjectAltName is required"},
			{"kubelet-serving-not-a-node", certificatesv1.KubeletServingSignerName, node("web", "system:nodes"), []string{"web"}, nil,
				[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth},
				"subject common name does not begin with system:node:"},
		}
		for _, tc := range cases {
			_, req := keyAndRequest(t, tc.subject, tc.dns, tc.ips)
			if _, err := csrs.Create(ctx, newCSR(tc.name, tc.signer, req, tc.usages...), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			approve(t, tc.name)
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				controllertest.Eventually(t, 10*time.Second, func() (bool, string) {
					got, err := csrs.Get(ctx, tc.name, metav1.GetOptions{})
					if err != nil {
						return false, err.Error()
					}
					for _, cond := range got.Status.Conditions {
						if cond.Type == certificatesv1.CertificateFailed {
							ok := cond.Reason == "SignerValidationFailure" && cond.Message == tc.message && len(got.Status.Certificate) == 0
							return ok, "conditions " + conditionsOf(got)
						}
					}
					return false, "not failed yet: " + conditionsOf(got)
				})
			})
		}
		if out := controllertest.KubectlOutput(t, c.Server.Kubeconfig, "get", "csr", "kubelet-client-wrong-org", "--no-headers"); !strings.HasSuffix(strings.TrimSpace(out), "Approved,Failed") {
			t.Errorf("kubectl get csr: %q", out)
		}
	})

	t.Run("node certificates are issued", func(t *testing.T) {
		_, client := keyAndRequest(t, pkix.Name{CommonName: "system:node:n2", Organization: []string{"system:nodes"}}, nil, nil)
		_, serving := keyAndRequest(t, pkix.Name{CommonName: "system:node:n2", Organization: []string{"system:nodes"}},
			[]string{"n2.example.com"}, []net.IP{net.ParseIP("10.0.0.2")})
		for name, csr := range map[string]*certificatesv1.CertificateSigningRequest{
			"n2-client":  newCSR("n2-client", certificatesv1.KubeAPIServerClientKubeletSignerName, client, certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth),
			"n2-serving": newCSR("n2-serving", certificatesv1.KubeletServingSignerName, serving, certificatesv1.UsageDigitalSignature, certificatesv1.UsageKeyEncipherment, certificatesv1.UsageServerAuth),
		} {
			if _, err := csrs.Create(ctx, csr, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			approve(t, name)
		}
		if got := waitIssued(t, c.Client, "n2-client"); !slices.Equal(got.ExtKeyUsage, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}) {
			t.Errorf("client certificate ext usages %v", got.ExtKeyUsage)
		}
		got := waitIssued(t, c.Client, "n2-serving")
		if _, err := got.Verify(x509.VerifyOptions{Roots: roots, DNSName: "n2.example.com"}); err != nil {
			t.Errorf("serving certificate does not verify for n2.example.com: %v", err)
		}
		if !slices.ContainsFunc(got.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.ParseIP("10.0.0.2")) }) {
			t.Errorf("serving certificate IPs %v", got.IPAddresses)
		}
		// No cluster default: two years would pass the cap had the request
		// asked; it did not, so the maximum applies.
		if d := got.NotAfter.Sub(got.NotBefore); d != 2*time.Hour+5*time.Minute {
			t.Errorf("validity %v, want the 2h maximum", d)
		}
	})

	t.Run("other signers are left alone", func(t *testing.T) {
		_, req := keyAndRequest(t, pkix.Name{CommonName: "ext"}, nil, nil)
		if _, err := csrs.Create(ctx, newCSR("ext", "example.com/team-signer", req, certificatesv1.UsageClientAuth), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		approve(t, "ext")
		_, ctl := keyAndRequest(t, pkix.Name{CommonName: "ext-control"}, nil, nil)
		if _, err := csrs.Create(ctx, newCSR("ext-control", certificatesv1.KubeAPIServerClientSignerName, ctl, certificatesv1.UsageClientAuth), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		approve(t, "ext-control")
		waitIssued(t, c.Client, "ext-control")
		controllertest.Consistently(t, 200*time.Millisecond, func() (bool, string) {
			got, err := csrs.Get(ctx, "ext", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(got.Status.Certificate) == 0 && len(got.Status.Conditions) == 1,
				"another signer's request was touched: " + conditionsOf(got)
		})
	})
}
