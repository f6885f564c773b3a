package registry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/auth"
)

// csrKey is one key for every test request: generating keys is the slow
// part, and validation only cares that the request's signature verifies.
var csrKey = sync.OnceValue(func() *ecdsa.PrivateKey {
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	return k
})

func csrRequestPEM(t *testing.T, cn string, orgs ...string) []byte {
	t.Helper()
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: cn, Organization: orgs}}, csrKey())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// csrCertPEM is a self-signed certificate: status.certificate is only
// checked to be PEM certificates, not to chain anywhere.
func csrCertPEM(t *testing.T, cn string) []byte {
	t.Helper()
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, csrKey().Public(), csrKey())
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func csrObject(t *testing.T, mutate func(*certificatesv1.CertificateSigningRequest)) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	csr := &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "alice-client"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    csrRequestPEM(t, "alice", "devs"),
			SignerName: certificatesv1.KubeAPIServerClientSignerName,
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}
	if mutate != nil {
		mutate(csr)
	}
	return csr
}

// storedCSR is a request as the server holds it: stored metadata, a
// requester, and the given conditions.
func storedCSR(t *testing.T, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
	t.Helper()
	return csrObject(t, func(c *certificatesv1.CertificateSigningRequest) {
		c.UID, c.ResourceVersion, c.CreationTimestamp = "0b6c3f0e-8f5d-4b7e-9a55-3f4e2d1c0b9a", "7", metav1.NewTime(time.Unix(1700000000, 0))
		c.Spec.Username, c.Spec.Groups = "alice", []string{"devs", "system:authenticated"}
		for _, t := range conds {
			c.Status.Conditions = append(c.Status.Conditions, csrCond(t))
		}
	})
}

func csrCond(t certificatesv1.RequestConditionType) certificatesv1.CertificateSigningRequestCondition {
	at := metav1.NewTime(time.Unix(1700000100, 0))
	return certificatesv1.CertificateSigningRequestCondition{Type: t, Status: corev1.ConditionTrue, Reason: "Test", LastUpdateTime: at, LastTransitionTime: at}
}

// wantErrs checks that errs holds exactly the wanted errors, each written
// "<field>: <type>" plus a detail the message must contain after "|".
func wantErrs(t *testing.T, errs field.ErrorList, want ...string) {
	t.Helper()
	if len(errs) != len(want) {
		t.Errorf("got %d errors, want %d: %v", len(errs), len(want), errs.ToAggregate())
	}
	for _, w := range want {
		key, detail, _ := strings.Cut(w, "|")
		expectErrWith(t, errs, key, detail)
	}
}

