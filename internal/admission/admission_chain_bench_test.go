package admission_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/rudder-dev/rudder/internal/admission"
	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/server"
)

// BenchmarkAdmissionChain measures admission alone: the chain's Admit and
// Validate on a pod create, in-process, reading the caches of a real API
// server, without HTTP, decoding and etcd around it. Its p99 is
// admission's own tail, which BenchmarkAdmissionCreate's p99 (dominated
// by etcd's fsyncs on a shared machine) cannot show. The set-ups are
// BenchmarkAdmissionCreate's, measured one after another on one server:
//
//	go test -run '^$' -bench BenchmarkAdmissionChain -benchtime=2000x ./internal/admission/
func BenchmarkAdmissionChain(b *testing.B) {
	enabled := []string{"ServiceAccount", "TaintNodesByCondition", "DefaultTolerationSeconds"}
	srv, cs := benchStart(b, server.Config{EnableAdmissionPlugins: enabled})
	ctx := context.Background()
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}},
		metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		b.Fatal(err)
	}
	names, err := admission.EnabledPlugins(enabled, nil)
	if err != nil {
		b.Fatal(err)
	}
	chain := admission.Build(names, nil, admission.Deps{Namespaces: srv.API, Objects: srv.API, Status: srv.API,
		Resources: registry.AdmissionResources()})
	admin := &auth.User{Name: "admin", Groups: []string{auth.SystemPrivilegedGroup, auth.AllAuthenticated}}
	n := 0
	run := func(c *admission.Chain) error {
		n++
		pod := benchPod(fmt.Sprintf("c-%d", n), nil)
		pod.Namespace = "default"
		a := &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Pod"),
			Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "default", Name: pod.Name, Object: pod, User: admin}
		actx := admit.WithWarnings(ctx, func(string) {})
		if err := c.Admit(actx, a); err != nil {
			return err
		}
		return c.Validate(actx, a)
	}
	measure := func(setup string, c *admission.Chain) {
		for range 50 {
			if err := run(c); err != nil {
				b.Fatalf("%s: %v", setup, err)
			}
		}
		lat := make([]time.Duration, 0, b.N)
		for range b.N {
			start := time.Now()
			if err := run(c); err != nil {
				b.Fatalf("%s: %v", setup, err)
			}
			lat = append(lat, time.Since(start))
		}
		slices.Sort(lat)
		b.ReportMetric(float64(lat[(len(lat)-1)/2].Nanoseconds())/1000, setup+"-p50-µs")
		b.ReportMetric(float64(lat[(len(lat)-1)*99/100].Nanoseconds())/1000, setup+"-p99-µs")
	}
	b.ResetTimer()
	measure("none", admission.NewChain())
	measure("default", chain)
	benchPolicies(b, cs)
	measure("cel5", chain)
	for i := range 5 {
		name := fmt.Sprintf("bench-%d", i)
		if err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	benchWaitFor(b, func(try int) bool {
		_, err := cs.CoreV1().Pods("default").Create(ctx, benchPod(fmt.Sprintf("gone-%d", try), map[string]string{"deny": "bench-4"}), metav1.CreateOptions{})
		return err == nil
	}, "the policies' bindings gone")
	benchWebhook(b, cs)
	measure("webhook", chain)
}
