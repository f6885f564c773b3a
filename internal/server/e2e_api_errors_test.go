package server

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestAPIErrors checks that each failure comes back as a metav1.Status
// with upstream's HTTP code and reason, which is what clients branch on
// (apierrors.IsConflict, IsNotFound, ...).
func TestAPIErrors(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns := e.namespace(t, "errs")
	cmPath := "/api/v1/namespaces/" + ns + "/configmaps"
	existing, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, testConfigMap("exists", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A stale copy: the object is updated once after it was read.
	stale := existing.DeepCopy()
	fresh := existing.DeepCopy()
	fresh.Data["k"] = "v2"
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	// raw is the rest.Interface for requests client-go's typed methods
	// cannot make. Retries are off so an error is seen as the server sent it.
	raw := e.jcs.CoreV1().RESTClient()
	post := func(path, contentType string, body []byte) error {
		return raw.Post().AbsPath(path).SetHeader("Content-Type", contentType).Body(body).MaxRetries(0).Do(ctx).Error()
	}
	futureRV := strconv.FormatInt(e.currentRevision(t)+1_000_000, 10)
	noCreds := kubernetes.NewForConfigOrDie(rest.AnonymousClientConfig(e.cfg))
	janeCfg := rest.CopyConfig(e.cfg)
	janeCfg.Impersonate = rest.ImpersonationConfig{UserName: "jane"}
	jane := kubernetes.NewForConfigOrDie(janeCfg)

	cases := []struct {
		name   string
		call   func() error
		code   int32
		reason metav1.StatusReason
		// check looks at the rest of the Status; nil checks nothing more.
		check func(t *testing.T, st metav1.Status)
		slow  bool // waits out the server's freshness timeout (~3 s)
	}{
		{name: "malformed json body", code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest,
			call: func() error { return post(cmPath, "application/json", []byte(`{"metadata": {`)) }},
		{name: "body over 3 MiB", code: http.StatusRequestEntityTooLarge, reason: metav1.StatusReasonRequestEntityTooLarge,
			call: func() error {
				big := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"` + strings.Repeat("x", 3<<20) + `"}}`
				return post(cmPath, "application/json", []byte(big))
			}},
		{name: "unknown resource", code: http.StatusNotFound, reason: metav1.StatusReasonNotFound,
			call: func() error {
				return raw.Get().AbsPath("/api/v1/namespaces/" + ns + "/widgets").MaxRetries(0).Do(ctx).Error()
			}},
		{name: "unknown group", code: http.StatusNotFound, reason: metav1.StatusReasonNotFound,
			call: func() error {
				return raw.Get().AbsPath("/apis/example.com/v1/widgets").MaxRetries(0).Do(ctx).Error()
			}},
		{name: "name in body differs from url", code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest,
			call: func() error {
				body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"}}`
				return raw.Put().AbsPath(cmPath+"/exists").SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx).Error()
			}},
		{name: "already exists", code: http.StatusConflict, reason: metav1.StatusReasonAlreadyExists,
			call: func() error {
				_, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, testConfigMap("exists", nil), metav1.CreateOptions{})
				return err
			},
			check: func(t *testing.T, st metav1.Status) {
				if st.Details == nil || st.Details.Name != "exists" || st.Details.Kind != "configmaps" {
					t.Errorf("details %+v", st.Details)
				}
			}},
		{name: "stale update", code: http.StatusConflict, reason: metav1.StatusReasonConflict,
			call: func() error {
				_, err := e.cs.CoreV1().ConfigMaps(ns).Update(ctx, stale, metav1.UpdateOptions{})
				return err
			}},
		{name: "invalid object", code: http.StatusUnprocessableEntity, reason: metav1.StatusReasonInvalid,
			call: func() error {
				_, err := e.cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, metav1.CreateOptions{})
				return err
			},
			check: func(t *testing.T, st metav1.Status) {
				if st.Details == nil || st.Details.Kind != "Pod" || st.Details.Name != "empty" {
					t.Fatalf("details %+v", st.Details)
				}
				for _, c := range st.Details.Causes {
					if c.Field == "spec.containers" && c.Type == metav1.CauseTypeFieldValueRequired {
						return
					}
				}
				t.Errorf("no Required cause for spec.containers in %+v", st.Details.Causes)
			}},
		{name: "post to a named object", code: http.StatusMethodNotAllowed, reason: metav1.StatusReasonMethodNotAllowed,
			call: func() error {
				return post(cmPath+"/exists", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"exists"}}`))
			}},
		{name: "future resourceVersion on get", code: http.StatusGatewayTimeout, reason: metav1.StatusReasonTimeout, slow: true,
			call: func() error {
				return raw.Get().AbsPath(cmPath+"/exists").Param("resourceVersion", futureRV).MaxRetries(0).Do(ctx).Error()
			},
			check: wantTooLargeRV},
		{name: "future resourceVersion on list", code: http.StatusGatewayTimeout, reason: metav1.StatusReasonTimeout, slow: true,
			call: func() error {
				return raw.Get().AbsPath(cmPath).Param("resourceVersion", futureRV).MaxRetries(0).Do(ctx).Error()
			},
			check: wantTooLargeRV},
		{name: "future resourceVersion on watch", code: http.StatusGatewayTimeout, reason: metav1.StatusReasonTimeout, slow: true,
			call: func() error {
				return raw.Get().AbsPath(cmPath).Param("watch", "true").Param("resourceVersion", futureRV).MaxRetries(0).Do(ctx).Error()
			},
			check: wantTooLargeRV},
		{name: "no credentials", code: http.StatusUnauthorized, reason: metav1.StatusReasonUnauthorized,
			call: func() error {
				_, err := noCreds.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
				return err
			}},
		{name: "impersonated user may not list", code: http.StatusForbidden, reason: metav1.StatusReasonForbidden,
			call: func() error {
				_, err := jane.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
				return err
			},
			check: wantMessage(`configmaps is forbidden: User "jane" cannot list resource "configmaps" in API group "" in the namespace "errs"`)},
		{name: "impersonated user may not get", code: http.StatusForbidden, reason: metav1.StatusReasonForbidden,
			call: func() error {
				_, err := jane.CoreV1().ConfigMaps(ns).Get(ctx, "exists", metav1.GetOptions{})
				return err
			},
			check: wantMessage(`configmaps "exists" is forbidden: User "jane" cannot get resource "configmaps" in API group "" in the namespace "errs"`)},
		{name: "impersonated user may not create cluster-scoped", code: http.StatusForbidden, reason: metav1.StatusReasonForbidden,
			call: func() error {
				_, err := jane.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "jane"}}, metav1.CreateOptions{})
				return err
			},
			check: wantMessage(`namespaces is forbidden: User "jane" cannot create resource "namespaces" in API group "" at the cluster scope`)},
		{name: "strict field validation", code: http.StatusBadRequest, reason: metav1.StatusReasonBadRequest,
			call: func() error {
				body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"strict"},"bogus":1}`
				return raw.Post().AbsPath(cmPath).Param("fieldValidation", "Strict").SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx).Error()
			},
			check: func(t *testing.T, st metav1.Status) {
				if !strings.Contains(st.Message, `unknown field "bogus"`) {
					t.Errorf("message %q does not name the unknown field", st.Message)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.slow {
				t.Parallel() // the 3-second waits side by side
			}
			start := time.Now()
			st := wantStatus(t, tc.call(), tc.code, tc.reason)
			if st.Status != metav1.StatusFailure {
				t.Errorf("status %q, want Failure", st.Status)
			}
			if tc.check != nil {
				tc.check(t, st)
			}
			if tc.slow && time.Since(start) > 15*time.Second {
				t.Errorf("took %v: the server should give up after a few seconds", time.Since(start))
			}
		})
	}

	t.Run("warn field validation", func(t *testing.T) {
		rec := &warningRecorder{}
		cfg := rest.CopyConfig(e.cfg)
		cfg.WarningHandler = rec
		cfg.ContentType = "application/json"
		c := kubernetes.NewForConfigOrDie(cfg).CoreV1().RESTClient()
		body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"warned"},"bogus":1}`
		if err := c.Post().AbsPath(cmPath).Param("fieldValidation", "Warn").SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx).Error(); err != nil {
			t.Fatal(err)
		}
		warnings := rec.all()
		if len(warnings) != 1 || !strings.Contains(warnings[0], `unknown field "bogus"`) {
			t.Fatalf("warnings %q, want one naming the unknown field", warnings)
		}
		if _, err := e.cs.CoreV1().ConfigMaps(ns).Get(ctx, "warned", metav1.GetOptions{}); err != nil {
			t.Fatalf("a warned create must still store the object: %v", err)
		}
	})
}

func wantTooLargeRV(t *testing.T, st metav1.Status) {
	t.Helper()
	if st.Details == nil || len(st.Details.Causes) == 0 || st.Details.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge {
		t.Errorf("want a ResourceVersionTooLarge cause, got %+v", st.Details)
	}
}

func wantMessage(msg string) func(t *testing.T, st metav1.Status) {
	return func(t *testing.T, st metav1.Status) {
		t.Helper()
		if st.Message != msg {
			t.Errorf("message\n got %q\nwant %q", st.Message, msg)
		}
	}
}

// currentRevision returns etcd's current revision, from which a
// resourceVersion far in the future is made.
func (e *apiEnv) currentRevision(t *testing.T) int64 {
	t.Helper()
	rev, err := e.store().CurrentRevision(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return rev
}