func TestCSRValidateCreate(t *testing.T) {
	r := mustResource(t, "certificates.k8s.io", "certificatesigningrequests")
	type csr = certificatesv1.CertificateSigningRequest
	cases := []struct {
		name   string
		mutate func(*csr)
		want   []string
	}{
		{"valid", nil, nil},
		{"any name that is a path segment", func(c *csr) { c.Name = "node-csr-Zq3_x:y" }, nil},
		{"name with a slash", func(c *csr) { c.Name = "a/b" }, []string{"metadata.name: Invalid value|may not contain '/'"}},
		{"request not PEM", func(c *csr) { c.Spec.Request = []byte("hello") },
			[]string{"spec.request: Invalid value|PEM block type must be CERTIFICATE REQUEST"}},
		{"request is a certificate", func(c *csr) { c.Spec.Request = csrCertPEM(t, "alice") },
			[]string{"spec.request: Invalid value|PEM block type must be CERTIFICATE REQUEST"}},
		{"request signed by another key", func(c *csr) {
			block, _ := pem.Decode(c.Spec.Request)
			block.Bytes[len(block.Bytes)-3] ^= 0xff // inside the signature
			c.Spec.Request = pem.EncodeToMemory(block)
		}, []string{"spec.request: Invalid value|"}},
		{"signer required", func(c *csr) { c.Spec.SignerName = "" }, []string{"spec.signerName: Required value"}},
		{"signer without path", func(c *csr) { c.Spec.SignerName = "example.com" },
			[]string{"spec.signerName: Invalid value|must be a fully qualified domain and path of the form 'example.com/signer-name'"}},
		{"signer with two slashes", func(c *csr) { c.Spec.SignerName = "example.com/a/b" },
			[]string{"spec.signerName: Invalid value|of the form 'example.com/signer-name'"}},
		{"signer domain of one label", func(c *csr) { c.Spec.SignerName = "example/signer" },
			[]string{"spec.signerName: Invalid value|should be a domain with at least two segments separated by dots"}},
		{"signer domain label upper case", func(c *csr) { c.Spec.SignerName = "Example.com/signer" },
			[]string{`spec.signerName: Invalid value|validating label "Example"`}},
		{"signer path not a subdomain", func(c *csr) { c.Spec.SignerName = "example.com/Signer_1" },
			[]string{`spec.signerName: Invalid value|validating label "Signer_1"`}},
		{"custom signer with namespaced path", func(c *csr) { c.Spec.SignerName = "example.com/ns.my-signer" }, nil},
		{"legacy signer refused", func(c *csr) { c.Spec.SignerName = legacyUnknownSignerName },
			[]string{"spec.signerName: Invalid value|the legacy signerName is not allowed via this API version"}},
		{"usages required", func(c *csr) { c.Spec.Usages = nil }, []string{"spec.usages: Required value"}},
		{"unknown usage", func(c *csr) { c.Spec.Usages = []certificatesv1.KeyUsage{"client auth", "teleport"} },
			[]string{`spec.usages[1]: Unsupported value|supported values: "any", "cert sign"`}},
		{"duplicate usage", func(c *csr) {
			c.Spec.Usages = []certificatesv1.KeyUsage{"client auth", "digital signature", "client auth"}
		},
			[]string{"spec.usages[2]: Duplicate value"}},
		{"expiration under ten minutes", func(c *csr) { c.Spec.ExpirationSeconds = new(int32(599)) },
			[]string{"spec.expirationSeconds: Invalid value|may not specify a duration less than 600 seconds (10 minutes)"}},
		{"expiration of ten minutes", func(c *csr) { c.Spec.ExpirationSeconds = new(int32(600)) }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			wantErrs(t, runCreate(r, csrObject(t, tc.mutate)), tc.want...)
		})
	}
}

func TestCSRCreateRecordsRequester(t *testing.T) {
	r := mustResource(t, "certificates.k8s.io", "certificatesigningrequests")
	forged := func() *certificatesv1.CertificateSigningRequest {
		return csrObject(t, func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Username, c.Spec.UID, c.Spec.Groups = "system:admin", "forged", []string{"system:masters"}
			c.Spec.Extra = map[string]certificatesv1.ExtraValue{"scopes": {"all"}}
			c.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{csrCond(certificatesv1.CertificateApproved)}
			c.Status.Certificate = csrCertPEM(t, "alice")
		})
	}

	t.Run("the requesting user replaces what the client wrote", func(t *testing.T) {
		csr := forged()
		user := &auth.User{Name: "alice", UID: "u-1", Groups: []string{"devs", auth.AllAuthenticated}, Extra: map[string][]string{"team": {"a"}}}
		r.PrepareForCreate(csr)
		r.RecordCreator(csr, user)
		want := certificatesv1.CertificateSigningRequestSpec{Username: "alice", UID: "u-1", Groups: []string{"devs", auth.AllAuthenticated},
			Extra: map[string]certificatesv1.ExtraValue{"team": {"a"}}}
		got := csr.Spec
		got.Request, got.SignerName, got.Usages = nil, "", nil
		if !apiequality.Semantic.DeepEqual(got, want) {
			t.Errorf("spec requester = %+v, want %+v", got, want)
		}
		user.Groups[0] = "changed later"
		if csr.Spec.Groups[0] != "devs" {
			t.Error("the recorded groups share the user's slice")
		}
		if len(csr.Status.Conditions) != 0 || len(csr.Status.Certificate) != 0 {
			t.Errorf("status survived create: %+v", csr.Status)
		}
		if errs := r.Validate(csr); len(errs) != 0 {
			t.Errorf("prepared request invalid: %v", errs)
		}
	})
	t.Run("no user leaves no requester", func(t *testing.T) {
		csr := forged()
		r.PrepareForCreate(csr)
		r.RecordCreator(csr, nil)
		if csr.Spec.Username != "" || csr.Spec.UID != "" || csr.Spec.Groups != nil || csr.Spec.Extra != nil {
			t.Errorf("requester = %q %q %v %v, want none", csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra)
		}
	})
}

