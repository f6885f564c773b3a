package registry_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestCSREndToEnd serves certificatesigningrequests from a real API server
// and drives each of its three doors as their users do: the requester
// creates (as an impersonated user, whose identity the server records), an
// approver writes /approval, a signer writes /status; kubectl lists them.
func TestCSREndToEnd(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := c.Client
	csrs := admin.CertificatesV1().CertificateSigningRequests()

	rc := rest.CopyConfig(c.Config)
	rc.Impersonate = rest.ImpersonationConfig{UserName: "alice", UID: "alice-uid", Groups: []string{"system:masters", "devs"},
		Extra: map[string][]string{"scopes": {"csr"}}}
	alice, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	request := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
	newCSR := func(name string) *certificatesv1.CertificateSigningRequest {
		return &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.CertificateSigningRequestSpec{Request: request, SignerName: "example.com/team-signer",
				Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}, ExpirationSeconds: new(int32(3600)),
				Username: "system:admin", Groups: []string{"forged"}},
			Status: certificatesv1.CertificateSigningRequestStatus{Conditions: []certificatesv1.CertificateSigningRequestCondition{
				{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}},
		}
	}

	var created *certificatesv1.CertificateSigningRequest
	t.Run("create records the requester and no decision", func(t *testing.T) {
		created, err = alice.CertificatesV1().CertificateSigningRequests().Create(ctx, newCSR("alice"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := created.Spec
		if s.Username != "alice" || s.UID != "alice-uid" || !slices.Contains(s.Groups, "devs") || !slices.Contains(s.Groups, "system:authenticated") ||
			slices.Contains(s.Groups, "forged") || !slices.Equal(s.Extra["scopes"], []string{"csr"}) {
			t.Errorf("requester = %q %q %v %v", s.Username, s.UID, s.Groups, s.Extra)
		}
		if len(created.Status.Conditions) != 0 {
			t.Errorf("created with conditions %+v", created.Status.Conditions)
		}
	})
	t.Run("invalid requests are refused", func(t *testing.T) {
		bad := newCSR("bad")
		bad.Spec.Request, bad.Spec.SignerName, bad.Spec.ExpirationSeconds = []byte("x"), "", new(int32(60))
		_, err := csrs.Create(ctx, bad, metav1.CreateOptions{})
		expectCauses(t, err, "spec.expirationSeconds", "spec.request", "spec.signerName")
	})
	t.Run("the main resource ignores spec and status", func(t *testing.T) {
		cur, err := csrs.Get(ctx, "alice", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cur.Labels = map[string]string{"team": "a"}
		cur.Spec.SignerName = "example.com/other"
		cur.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
		out, err := csrs.Update(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if out.Labels["team"] != "a" || out.Spec.SignerName != "example.com/team-signer" || len(out.Status.Conditions) != 0 {
			t.Errorf("after update: labels %v signer %q conditions %+v", out.Labels, out.Spec.SignerName, out.Status.Conditions)
		}
	})
	t.Run("status cannot approve", func(t *testing.T) {
		cur, _ := csrs.Get(ctx, "alice", metav1.GetOptions{})
		cur.Status.Conditions = append(cur.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue})
		_, err := csrs.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		expectCauses(t, err, "status.conditions")
	})
	t.Run("approval adds only the condition", func(t *testing.T) {
		cur, _ := csrs.Get(ctx, "alice", metav1.GetOptions{})
		cur.Spec.Usages = []certificatesv1.KeyUsage{certificatesv1.UsageAny}
		cur.Status.Conditions = append(cur.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "TestApprove"})
		out, err := csrs.UpdateApproval(ctx, "alice", cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Status.Conditions) != 1 || out.Status.Conditions[0].Reason != "TestApprove" || out.Status.Conditions[0].LastUpdateTime.IsZero() {
			t.Errorf("conditions = %+v, want Approved with its time", out.Status.Conditions)
		}
		if !slices.Equal(out.Spec.Usages, []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}) {
			t.Errorf("usages = %v, changed through /approval", out.Spec.Usages)
		}
		got, err := csrs.Get(ctx, "alice", metav1.GetOptions{})
		if err != nil || len(got.Status.Conditions) != 1 {
			t.Errorf("stored conditions %+v (%v)", got.Status.Conditions, err)
		}
	})
	t.Run("an approved request cannot be denied", func(t *testing.T) {
		// A merge patch replaces the list: the approval would be removed
		// and a denial added.
		patch := []byte(`{"status":{"conditions":[{"type":"Denied","status":"True","reason":"Changed"}]}}`)
		_, err := csrs.Patch(ctx, "alice", types.MergePatchType, patch, metav1.PatchOptions{}, "approval")
		expectCauses(t, err, "status.conditions")
		if err != nil && !strings.Contains(err.Error(), `updates may not remove a condition of type "Approved"`) {
			t.Errorf("error %v does not say the approval cannot be removed", err)
		}
	})
	t.Run("the signer issues once through status", func(t *testing.T) {
		cur, _ := csrs.Get(ctx, "alice", metav1.GetOptions{})
		cur.Status.Certificate = selfSigned(t, key, "alice")
		out, err := csrs.UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		out.Status.Certificate = selfSigned(t, key, "mallory")
		_, err = csrs.UpdateStatus(ctx, out, metav1.UpdateOptions{})
		expectCauses(t, err, "status.certificate")
	})
	t.Run("approval can be read", func(t *testing.T) {
		var got certificatesv1.CertificateSigningRequest
		err := admin.CertificatesV1().RESTClient().Get().Resource("certificatesigningrequests").Name("alice").SubResource("approval").Do(ctx).Into(&got)
		if err != nil || len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Reason != "TestApprove" {
			t.Errorf("GET /approval: %v %+v", err, got.Status)
		}
	})
	t.Run("field selector on the signer", func(t *testing.T) {
		if _, err := csrs.Create(ctx, func() *certificatesv1.CertificateSigningRequest {
			o := newCSR("other-signer")
			o.Spec.SignerName = certificatesv1.KubeAPIServerClientSignerName
			return o
		}(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		list, err := csrs.List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=example.com/team-signer"})
		if err != nil || len(list.Items) != 1 || list.Items[0].Name != "alice" {
			t.Errorf("selected %d requests (%v)", len(list.Items), err)
		}
	})
	t.Run("kubectl", func(t *testing.T) {
		out := moreKubectl(t, c.Server.Kubeconfig, "get", "csr")
		tables := moreKubectlTables(out)
		if len(tables) != 1 || !slices.Equal(tables[0][0], []string{"NAME", "AGE", "SIGNERNAME", "REQUESTOR", "REQUESTEDDURATION", "CONDITION"}) {
			t.Fatalf("kubectl get csr:\n%s", out)
		}
		var row []string
		for _, r := range tables[0][1:] {
			if r[0] == "alice" {
				row = r
			}
		}
		if len(row) != 6 || row[2] != "example.com/team-signer" || row[3] != "alice" || row[4] != "60m" || row[5] != "Approved,Issued" {
			t.Errorf("alice's row = %q\n%s", row, out)
		}
	})
}

func expectCauses(t *testing.T, err error, fields ...string) {
	t.Helper()
	moreExpectInvalid(t, err, fields...)
}

func selfSigned(t *testing.T, key *ecdsa.PrivateKey, cn string) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
