package apiserver

// FuzzServeHTTP sends arbitrary requests through the whole server — request
// info, negotiation, decoding, patches, strategies, storage, the watch
// cache — over a real embedded etcd, and checks the promise every HTTP
// server must keep: no input panics it, and every error is a well-formed
// metav1.Status. Run it for a while with
//
//	go test -run='^$' -fuzz=FuzzServeHTTP -fuzztime=60s ./internal/apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"

	"github.com/rudder-dev/rudder/internal/admission"
	"github.com/rudder-dev/rudder/internal/storage"
)

// fuzzRequestTimeout bounds one input: watches and reads that wait for a
// future resourceVersion end with it instead of stalling the fuzzer.
const fuzzRequestTimeout = 500 * time.Millisecond

// panicRecorder is a slog handler that remembers what ServeHTTP's recover
// logs. The recover turns a panic into a plain 500, which the fuzzer would
// otherwise take for an ordinary answer.
type panicRecorder struct {
	mu     sync.Mutex
	panics []string
}

func (p *panicRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (p *panicRecorder) WithAttrs([]slog.Attr) slog.Handler       { return p }
func (p *panicRecorder) WithGroup(string) slog.Handler            { return p }

// Handle records ServeHTTP's "panic serving request", and, should that
// message change, any record that mentions a panic or carries one.
func (p *panicRecorder) Handle(_ context.Context, r slog.Record) error {
	isPanic := strings.Contains(strings.ToLower(r.Message), "panic")
	var b strings.Builder
	fmt.Fprintf(&b, "msg=%s\n", r.Message)
	r.Attrs(func(a slog.Attr) bool {
		isPanic = isPanic || a.Key == "panic"
		fmt.Fprintf(&b, "%s=%v\n", a.Key, a.Value)
		return true
	})
	if !isPanic {
		return nil
	}
	p.mu.Lock()
	p.panics = append(p.panics, b.String())
	p.mu.Unlock()
	return nil
}

func (p *panicRecorder) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.panics
	p.panics = nil
	return out
}

// newFuzzServer starts one API server over an embedded etcd for a whole
// fuzz run (once per worker process, not per input), with a few objects
// for the inputs to find.
func newFuzzServer(f *testing.F) (*Server, *panicRecorder) {
	f.Helper()
	rec := &panicRecorder{}
	prev := slog.Default()
	slog.SetDefault(slog.New(rec))
	f.Cleanup(func() { slog.SetDefault(prev) })

	ctx, cancel := context.WithCancel(context.Background())
	etcd, err := storage.StartEmbedded(ctx, storage.EmbeddedConfig{Dir: f.TempDir()})
	if err != nil {
		cancel()
		f.Fatal(err)
	}
	f.Cleanup(func() {
		cancel()
		etcd.Close()
	})
	s, err := New(Config{Store: storage.NewStore(etcd.Client), WatchCacheCapacity: 1000})
	if err != nil {
		f.Fatal(err)
	}
	s.SetAdmission(admission.NewChain(admission.NamespaceLifecycle{Namespaces: s, Immortal: []string{"default", "kube-system", "kube-public"}}))
	if err := s.Start(ctx); err != nil {
		f.Fatal(err)
	}
	if err := s.EnsureObjects(ctx, fuzzObjects()); err != nil {
		f.Fatal(err)
	}
	s.MarkReady()
	return s, rec
}

func fuzzObjects() []runtime.Object {
	core := corev1.SchemeGroupVersion
	typed := func(obj runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
		obj.GetObjectKind().SetGroupVersionKind(gvk)
		return obj
	}
	labels := map[string]string{"app": "web"}
	containers := []corev1.Container{{Name: "c", Image: "nginx"}}
	return []runtime.Object{
		typed(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, core.WithKind("Namespace")),
		typed(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "demo"}}, core.WithKind("Namespace")),
		typed(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default", Labels: labels}, Data: map[string]string{"k": "v"}}, core.WithKind("ConfigMap")),
		typed(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", Labels: labels},
			Spec: corev1.PodSpec{Containers: containers}}, core.WithKind("Pod")),
		typed(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bound", Namespace: "default"},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: containers}}, core.WithKind("Pod")),
		typed(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: containers}}}},
			appsv1.SchemeGroupVersion.WithKind("Deployment")),
	}
}

// fuzzSeed is one request of the seed corpus.
type fuzzSeed struct {
	method, path, query, accept, contentType, body string
}

const (
	tableAccept    = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	metadataAccept = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json"
	podJSON        = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1","labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}],"resources":{"limits":{"cpu":"1"}}}]}}`
	deployJSON     = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"generateName":"d-"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`
)