func TestCSRUpdateKeepsSpecAndStatus(t *testing.T) {
	r := mustResource(t, "certificates.k8s.io", "certificatesigningrequests")
	old := storedCSR(t, certificatesv1.CertificateApproved)
	next := old.DeepCopy()
	next.Labels = map[string]string{"team": "a"}
	next.Spec.SignerName = "example.com/other"
	next.Spec.Usages = nil
	next.Status.Conditions = nil
	next.Status.Certificate = []byte("junk")
	if errs := runUpdate(r, next, old); len(errs) != 0 {
		t.Fatalf("update refused: %v", errs)
	}
	if !apiequality.Semantic.DeepEqual(next.Spec, old.Spec) || !apiequality.Semantic.DeepEqual(next.Status, old.Status) {
		t.Errorf("spec or status changed by a write to the main resource:\nspec %+v\nstatus %+v", next.Spec, next.Status)
	}
	if next.Labels["team"] != "a" {
		t.Errorf("labels = %v, want the client's", next.Labels)
	}
}

func TestCSRStatusUpdate(t *testing.T) {
	r := mustResource(t, "certificates.k8s.io", "certificatesigningrequests")
	type csr = certificatesv1.CertificateSigningRequest
	issued := csrCertPEM(t, "alice")
	cases := []struct {
		name   string
		old    []certificatesv1.RequestConditionType
		mutate func(*csr)
		want   []string
	}{
		{"issue an approved request", []certificatesv1.RequestConditionType{"Approved"}, func(c *csr) { c.Status.Certificate = issued }, nil},
		{"certificate that is not PEM", []certificatesv1.RequestConditionType{"Approved"}, func(c *csr) { c.Status.Certificate = []byte("nope") },
			[]string{"status.certificate: Invalid value|must contain at least one CERTIFICATE PEM block"}},
		{"certificate block of another type", []certificatesv1.RequestConditionType{"Approved"},
			func(c *csr) {
				c.Status.Certificate = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{1}})
			},
			[]string{`status.certificate: Invalid value|only CERTIFICATE PEM blocks are allowed, found "PRIVATE KEY"`}},
		{"add Failed", []certificatesv1.RequestConditionType{"Approved"},
			func(c *csr) {
				c.Status.Conditions = append(c.Status.Conditions, csrCond(certificatesv1.CertificateFailed))
			}, nil},
		{"Failed only exists as True", []certificatesv1.RequestConditionType{"Approved"}, func(c *csr) {
			f := csrCond(certificatesv1.CertificateFailed)
			f.Status = corev1.ConditionFalse
			c.Status.Conditions = append(c.Status.Conditions, f)
		}, []string{`status.conditions[1].status: Unsupported value|supported values: "True"`}},
		{"other condition types are free", nil, func(c *csr) {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: "Queued", Status: corev1.ConditionFalse})
		}, nil},
		{"condition without a type", nil, func(c *csr) {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Status: corev1.ConditionTrue})
		}, []string{"status.conditions[0].type: Required value"}},
		{"approve through status", nil,
			func(c *csr) {
				c.Status.Conditions = append(c.Status.Conditions, csrCond(certificatesv1.CertificateApproved))
			},
			[]string{`status.conditions: Forbidden|updates may not add a condition of type "Approved"`}},
		{"reword the approval through status", []certificatesv1.RequestConditionType{"Approved"}, func(c *csr) { c.Status.Conditions[0].Message = "mine" },
			[]string{`status.conditions: Forbidden|updates may not modify a condition of type "Approved"`}},
		{"remove Failed", []certificatesv1.RequestConditionType{"Approved", "Failed"}, func(c *csr) { c.Status.Conditions = c.Status.Conditions[:1] },
			[]string{`status.conditions: Forbidden|updates may not remove a condition of type "Failed"`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := storedCSR(t, tc.old...)
			next := old.DeepCopy()
			tc.mutate(next)
			wantErrs(t, r.ValidateStatusUpdate(next, old), tc.want...)
		})
	}
	t.Run("an issued certificate is final", func(t *testing.T) {
		old := storedCSR(t, certificatesv1.CertificateApproved)
		old.Status.Certificate = issued
		next := old.DeepCopy()
		next.Status.Certificate = csrCertPEM(t, "mallory")
		wantErrs(t, r.ValidateStatusUpdate(next, old), "status.certificate: Forbidden|updates may not modify existing certificate content")
	})
	t.Run("the main resource may not set a certificate", func(t *testing.T) {
		// PrepareForUpdate keeps the stored status; validation is the
		// second line, for a strategy that would not.
		old := storedCSR(t, certificatesv1.CertificateApproved)
		next := old.DeepCopy()
		next.Status.Certificate = issued
		wantErrs(t, r.ValidateUpdate(next, old), "status.certificate: Forbidden|updates may not set certificate content")
	})
}

