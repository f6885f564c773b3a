package admission_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/rudder-dev/rudder/internal/admission"
	"github.com/rudder-dev/rudder/internal/server"
)

// BenchmarkAdmissionCreate measures what admission adds to a pod create
// through a real API server (embedded etcd, HTTPS on loopback, protobuf
// client, one create at a time), in four set-ups, each its own server:
//
//	none     every admission plugin disabled
//	default  upstream's default set (ServiceAccount, TaintNodesByCondition
//	         and DefaultTolerationSeconds enabled by name, as no controller runs)
//	cel5     default + 5 ValidatingAdmissionPolicies, each bound, each
//	         matching every pod create
//	webhook  default + one ValidatingWebhookConfiguration calling an
//	         allow-all HTTPS webhook on loopback
//
// The four take turns, one create each per round, so that noise on a
// shared machine (other processes, etcd's fsyncs) falls on all alike.
// Each set-up reports p50 and p99 of its create latency in µs, and the
// others also what they add over none at the same percentile:
//
//	go test -run '^$' -bench BenchmarkAdmissionCreate -benchtime=1000x ./internal/admission/
func BenchmarkAdmissionCreate(b *testing.B) {
	setups := []string{"none", "default", "cel5", "webhook"}
	creates := make([]func() error, len(setups))
	for i, setup := range setups {
		creates[i] = benchSetup(b, setup)
	}
	lat := make([][]time.Duration, len(setups))
	b.ResetTimer()
	for round := range b.N {
		for j := range setups {
			i := (round + j) % len(setups)
			start := time.Now()
			if err := creates[i](); err != nil {
				b.Fatalf("%s: %v", setups[i], err)
			}
			lat[i] = append(lat[i], time.Since(start))
		}
	}
	b.StopTimer()
	pct := func(l []time.Duration, p int) time.Duration {
		slices.Sort(l)
		return l[(len(l)-1)*p/100]
	}
	base50, base99 := pct(lat[0], 50), pct(lat[0], 99)
	for i, setup := range setups {
		p50, p99 := pct(lat[i], 50), pct(lat[i], 99)
		b.ReportMetric(float64(p50.Microseconds()), setup+"-p50-µs")
		b.ReportMetric(float64(p99.Microseconds()), setup+"-p99-µs")
		if i > 0 {
			b.ReportMetric(float64((p50 - base50).Microseconds()), setup+"-added-p50-µs")
			b.ReportMetric(float64((p99 - base99).Microseconds()), setup+"-added-p99-µs")
		}
	}
}

// benchSetup starts a server for setup and returns a function that
// creates one more pod in it.
func benchSetup(b *testing.B, setup string) func() error {
	cfg := server.Config{}
	if setup == "none" {
		cfg.DisableAdmissionPlugins = admission.DefaultPlugins()
	} else {
		cfg.EnableAdmissionPlugins = []string{"ServiceAccount", "TaintNodesByCondition", "DefaultTolerationSeconds"}
	}
	_, cs := benchStart(b, cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	switch setup {
	case "cel5":
		benchPolicies(b, cs)
	case "webhook":
		benchWebhook(b, cs)
	}
	n := 0
	create := func() error {
		n++
		_, err := cs.CoreV1().Pods("default").Create(ctx, benchPod(fmt.Sprintf("p-%d", n), nil), metav1.CreateOptions{})
		return err
	}
	// Warm up connections, caches and compiled policies.
	for range 20 {
		if err := create(); err != nil {
			b.Fatalf("%s: %v", setup, err)
		}
	}
	return create
}

func benchStart(b *testing.B, cfg server.Config) (*server.Server, kubernetes.Interface) {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.DataDir, cfg.HTTPSPort = b.TempDir(), 0
	cfg.Controllers, cfg.DisableScheduler = []string{"-*"}, true
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		cancel()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		cancel()
		srv.Stop()
	})
	rc, err := clientcmd.BuildConfigFromFlags("", srv.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	rc.ContentType = "application/vnd.kubernetes.protobuf"
	rc.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	rc.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	return srv, kubernetes.NewForConfigOrDie(rc)
}

func benchPod(name string, labels map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}
}

// benchPolicies binds five policies of the kind clusters run; each also
// refuses pods labelled deny=<its name>, so that the benchmark can wait
// until all five are in force.
func benchPolicies(b *testing.B, cs kubernetes.Interface) {
	ctx := context.Background()
	rules := []string{
		"object.spec.containers.all(c, !c.image.endsWith(':latest'))",
		"!has(object.spec.hostNetwork) || !object.spec.hostNetwork",
		"object.metadata.name.size() < 64",
		"object.spec.containers.size() <= 10",
		"object.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || !c.securityContext.privileged)",
	}
	for i, rule := range rules {
		name := fmt.Sprintf("bench-%d", i)
		pol := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{Operations: []admissionregistrationv1.OperationType{"CREATE"},
						Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}}},
				Validations: []admissionregistrationv1.Validation{{
					Expression: fmt.Sprintf("object.metadata.?labels.deny.orValue('') != '%s' && %s", name, rule)}},
			}}
		if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, pol, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		bind := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name,
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
		if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, bind, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	// Measure the steady state: after the server's one-off type checking
	// of the new policies (which builds the OpenAPI schemas).
	benchWaitFor(b, func(int) bool {
		list, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().List(ctx, metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		for _, p := range list.Items {
			if p.Status.ObservedGeneration != p.Generation {
				return false
			}
		}
		return len(list.Items) == len(rules)
	}, "the policies type-checked")
	for i := range rules {
		name := fmt.Sprintf("bench-%d", i)
		benchWaitFor(b, func(try int) bool {
			_, err := cs.CoreV1().Pods("default").Create(ctx, benchPod(fmt.Sprintf("probe-%d-%d", i, try), map[string]string{"deny": name}), metav1.CreateOptions{})
			return apierrors.IsInvalid(err)
		}, "policy "+name+" in force")
	}
}

// benchWebhook registers one validating webhook for pod creates, served
// by an allow-all HTTPS server on loopback, and waits until it is called.
func benchWebhook(b *testing.B, cs kubernetes.Interface) {
	url, caBundle, calls := benchHookServer(b)
	ctx := context.Background()
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "bench"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "allow.bench.rudder.dev",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle},
			Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
			SideEffects:             new(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			FailurePolicy:           new(admissionregistrationv1.Fail),
		}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	benchWaitFor(b, func(try int) bool {
		if _, err := cs.CoreV1().Pods("default").Create(ctx, benchPod(fmt.Sprintf("probe-%d", try), nil), metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
		return calls.Load() > 0
	}, "the webhook called")
}

func benchWaitFor(b *testing.B, cond func(try int) bool, what string) {
	b.Helper()
	for try, deadline := 0, time.Now().Add(15*time.Second); time.Now().Before(deadline); try++ {
		if cond(try) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.Fatalf("timed out waiting for %s", what)
}

// benchHookServer serves an allow-all validating webhook over HTTPS with
// a certificate from its own CA; it returns the URL, the CA bundle and a
// count of the reviews it answered.
func benchHookServer(b *testing.B) (string, []byte, *atomic.Int64) {
	b.Helper()
	now := time.Now()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		b.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "bench webhook"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		b.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		b.Fatal(err)
	}
	calls := &atomic.Int64{}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true}
		review.Request = nil
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(&review)
	})}
	go srv.Serve(ln)
	b.Cleanup(func() { srv.Close() })
	return "https://" + ln.Addr().String() + "/validate", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), calls
}