var fuzzSeeds = []fuzzSeed{
	// Reads in every shape the server answers in.
	{"GET", "/api/v1/namespaces/default/configmaps/cm", "", "", "", ""},
	{"GET", "/api/v1/namespaces/default/configmaps", "labelSelector=app%3Dweb&limit=1", "application/vnd.kubernetes.protobuf", "", ""},
	{"GET", "/api/v1/pods", "fieldSelector=spec.nodeName%3Dn1", tableAccept, "", ""},
	{"GET", "/apis/apps/v1/deployments", "resourceVersion=0", metadataAccept, "", ""},
	{"GET", "/api/v1/namespaces/default/pods", "limit=1&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiJ3In0", "application/yaml", "", ""},
	{"GET", "/api/v1/namespaces/default/pods/web", "resourceVersion=999999999", "", "", ""},
	{"GET", "/api/v1/namespaces", "resourceVersion=1&resourceVersionMatch=Exact&pretty=true", "", "", ""},
	{"GET", "/api/v1/namespaces/default/pods", "watch=true&timeoutSeconds=1&allowWatchBookmarks=true", "application/vnd.kubernetes.protobuf", "", ""},
	{"GET", "/api/v1/watch/namespaces/default/configmaps/cm", "resourceVersion=1", tableAccept, "", ""},
	{"GET", "/apis/apps/v1/deployments", "watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan", "", "", ""},
	{"GET", "/apis/apps/v1/namespaces/default/deployments/web/scale", "", "", "", ""},
	{"GET", "/api/v1/namespaces/default/pods/web/status", "", "application/yaml", "", ""},
	{"GET", "/api", "", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "", ""},
	{"GET", "/apis/apps", "", "", "", ""},
	{"GET", "/api/v1", "", "", "", ""},
	{"GET", "/openapi/v3/api/v1", "", "", "", ""},
	{"GET", "/readyz", "verbose&exclude=etcd", "", "", ""},
	{"GET", "/version", "", "text/html", "", ""},
	{"GET", "/", "", "", "", ""},
	{"GET", "/metrics", "", "", "", ""},

	// Writes, with each body encoding and patch type.
	{"POST", "/api/v1/namespaces/default/pods", "fieldValidation=Strict", "", "application/json", podJSON},
	{"POST", "/apis/apps/v1/namespaces/default/deployments", "dryRun=All", tableAccept, "", deployJSON},
	{"POST", "/api/v1/namespaces/default/configmaps", "", "application/vnd.kubernetes.protobuf", "application/yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\n  annotations: &a {x: *a}\ndata: {a: b}\n"},
	{"POST", "/api/v1/namespaces", "", "", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"n2"},"spec":{"finalizers":["kubernetes"]}}`},
	{"POST", "/api/v1/nodes", "", "", "", `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"status":{"capacity":{"cpu":"4","pods":"110"}}}`},
	{"POST", "/api/v1/namespaces/default/services", "", "", "", `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"},"spec":{"ports":[{"port":80,"targetPort":"http"}],"type":"NodePort"}}`},
	{"POST", "/apis/batch/v1/namespaces/default/cronjobs", "", "", "", `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj"},"spec":{"schedule":"*/5 * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"x"}]}}}}}}`},
	{"POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "", "", "", `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"r"},"aggregationRule":{"clusterRoleSelectors":[{}]},"rules":[{"verbs":["*"],"resources":["*"],"apiGroups":["*"]}]}`},
	{"POST", "/api/v1/namespaces/default/pods/web/binding", "", "", "", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"web"},"target":{"kind":"Node","name":"n1"}}`},
	{"POST", "/apis/events.k8s.io/v1/namespaces/default/events", "", tableAccept, "", `{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"e1"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"x/y","reportingInstance":"i","action":"Bind","reason":"Scheduled","regarding":{"kind":"Pod","name":"web"},"series":{"count":2,"lastObservedTime":"2026-01-01T00:00:01.000000Z"},"type":"Normal"}`},
	{"GET", "/apis/events.k8s.io/v1/events", "watch=true&timeoutSeconds=1", "application/vnd.kubernetes.protobuf", "", ""},
	{"PUT", "/api/v1/namespaces/default/configmaps/cm", "", "", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","resourceVersion":"1"},"data":{"k":"v2"}}`},
	{"PUT", "/apis/coordination.k8s.io/v1/namespaces/default/leases/l1", "", "", "", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1"},"spec":{"holderIdentity":"me","leaseDurationSeconds":15}}`},
	{"PUT", "/api/v1/namespaces/demo/finalize", "", "", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"demo"},"spec":{"finalizers":[]}}`},
	{"PUT", "/api/v1/namespaces/default/pods/web/status", "", "", "", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}`},
	{"PUT", "/apis/apps/v1/namespaces/default/deployments/web/scale", "", "", "", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":3}}`},
	{"PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale", "", "", "application/merge-patch+json", `{"spec":{"replicas":-1}}`},
	{"PATCH", "/api/v1/namespaces/default/configmaps/cm", "", "", "application/merge-patch+json", `{"data":{"k":null,"n":"1"},"metadata":{"resourceVersion":null}}`},
	{"PATCH", "/api/v1/namespaces/default/configmaps/cm", "", "", "application/json-patch+json", `[{"op":"add","path":"/data/x","value":"1"},{"op":"move","from":"/data/x","path":"/data/y"},{"op":"test","path":"/data/y","value":"1"},{"op":"remove","path":"/metadata/labels"}]`},
	{"PATCH", "/api/v1/namespaces/default/pods/web", "", "", "application/strategic-merge-patch+json", `{"spec":{"containers":[{"name":"c","image":"nginx:2"},{"$patch":"delete","name":"x"}],"$setElementOrder/containers":[{"name":"c"}]},"metadata":{"$retainKeys":["labels"],"finalizers":[{"$patch":"replace"}]}}`},
	{"PATCH", "/apis/apps/v1/namespaces/default/deployments/web/status", "", "", "application/strategic-merge-patch+json", `{"status":{"conditions":[{"type":"Available","status":"True"}],"$patch":"replace"}}`},
	{"PATCH", "/api/v1/namespaces/default/configmaps/cm", "", "", "application/apply-patch+yaml", "data: {a: b}"},
	// strategicpatch panics on objects in a $retainKeys list (found by this
	// fuzzer; applyPatch turns it into a 400).
	{"PATCH", "/api/v1/namespaces/default/pods/web", "", "", "application/strategic-merge-patch+json", `{"metadata":{"$retainKeys":[{}]}}`},
	{"PATCH", "/api/v1/namespaces/default/pods/web", "", "", "application/strategic-merge-patch+json", `{"spec":{"containers":[{"name":{}}]}}`},

	// Deletes: graceful, with options, collections, preconditions.
	{"DELETE", "/api/v1/namespaces/default/pods/bound", "gracePeriodSeconds=30", "", "", `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground","preconditions":{"uid":"x"}}`},
	{"DELETE", "/api/v1/namespaces/default/configmaps", "labelSelector=app%3Dweb&dryRun=All", "", "", ""},
	{"DELETE", "/api/v1/namespaces/demo", "propagationPolicy=Orphan&orphanDependents=true", "", "", ""},
	{"DELETE", "/apis/apps/v1/namespaces/default/deployments/web", "", "", "application/yaml", "kind: DeleteOptions\napiVersion: v1\ngracePeriodSeconds: -5\n"},

	// Garbage the server must refuse politely.
	{"POST", "/api/v1/namespaces/default/configmaps", "fieldValidation=Bogus", "", "text/plain", "hello"},
	{"POST", "/api/v1/namespaces/default/configmaps", "", "application/xml", "application/json", `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"x"}}`},
	{"POST", "/api/v1/namespaces/default/configmaps", "", "", "application/vnd.kubernetes.protobuf", "k8s\x00\n\x0f\n\x02v1\x12\tConfigMap\x12\x03\n\x01x"},
	{"PUT", "/api/v1/namespaces/default/configmaps", "", "", "", "{}"},
	{"BREW", "/api/v1/namespaces/default/configmaps/cm", "", "", "", ""},
	{"GET", "/api/v1/namespaces/default/configmaps/cm/extra/parts", "", "", "", ""},
	{"GET", "/api/v1/namespaces/%ff/pods/%00", "", "", "", ""},
	{"GET", "/apis/\xff/v1/\xfe", "", "", "", ""},
	{"PROPFIND", "/\xff", "", "", "", ""},
	{"GET", "/apis/apps/v1/namespaces/default/deployments/web/\xff", "", "", "", ""},
}