func TestCSRApproval(t *testing.T) {
	r := mustResource(t, "certificates.k8s.io", "certificatesigningrequests")
	if r.Approval == nil {
		t.Fatal("certificatesigningrequests serve no /approval")
	}
	type csr = certificatesv1.CertificateSigningRequest
	decide := func(t certificatesv1.RequestConditionType) func(*csr) {
		return func(c *csr) {
			c.Status.Conditions = append(c.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
				Type: t, Status: corev1.ConditionTrue, Reason: "KubectlApprove"})
		}
	}
	cases := []struct {
		name   string
		old    []certificatesv1.RequestConditionType
		mutate func(*csr)
		want   []string
	}{
		{"approve", nil, decide(certificatesv1.CertificateApproved), nil},
		{"deny", nil, decide(certificatesv1.CertificateDenied), nil},
		{"approve and deny at once", nil, func(c *csr) {
			decide(certificatesv1.CertificateApproved)(c)
			decide(certificatesv1.CertificateDenied)(c)
		}, []string{"status.conditions: Invalid value|Approved and Denied conditions are mutually exclusive"}},
		{"deny an approved request", []certificatesv1.RequestConditionType{"Approved"}, decide(certificatesv1.CertificateDenied),
			[]string{"status.conditions: Invalid value|Approved and Denied conditions are mutually exclusive"}},
		{"turn an approval into a denial", []certificatesv1.RequestConditionType{"Approved"}, func(c *csr) { c.Status.Conditions[0].Type = certificatesv1.CertificateDenied },
			[]string{`status.conditions: Forbidden|updates may not remove a condition of type "Approved"`}},
		{"withdraw an approval", []certificatesv1.RequestConditionType{"Approved"}, func(c *csr) { c.Status.Conditions = nil },
			[]string{`status.conditions: Forbidden|updates may not remove a condition of type "Approved"`}},
		{"approve twice", []certificatesv1.RequestConditionType{"Approved"}, decide(certificatesv1.CertificateApproved),
			[]string{"status.conditions[1].type: Duplicate value"}},
		{"Approved only exists as True", nil, func(c *csr) {
			decide(certificatesv1.CertificateApproved)(c)
			c.Status.Conditions[0].Status = corev1.ConditionFalse
		}, []string{`status.conditions[0].status: Unsupported value`}},
		{"remove a failure", []certificatesv1.RequestConditionType{"Approved", "Failed"}, func(c *csr) { c.Status.Conditions = c.Status.Conditions[:1] },
			[]string{`status.conditions: Forbidden|updates may not remove a condition of type "Failed"`}},
		{"stored objects with both decisions stay updatable", []certificatesv1.RequestConditionType{"Approved", "Denied"},
			func(c *csr) { c.Labels = map[string]string{"x": "y"} }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := storedCSR(t, tc.old...)
			next := old.DeepCopy()
			tc.mutate(next)
			r.Approval.PrepareForUpdate(next, old)
			wantErrs(t, r.Approval.ValidateUpdate(next, old), tc.want...)
		})
	}

	t.Run("only the conditions change, with their times filled", func(t *testing.T) {
		old := storedCSR(t)
		old.Status.Certificate = nil
		next := old.DeepCopy()
		next.Spec.SignerName = "example.com/mine"
		next.Spec.Username = "mallory"
		next.Status.Certificate = csrCertPEM(t, "mallory")
		decide(certificatesv1.CertificateApproved)(next)
		before := time.Now().Add(-time.Second)
		r.Approval.PrepareForUpdate(next, old)
		if !apiequality.Semantic.DeepEqual(next.Spec, old.Spec) || len(next.Status.Certificate) != 0 {
			t.Errorf("approval changed spec or certificate: %+v", next)
		}
		c := next.Status.Conditions[0]
		if c.Type != certificatesv1.CertificateApproved || c.LastUpdateTime.Time.Before(before) || c.LastTransitionTime.Time.Before(before) {
			t.Errorf("condition = %+v, want Approved stamped now", c)
		}
		if errs := r.Approval.ValidateUpdate(next, old); len(errs) != 0 {
			t.Errorf("approval refused: %v", errs)
		}
	})
	t.Run("an unchanged condition keeps its transition time", func(t *testing.T) {
		old := storedCSR(t, certificatesv1.CertificateApproved)
		next := old.DeepCopy()
		next.Status.Conditions[0].LastTransitionTime = metav1.Time{}
		r.Approval.PrepareForUpdate(next, old)
		if got, want := next.Status.Conditions[0].LastTransitionTime, old.Status.Conditions[0].LastTransitionTime; !got.Equal(&want) {
			t.Errorf("lastTransitionTime = %v, want the stored %v", got, want)
		}
	})
}