func FuzzServeHTTP(f *testing.F) {
	s, panics := newFuzzServer(f)
	for _, sd := range fuzzSeeds {
		f.Add(sd.method, sd.path, sd.query, sd.accept, sd.contentType, []byte(sd.body))
	}
	f.Fuzz(func(t *testing.T, method, path, rawQuery, accept, contentType string, body []byte) {
		r := fuzzServeRequest(method, path, rawQuery, accept, contentType, body)
		if r == nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), fuzzRequestTimeout)
		defer cancel()
		// Earlier inputs may have deleted the fixtures; put them back so
		// every input finds objects to read, patch, scale and bind. (An
		// input may also have made that impossible, e.g. by marking the
		// namespace terminating through /status: then it stays so.)
		s.EnsureObjects(ctx, fuzzObjects())
		r = r.WithContext(ctx)
		w := httptest.NewRecorder()
		start := time.Now()
		func() {
			defer func() {
				// A panic escaping ServeHTTP's own recover (from its
				// deferred metrics, say) would take the connection down.
				if p := recover(); p != nil {
					t.Fatalf("%s %s?%s: panic escaped ServeHTTP: %v", method, path, rawQuery, p)
				}
			}()
			s.ServeHTTP(w, r)
		}()
		if took := time.Since(start); took > 20*fuzzRequestTimeout {
			t.Errorf("%s %s?%s took %s, past its %s context", method, path, rawQuery, took, fuzzRequestTimeout)
		}
		if p := panics.take(); len(p) > 0 {
			t.Fatalf("%s %s?%s (Accept %q, Content-Type %q, body %q) panicked:\n%s", method, path, rawQuery, accept, contentType, body, p[0])
		}
		checkResponse(t, s, r, w)
	})
}