func TestCSRFields(t *testing.T) {
	r := mustResource(t, "certificates.k8s.io", "certificatesigningrequests")
	got := r.Fields(csrObject(t, nil))
	if got.Get("spec.signerName") != certificatesv1.KubeAPIServerClientSignerName || len(got) != 1 {
		t.Errorf("fields = %v, want spec.signerName only", got)
	}
}

// The golden file testdata/certificates_tables.golden is `kubectl get csr`
// for requests in each state. Rewrite it with
//
//	go test ./internal/apiserver/registry -run TestCSRTable -update
func TestCSRTable(t *testing.T) {
	r := mustResource(t, "certificates.k8s.io", "certificatesigningrequests")
	now := time.Now()
	obj := func(name string, age time.Duration, signer, user string, expiration int32, conds ...certificatesv1.RequestConditionType) *certificatesv1.CertificateSigningRequest {
		c := &certificatesv1.CertificateSigningRequest{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
			Spec: certificatesv1.CertificateSigningRequestSpec{SignerName: signer, Username: user}}
		if expiration > 0 {
			c.Spec.ExpirationSeconds = new(expiration)
		}
		for _, t := range conds {
			c.Status.Conditions = append(c.Status.Conditions, csrCond(t))
		}
		return c
	}
	issued := obj("alice", 2*time.Hour, certificatesv1.KubeAPIServerClientSignerName, "kubernetes-admin", 3600, "Approved")
	issued.Status.Certificate = csrCertPEM(t, "alice")
	objects := []runtime.Object{
		obj("node-csr-7x2k", 30*time.Second, certificatesv1.KubeAPIServerClientKubeletSignerName, "system:bootstrap:abcdef", 0),
		issued,
		obj("mallory", 5*time.Minute, certificatesv1.KubeAPIServerClientSignerName, "mallory", 86400*7, "Denied"),
		obj("csr-serving", 3*24*time.Hour, certificatesv1.KubeletServingSignerName, "system:node:node-1", 0, "Approved", "Failed"),
		obj("legacy", 400*24*time.Hour, "", "old-client", 0, "Approved", "Denied"),
	}
	if cols := r.Table.Columns; len(cols) != 6 {
		t.Fatalf("%d columns, want 6", len(cols))
	}
	for _, o := range objects {
		for i, cell := range r.Table.Row(o) {
			if _, ok := cell.(string); !ok {
				t.Errorf("column %s: cell %v is %T, want string", r.Table.Columns[i].Name, cell, cell)
			}
		}
	}
	got := "$ kubectl get csr\n" + renderTable(t, r.Table, objects, false)
	path := filepath.Join("testdata", "certificates_tables.golden")
	if updateGolden() {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("table differs from %s (run with -update and review the diff):\n%s", path, lineDiff(string(want), got))
	}
}