// fuzzServeRequest builds the request net/http would deliver, or nil for
// input it would refuse before the handler (bad method, control bytes in
// the query or headers).
func fuzzServeRequest(method, path, rawQuery, accept, contentType string, body []byte) *http.Request {
	if !validMethodToken(method) || !validHeaderValue(accept) || !validHeaderValue(contentType) {
		return nil
	}
	for i := 0; i < len(rawQuery); i++ {
		if c := rawQuery[i]; c <= ' ' || c == 0x7f || c == '#' {
			return nil
		}
	}
	// The path is the decoded one, so any byte can reach it (%00, %ff).
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	r := httptest.NewRequest(http.MethodGet, "/", bytes.NewReader(body))
	r.Method = method
	r.URL.Path, r.URL.RawQuery = path, rawQuery
	r.RequestURI = r.URL.RequestURI()
	// net/http trims the spaces and tabs around header values.
	if v := strings.Trim(accept, " \t"); v != "" {
		r.Header.Set("Accept", v)
	}
	if v := strings.Trim(contentType, " \t"); v != "" {
		r.Header.Set("Content-Type", v)
	}
	return r
}

// checkResponse holds every answer to what a client may rely on: a real
// status code, a Content-Length that matches, and errors as metav1.Status.
func checkResponse(t *testing.T, s *Server, r *http.Request, w *httptest.ResponseRecorder) {
	t.Helper()
	desc := fmt.Sprintf("%s %s?%s -> %d", r.Method, r.URL.Path, r.URL.RawQuery, w.Code)
	if w.Code < 100 || w.Code > 599 {
		t.Fatalf("%s: invalid status code", desc)
	}
	body := w.Body.Bytes()
	if cl := w.Header().Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(body)) {
		t.Fatalf("%s: Content-Length %s for %d bytes", desc, cl, len(body))
	}
	media, _, _ := mime.ParseMediaType(w.Header().Get("Content-Type"))
	if w.Code >= 200 && w.Code < 300 {
		// Watches stream frames and the empty body of a request whose
		// context ended is no document; everything else JSON must parse.
		if media == mediaJSON && len(body) > 0 && !isWatch(r) && !json.Valid(body) {
			t.Fatalf("%s: invalid JSON body %q", desc, body)
		}
		return
	}
	var dec runtime.Decoder
	switch media {
	case mediaJSON:
		dec = s.codecs.json
	case mediaYAML:
		dec = s.codecs.yaml
	case mediaProtobuf:
		dec = s.codecs.proto
	default:
		// Health checks answer failures in text, as upstream.
		if !strings.HasPrefix(r.URL.Path, "/healthz") && !strings.HasPrefix(r.URL.Path, "/livez") && !strings.HasPrefix(r.URL.Path, "/readyz") {
			t.Fatalf("%s: error answered as %q: %q", desc, w.Header().Get("Content-Type"), body)
		}
		return
	}
	st := &metav1.Status{}
	obj, gvk, err := dec.Decode(body, nil, st)
	if err != nil {
		t.Fatalf("%s: error body is not a Status: %v: %q", desc, err, body)
	}
	if obj != st || gvk.Kind != "Status" || gvk.Version != "v1" || gvk.Group != "" {
		t.Fatalf("%s: error body is %v, not a v1 Status: %q", desc, gvk, body)
	}
	if int(st.Code) != w.Code || st.Status != metav1.StatusFailure {
		t.Fatalf("%s: Status says code %d, status %q", desc, st.Code, st.Status)
	}
}

func isWatch(r *http.Request) bool {
	info := parseRequestInfo(r)
	return info.Verb == "watch"
}
