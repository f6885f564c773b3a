package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/storage"
)

// newApplyServer starts an API server over a real embedded etcd, served
// in process through ServeHTTP.
func newApplyServer(tb testing.TB) *Server {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	etcd, err := storage.StartEmbedded(ctx, storage.EmbeddedConfig{Dir: tb.TempDir()})
	if err != nil {
		cancel()
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cancel()
		etcd.Close()
	})
	s, err := New(Config{Store: storage.NewStore(etcd.Client), WatchCacheCapacity: 1000})
	if err != nil {
		tb.Fatal(err)
	}
	if err := s.Start(ctx); err != nil {
		tb.Fatal(err)
	}
	s.MarkReady()
	return s
}

// call is one request: method, path with query, body and its media type;
// the User-Agent is kubectl's unless the test says otherwise.
type call struct {
	method, path, media, body, userAgent string
}

func (c call) do(tb testing.TB, s *Server) *httptest.ResponseRecorder {
	tb.Helper()
	r := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
	if c.media != "" {
		r.Header.Set("Content-Type", c.media)
	}
	r.Header.Set("Accept", "application/json")
	ua := c.userAgent
	if ua == "" {
		ua = "kubectl/v1.36.3 (linux/amd64) kubernetes/abcdef"
	}
	r.Header.Set("User-Agent", ua)
	w := httptest.NewRecorder()
	s.ServeHTTP(w, r)
	return w
}

// must does c and fails the test unless the answer has code.
func (c call) must(t *testing.T, s *Server, code int) *httptest.ResponseRecorder {
	t.Helper()
	w := c.do(t, s)
	if w.Code != code {
		t.Fatalf("%s %s: %d, want %d: %s", c.method, c.path, w.Code, code, w.Body.String())
	}
	return w
}

func decodeInto(t *testing.T, w *httptest.ResponseRecorder, into interface{}) {
	t.Helper()
	if err := json.Unmarshal(w.Body.Bytes(), into); err != nil {
		t.Fatalf("decode %s: %v", w.Body.String(), err)
	}
}

func statusOf(t *testing.T, w *httptest.ResponseRecorder) metav1.Status {
	var st metav1.Status
	decodeInto(t, w, &st)
	return st
}

// managerEntry returns the entry of a manager, failing when there is none.
func managerEntry(t *testing.T, m metav1.Object, manager, subresource string) metav1.ManagedFieldsEntry {
	t.Helper()
	for _, e := range m.GetManagedFields() {
		if e.Manager == manager && e.Subresource == subresource {
			return e
		}
	}
	t.Fatalf("no managedFields entry of %q (subresource %q) in %+v", manager, subresource, m.GetManagedFields())
	return metav1.ManagedFieldsEntry{}
}

// owns reports whether an entry owns the field at path.
func owns(t *testing.T, e metav1.ManagedFieldsEntry, path ...interface{}) bool {
	t.Helper()
	set := &fieldpath.Set{}
	if err := set.FromJSON(strings.NewReader(string(e.FieldsV1.Raw))); err != nil {
		t.Fatal(err)
	}
	return set.Has(fieldpath.MakePathOrDie(path...))
}

const deploymentsPath = "/apis/apps/v1/namespaces/default/deployments"

func deploymentYAML(name string, replicas int, extra string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: ` + name + `
spec:
  replicas: ` + strconv.Itoa(replicas) + `
  selector:
    matchLabels: {app: ` + name + `}
  template:
    metadata:
      labels: {app: ` + name + `}
    spec:
      containers:
      - name: app
        image: nginx
` + extra
}

// TestManagedFieldsOnWrites checks the Update entries every write records:
// who (fieldManager, else the User-Agent's product), which operation,
// version and subresource, and which fields.
func TestManagedFieldsOnWrites(t *testing.T) {
	s := newApplyServer(t)
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"%s"},"data":{"a":"1"}}`
	create := func(name, query, ua string) *corev1.ConfigMap {
		w := call{method: "POST", path: "/api/v1/namespaces/default/configmaps" + query, media: mediaJSON,
			body: strings.Replace(cm, "%s", name, 1), userAgent: ua}.must(t, s, http.StatusCreated)
		var out corev1.ConfigMap
		decodeInto(t, w, &out)
		return &out
	}

	t.Run("create names the User-Agent's product", func(t *testing.T) {
		out := create("ua", "", "helm/v3.17.0 (linux)")
		e := managerEntry(t, out, "helm", "")
		if e.Operation != metav1.ManagedFieldsOperationUpdate || e.APIVersion != "v1" || e.Time == nil || e.FieldsType != "FieldsV1" {
			t.Errorf("entry %+v", e)
		}
		if !owns(t, e, "data", "a") {
			t.Errorf("helm does not own data.a: %s", e.FieldsV1.Raw)
		}
	})
	t.Run("create names the fieldManager", func(t *testing.T) {
		out := create("fm", "?fieldManager=my-tool", "")
		if len(out.ManagedFields) != 1 || out.ManagedFields[0].Manager != "my-tool" {
			t.Errorf("managedFields %+v", out.ManagedFields)
		}
	})
	t.Run("update adds its manager's entry", func(t *testing.T) {
		out := create("upd", "", "")
		out.Data["b"] = "2"
		body, _ := json.Marshal(out)
		w := call{method: "PUT", path: "/api/v1/namespaces/default/configmaps/upd?fieldManager=editor", media: mediaJSON, body: string(body)}.must(t, s, http.StatusOK)
		var got corev1.ConfigMap
		decodeInto(t, w, &got)
		if e := managerEntry(t, &got, "editor", ""); !owns(t, e, "data", "b") || owns(t, e, "data", "a") {
			t.Errorf("editor's fields: %s", e.FieldsV1.Raw)
		}
		managerEntry(t, &got, "kubectl", "")
	})
	t.Run("an update that changes nothing writes nothing", func(t *testing.T) {
		out := create("noop", "", "")
		body, _ := json.Marshal(out)
		w := call{method: "PUT", path: "/api/v1/namespaces/default/configmaps/noop?fieldManager=other", media: mediaJSON, body: string(body)}.must(t, s, http.StatusOK)
		var got corev1.ConfigMap
		decodeInto(t, w, &got)
		if got.ResourceVersion != out.ResourceVersion {
			t.Errorf("resourceVersion %s → %s for a no-op update", out.ResourceVersion, got.ResourceVersion)
		}
	})
	t.Run("an empty managedFields list clears them", func(t *testing.T) {
		out := create("reset", "", "")
		// omitempty drops an empty list: write it out by hand.
		var m map[string]interface{}
		raw, _ := json.Marshal(out)
		json.Unmarshal(raw, &m)
		m["metadata"].(map[string]interface{})["managedFields"] = []interface{}{}
		body, _ := json.Marshal(m)
		w := call{method: "PUT", path: "/api/v1/namespaces/default/configmaps/reset", media: mediaJSON, body: string(body)}.must(t, s, http.StatusOK)
		var got corev1.ConfigMap
		decodeInto(t, w, &got)
		if len(got.ManagedFields) != 0 {
			t.Errorf("managedFields after reset: %+v", got.ManagedFields)
		}
	})
	t.Run("invalid managedFields sent on update are ignored", func(t *testing.T) {
		out := create("invalid", "", "")
		out.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "x", Operation: "Bogus", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}}}
		out.Data["c"] = "3"
		body, _ := json.Marshal(out)
		w := call{method: "PUT", path: "/api/v1/namespaces/default/configmaps/invalid", media: mediaJSON, body: string(body)}.must(t, s, http.StatusOK)
		var got corev1.ConfigMap
		decodeInto(t, w, &got)
		for _, e := range got.ManagedFields {
			if e.Manager == "x" {
				t.Errorf("invalid entry kept: %+v", got.ManagedFields)
			}
		}
		managerEntry(t, &got, "kubectl", "")
	})
	t.Run("merge patch records the patcher", func(t *testing.T) {
		create("mp", "", "")
		w := call{method: "PATCH", path: "/api/v1/namespaces/default/configmaps/mp?fieldManager=patcher", media: mediaMergePatch,
			body: `{"data":{"p":"q"}}`}.must(t, s, http.StatusOK)
		var got corev1.ConfigMap
		decodeInto(t, w, &got)
		if e := managerEntry(t, &got, "patcher", ""); !owns(t, e, "data", "p") {
			t.Errorf("patcher's fields: %s", e.FieldsV1.Raw)
		}
	})
	t.Run("the server's own creates are kube-apiserver's", func(t *testing.T) {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "boot", Labels: map[string]string{"a": "b"}}}
		if err := s.EnsureObjects(context.Background(), []runtime.Object{ns}); err != nil {
			t.Fatal(err)
		}
		w := call{method: "GET", path: "/api/v1/namespaces/boot"}.must(t, s, http.StatusOK)
		var got corev1.Namespace
		decodeInto(t, w, &got)
		if e := managerEntry(t, &got, "kube-apiserver", ""); !owns(t, e, "metadata", "labels", "a") {
			t.Errorf("kube-apiserver's fields: %s", e.FieldsV1.Raw)
		}
	})
	t.Run("scale write records the scale subresource", func(t *testing.T) {
		call{method: "PATCH", path: deploymentsPath + "/sc?fieldManager=kubectl", media: mediaApplyPatchYAML,
			body: deploymentYAML("sc", 1, "")}.must(t, s, http.StatusCreated)
		call{method: "PATCH", path: deploymentsPath + "/sc/scale?fieldManager=scaler", media: mediaMergePatch,
			body: `{"spec":{"replicas":4}}`}.must(t, s, http.StatusOK)
		w := call{method: "GET", path: deploymentsPath + "/sc"}.must(t, s, http.StatusOK)
		var got appsv1.Deployment
		decodeInto(t, w, &got)
		if e := managerEntry(t, &got, "scaler", "scale"); !owns(t, e, "spec", "replicas") || e.APIVersion != "apps/v1" {
			t.Errorf("scaler's entry %+v %s", e, e.FieldsV1.Raw)
		}
		// The applier lost replicas to the scaler: applying it again is a
		// conflict naming the scale writer.
		w = call{method: "PATCH", path: deploymentsPath + "/sc?fieldManager=kubectl", media: mediaApplyPatchYAML,
			body: deploymentYAML("sc", 2, "")}.must(t, s, http.StatusConflict)
		if st := statusOf(t, w); st.Message != `Apply failed with 1 conflict: conflict with "scaler" with subresource "scale" using apps/v1: .spec.replicas` {
			t.Errorf("conflict %q", st.Message)
		}
	})
	t.Run("status write records the status subresource", func(t *testing.T) {
		call{method: "PATCH", path: deploymentsPath + "/st?fieldManager=kubectl", media: mediaApplyPatchYAML,
			body: deploymentYAML("st", 1, "")}.must(t, s, http.StatusCreated)
		w := call{method: "PATCH", path: deploymentsPath + "/st/status?fieldManager=ctrl", media: mediaMergePatch,
			body: `{"status":{"replicas":1,"observedGeneration":1}}`}.must(t, s, http.StatusOK)
		var got appsv1.Deployment
		decodeInto(t, w, &got)
		if e := managerEntry(t, &got, "ctrl", "status"); !owns(t, e, "status", "replicas") {
			t.Errorf("ctrl's fields: %s", e.FieldsV1.Raw)
		}
	})
}

// TestWriteOptionsValidated checks the 422s upstream gives for bad write
// options, before anything is read or written.
func TestWriteOptionsValidated(t *testing.T) {
	s := newApplyServer(t)
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`
	long := strings.Repeat("m", 129)
	cases := []struct {
		name    string
		c       call
		code    int
		message string
	}{
		{"fieldManager too long", call{method: "POST", path: "/api/v1/namespaces/default/configmaps?fieldManager=" + long, media: mediaJSON, body: cm},
			http.StatusUnprocessableEntity, `CreateOptions.meta.k8s.io "" is invalid: fieldManager: Too long: may not be more than 128 bytes`},
		{"dryRun not All", call{method: "POST", path: "/api/v1/namespaces/default/configmaps?dryRun=Some", media: mediaJSON, body: cm},
			http.StatusUnprocessableEntity, `CreateOptions.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["Some"]: supported values: "All"`},
		{"fieldValidation unknown", call{method: "PUT", path: "/api/v1/namespaces/default/configmaps/x?fieldValidation=Loud", media: mediaJSON, body: cm},
			http.StatusUnprocessableEntity, `UpdateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Loud"`},
		{"apply without fieldManager", call{method: "PATCH", path: "/api/v1/namespaces/default/configmaps/x", media: mediaApplyPatchYAML, body: cm},
			http.StatusUnprocessableEntity, `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`},
		{"force on a merge patch", call{method: "PATCH", path: "/api/v1/namespaces/default/configmaps/x?force=true", media: mediaMergePatch, body: `{}`},
			http.StatusUnprocessableEntity, `PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch`},
		{"unknown patch type", call{method: "PATCH", path: "/api/v1/namespaces/default/configmaps/x", media: "application/apply-patch+cbor", body: `{}`},
			http.StatusUnsupportedMediaType, `accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.c.must(t, s, tc.code)
			if st := statusOf(t, w); !strings.Contains(st.Message, tc.message) {
				t.Errorf("message %q, want it to contain %q", st.Message, tc.message)
			}
		})
	}
}

// TestServerSideApply runs apply through the whole write path: create,
// no-op, conflicts and force, removal of fields a manager stops applying,
// the spec/status split, dry runs and field validation.
func TestServerSideApply(t *testing.T) {
	s := newApplyServer(t)
	apply := func(name, query, body string) call {
		return call{method: "PATCH", path: deploymentsPath + "/" + name + "?" + query, media: mediaApplyPatchYAML, body: body}
	}
	get := func(t *testing.T, name string) *appsv1.Deployment {
		w := call{method: "GET", path: deploymentsPath + "/" + name}.must(t, s, http.StatusOK)
		var d appsv1.Deployment
		decodeInto(t, w, &d)
		return &d
	}

	t.Run("apply creates, then a repeat is a no-op", func(t *testing.T) {
		w := apply("web", "fieldManager=kubectl", deploymentYAML("web", 2, "")).must(t, s, http.StatusCreated)
		var d appsv1.Deployment
		decodeInto(t, w, &d)
		e := managerEntry(t, &d, "kubectl", "")
		if e.Operation != metav1.ManagedFieldsOperationApply || !owns(t, e, "spec", "replicas") {
			t.Errorf("entry %+v %s", e, e.FieldsV1.Raw)
		}
		if d.Spec.RevisionHistoryLimit == nil || *d.Spec.RevisionHistoryLimit != 10 {
			t.Errorf("defaults not applied: %+v", d.Spec)
		}
		if owns(t, e, "spec", "revisionHistoryLimit") {
			t.Error("the applier owns a default it did not apply")
		}
		again := apply("web", "fieldManager=kubectl", deploymentYAML("web", 2, "")).must(t, s, http.StatusOK)
		var d2 appsv1.Deployment
		decodeInto(t, again, &d2)
		if d2.ResourceVersion != d.ResourceVersion {
			t.Errorf("repeated apply wrote: %s → %s", d.ResourceVersion, d2.ResourceVersion)
		}
	})
	t.Run("conflict names the other manager, force takes the field", func(t *testing.T) {
		body := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"csa"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"csa"}},"template":{"metadata":{"labels":{"app":"csa"}},"spec":{"containers":[{"name":"app","image":"nginx"}]}}}}`
		call{method: "POST", path: deploymentsPath + "?fieldManager=kubectl-client-side-apply", media: mediaJSON, body: body}.must(t, s, http.StatusCreated)
		w := apply("csa", "fieldManager=mgr", deploymentYAML("csa", 3, "")).must(t, s, http.StatusConflict)
		st := statusOf(t, w)
		want := `Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using apps/v1: .spec.replicas`
		if st.Message != want || st.Reason != metav1.StatusReasonConflict {
			t.Errorf("conflict %q (%s), want %q", st.Message, st.Reason, want)
		}
		if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != ".spec.replicas" {
			t.Errorf("causes %+v", st.Details)
		}
		if d := get(t, "csa"); *d.Spec.Replicas != 1 {
			t.Errorf("conflicting apply changed replicas to %d", *d.Spec.Replicas)
		}
		w = apply("csa", "fieldManager=mgr&force=true", deploymentYAML("csa", 3, "")).must(t, s, http.StatusOK)
		var d appsv1.Deployment
		decodeInto(t, w, &d)
		if *d.Spec.Replicas != 3 {
			t.Errorf("forced apply: replicas %d", *d.Spec.Replicas)
		}
		if e := managerEntry(t, &d, "kubectl-client-side-apply", ""); owns(t, e, "spec", "replicas") {
			t.Error("the old manager still owns spec.replicas after force")
		}
	})
	t.Run("fields no longer applied are removed", func(t *testing.T) {
		labels := func(l string) string { return "  labels: {" + l + "}\n" }
		body := func(l string) string {
			return strings.Replace(deploymentYAML("lbl", 1, ""), "  name: lbl\n", "  name: lbl\n"+labels(l), 1)
		}
		apply("lbl", "fieldManager=kubectl", body("a: '1', b: '2'")).must(t, s, http.StatusCreated)
		apply("lbl", "fieldManager=kubectl", body("a: '1'")).must(t, s, http.StatusOK)
		if d := get(t, "lbl"); d.Labels["b"] != "" || d.Labels["a"] != "1" {
			t.Errorf("labels %v, want only a", d.Labels)
		}
	})
	t.Run("status applied to the main resource is ignored", func(t *testing.T) {
		w := apply("ss", "fieldManager=kubectl", deploymentYAML("ss", 1, "status:\n  replicas: 7\n")).must(t, s, http.StatusCreated)
		var d appsv1.Deployment
		decodeInto(t, w, &d)
		if d.Status.Replicas != 0 {
			t.Errorf("status.replicas %d set through the main resource", d.Status.Replicas)
		}
		if owns(t, managerEntry(t, &d, "kubectl", ""), "status", "replicas") {
			t.Error("the applier owns status through the main resource")
		}
		st := call{method: "PATCH", path: deploymentsPath + "/ss/status?fieldManager=ctrl", media: mediaApplyPatchYAML,
			body: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ss\nspec:\n  replicas: 9\nstatus:\n  replicas: 1\n"}.must(t, s, http.StatusOK)
		decodeInto(t, st, &d)
		if d.Status.Replicas != 1 || *d.Spec.Replicas != 1 {
			t.Errorf("status apply: status.replicas %d spec.replicas %d", d.Status.Replicas, *d.Spec.Replicas)
		}
		e := managerEntry(t, &d, "ctrl", "status")
		if e.Operation != metav1.ManagedFieldsOperationApply || !owns(t, e, "status", "replicas") || owns(t, e, "spec", "replicas") {
			t.Errorf("status applier's entry %+v %s", e, e.FieldsV1.Raw)
		}
	})
	t.Run("apply to the status of a missing object is 404", func(t *testing.T) {
		call{method: "PATCH", path: deploymentsPath + "/nothing/status?fieldManager=ctrl", media: mediaApplyPatchYAML,
			body: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: nothing\nstatus:\n  replicas: 1\n"}.must(t, s, http.StatusNotFound)
	})
	t.Run("dry run creates nothing", func(t *testing.T) {
		w := apply("dry", "fieldManager=kubectl&dryRun=All", deploymentYAML("dry", 1, "")).must(t, s, http.StatusCreated)
		var d appsv1.Deployment
		decodeInto(t, w, &d)
		if d.UID == "" || len(d.ManagedFields) == 0 {
			t.Errorf("dry-run answer lacks uid or managedFields: %+v", d.ObjectMeta)
		}
		call{method: "GET", path: deploymentsPath + "/dry"}.must(t, s, http.StatusNotFound)
	})
	t.Run("dry run changes nothing", func(t *testing.T) {
		apply("dry2", "fieldManager=kubectl", deploymentYAML("dry2", 1, "")).must(t, s, http.StatusCreated)
		apply("dry2", "fieldManager=kubectl&dryRun=All", deploymentYAML("dry2", 4, "")).must(t, s, http.StatusOK)
		if d := get(t, "dry2"); *d.Spec.Replicas != 1 {
			t.Errorf("dry-run apply stored replicas %d", *d.Spec.Replicas)
		}
	})
	t.Run("validation applies to the merged object", func(t *testing.T) {
		w := apply("bad", "fieldManager=kubectl", strings.Replace(deploymentYAML("bad", 1, ""), "matchLabels: {app: bad}", "matchLabels: {app: other}", 1)).must(t, s, http.StatusUnprocessableEntity)
		if st := statusOf(t, w); !strings.Contains(st.Message, "spec.template.metadata.labels") {
			t.Errorf("message %q", st.Message)
		}
	})
	t.Run("unknown field is refused by the schema", func(t *testing.T) {
		w := apply("unk", "fieldManager=kubectl", deploymentYAML("unk", 1, "  foo: bar\n")).must(t, s, http.StatusInternalServerError)
		if st := statusOf(t, w); !strings.Contains(st.Message, ".spec.foo: field not declared in schema") {
			t.Errorf("message %q", st.Message)
		}
	})
	t.Run("duplicate keys: 400 under Strict, a warning under Warn", func(t *testing.T) {
		dup := deploymentYAML("dup", 1, "") + "metadata:\n  name: dup\n"
		w := apply("dup", "fieldManager=kubectl&fieldValidation=Strict", dup).must(t, s, http.StatusBadRequest)
		if st := statusOf(t, w); !strings.Contains(st.Message, "error strict decoding YAML") {
			t.Errorf("message %q", st.Message)
		}
		w = apply("dup", "fieldManager=kubectl", dup).must(t, s, http.StatusCreated)
		if !strings.Contains(w.Header().Get("Warning"), "already set in map") {
			t.Errorf("Warning %q", w.Header().Values("Warning"))
		}
		dupJSON := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"dup"},"metadata":{"name":"dup"}}`
		w = apply("dup", "fieldManager=kubectl&fieldValidation=Strict", dupJSON).must(t, s, http.StatusBadRequest)
		if st := statusOf(t, w); !strings.Contains(st.Message, `error strict decoding YAML`) || !strings.Contains(st.Message, `"metadata" already set in map`) {
			t.Errorf("message %q", st.Message)
		}
	})
	t.Run("name must match the URL", func(t *testing.T) {
		w := apply("url", "fieldManager=kubectl", deploymentYAML("other", 1, "")).must(t, s, http.StatusBadRequest)
		if st := statusOf(t, w); st.Message != "the name of the object (other) does not match the name on the URL (url)" {
			t.Errorf("message %q", st.Message)
		}
	})
	t.Run("managedFields in the body are refused", func(t *testing.T) {
		body := strings.Replace(deploymentYAML("mf", 1, ""), "  name: mf\n", "  name: mf\n  managedFields: [{manager: x}]\n", 1)
		apply("mf", "fieldManager=kubectl", body).must(t, s, http.StatusBadRequest)
	})
	t.Run("an empty body is refused", func(t *testing.T) {
		w := apply("empty", "fieldManager=kubectl", "").must(t, s, http.StatusBadRequest)
		if st := statusOf(t, w); !strings.Contains(st.Message, "invalid object type: /, Kind=") {
			t.Errorf("message %q", st.Message)
		}
	})
	t.Run("wrong apiVersion is refused", func(t *testing.T) {
		body := strings.Replace(deploymentYAML("ver", 1, ""), "apps/v1", "apps/v1beta2", 1)
		w := apply("ver", "fieldManager=kubectl", body).must(t, s, http.StatusBadRequest)
		if st := statusOf(t, w); !strings.Contains(st.Message, "apps/v1beta2") {
			t.Errorf("message %q", st.Message)
		}
	})
}

// TestPatchFieldValidation checks unknown fields in non-apply patches: a
// 422 on the patch under Strict, Warning headers under Warn, silence under
// Ignore.
func TestPatchFieldValidation(t *testing.T) {
	s := newApplyServer(t)
	call{method: "POST", path: "/api/v1/namespaces/default/configmaps", media: mediaJSON,
		body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fv"}}`}.must(t, s, http.StatusCreated)
	for _, media := range []string{mediaMergePatch, mediaStrategicPatch} {
		patch := func(mode string) call {
			return call{method: "PATCH", path: "/api/v1/namespaces/default/configmaps/fv?fieldValidation=" + mode, media: media, body: `{"spec":{"x":1}}`}
		}
		t.Run(media+" Strict", func(t *testing.T) {
			st := statusOf(t, patch("Strict").must(t, s, http.StatusUnprocessableEntity))
			if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "patch" ||
				!strings.Contains(st.Message, `strict decoding error: unknown field "spec"`) {
				t.Errorf("status %+v", st)
			}
		})
		t.Run(media+" Warn", func(t *testing.T) {
			w := patch("Warn").must(t, s, http.StatusOK)
			if !strings.Contains(w.Header().Get("Warning"), `unknown field \"spec\"`) {
				t.Errorf("Warning %q", w.Header().Values("Warning"))
			}
		})
		t.Run(media+" Ignore", func(t *testing.T) {
			if w := patch("Ignore").must(t, s, http.StatusOK); len(w.Header().Values("Warning")) != 0 {
				t.Errorf("Warning %q", w.Header().Values("Warning"))
			}
		})
	}
}

// TestResetFields checks the fields each kind's writes cannot own.
func TestResetFields(t *testing.T) {
	cases := []struct {
		name        string
		res         *registry.Resource
		subresource string
		want        []string
	}{
		{"main of a kind with status", &registry.Resource{Group: "apps", Resource: "replicasets", HasStatus: true}, "", []string{"status"}},
		{"status of a kind with status", &registry.Resource{Group: "apps", Resource: "replicasets", HasStatus: true}, "status", []string{"spec"}},
		{"kind without status", &registry.Resource{Resource: "configmaps"}, "", nil},
		{"deployment status", &registry.Resource{Group: "apps", Resource: "deployments", HasStatus: true}, "status", []string{"spec", "metadata.labels"}},
		{"pod status", &registry.Resource{Resource: "pods", HasStatus: true}, "status", []string{"spec", "metadata.deletionTimestamp", "metadata.ownerReferences"}},
		{"csr main", &registry.Resource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests", HasStatus: true}, "", []string{"spec", "status"}},
		{"resource's own", &registry.Resource{Resource: "widgets", HasStatus: true, ResetFields: map[string][]string{"status": {"spec", "metadata"}}}, "status", []string{"spec", "metadata"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := resetFields(tc.res, tc.subresource); strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("resetFields = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestManagerName(t *testing.T) {
	cases := []struct{ name, fieldManager, userAgent, want string }{
		{"fieldManager wins", "tool", "kubectl/v1.36", "tool"},
		{"User-Agent product", "", "kubectl/v1.36.3 (linux/amd64) kubernetes/abc", "kubectl"},
		{"no slash", "", "curl", "curl"},
		{"unprintable dropped", "", "a\x01b/1", "ab"},
		{"cut at 128", "", strings.Repeat("x", 200), strings.Repeat("x", 128)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := managerName(tc.fieldManager, tc.userAgent); got != tc.want {
				t.Errorf("managerName = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCustomResourcePatchTypes(t *testing.T) {
	h := &resourceHandler{res: &registry.Resource{CustomResource: true}}
	for _, pt := range h.patchTypes() {
		if pt == mediaStrategicPatch {
			t.Errorf("custom resources accept %s", pt)
		}
	}
}

// TestUnmarshalApplied holds the JSON fast path to the YAML parser's
// answers: the same values, and the same errors.
func TestUnmarshalApplied(t *testing.T) {
	cases := []struct{ name, body string }{
		{"json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},"spec":{"priority":5,"x":1.5,"big":12345678901234,"list":[1,"two",{"three":3}],"n":null,"t":true}}`},
		{"json with space", " \n\t{\"a\": {\"b\": [1, 2.0]}}"},
		{"yaml", "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  priority: 5\n"},
		{"yaml flow mapping", "{a: b, c: 1}"},
		{"malformed json", `{"a": }`},
		{"duplicate keys", `{"a": 1, "a": 2}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]interface{}{}
			gotErr := unmarshalApplied([]byte(tc.body), &got)
			want := map[string]interface{}{}
			wantErr := yaml.Unmarshal([]byte(tc.body), &want)
			if (gotErr == nil) != (wantErr == nil) || (gotErr != nil && gotErr.Error() != wantErr.Error()) {
				t.Fatalf("error %v, want %v", gotErr, wantErr)
			}
			if gotErr == nil && !reflect.DeepEqual(got, want) {
				t.Errorf("got %#v\nwant %#v", got, want)
			}
			gotStrict, wantStrict := strictApplied([]byte(tc.body)), yaml.UnmarshalStrict([]byte(tc.body), &map[string]interface{}{})
			if (gotStrict == nil) != (wantStrict == nil) || (gotStrict != nil && gotStrict.Error() != wantStrict.Error()) {
				t.Errorf("strict error %v, want %v", gotStrict, wantStrict)
			}
		})
	}
}

// TestCustomResourceFieldManagement tracks and applies unstructured
// objects of a resource without a schema of its own: the deduced one.
func TestCustomResourceFieldManagement(t *testing.T) {
	gvk := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}
	h := &resourceHandler{gvk: gvk, res: &registry.Resource{Group: "example.com", Version: "v1", Kind: "Widget", Resource: "widgets",
		CustomResource: true, HasStatus: true, New: func() runtime.Object { return &unstructured.Unstructured{} }}}
	next := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w", "namespace": "default"},
		"spec":     map[string]interface{}{"size": int64(1)},
		"status":   map[string]interface{}{"ready": true},
	}}
	out := h.trackUpdate(h.emptyObject(), next, "creator", "")
	e := managerEntry(t, objectMeta(out), "creator", "")
	if !owns(t, e, "spec", "size") || owns(t, e, "status", "ready") {
		t.Errorf("creator's fields: %s", e.FieldsV1.Raw)
	}
	fm, err := h.fieldManager("")
	if err != nil {
		t.Fatal(err)
	}
	live := out.(*unstructured.Unstructured)
	live.SetUID("uid-1")
	applied := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]interface{}{"name": "w"},
		"spec":     map[string]interface{}{"size": int64(2)},
	}}
	if _, err := fm.Apply(live, applied, "applier", false); err == nil || !strings.Contains(err.Error(), `conflict with "creator"`) {
		t.Errorf("apply over the creator's field: %v", err)
	}
	res, err := fm.Apply(live, applied, "applier", true)
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(res.(*unstructured.Unstructured).Object, "spec", "size"); size != 2 {
		t.Errorf("spec.size %d after a forced apply", size)
	}
}

// TestAdmissionCannotCorruptManagedFields checks that what mutating
// admission does to managedFields is undone when it leaves them invalid,
// and kept otherwise.
func TestAdmissionCannotCorruptManagedFields(t *testing.T) {
	valid := metav1.ManagedFieldsEntry{Manager: "m", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{}}`)}}
	other := valid
	other.Manager = "webhook"
	broken := valid
	broken.Operation = "Bogus"
	cases := []struct {
		name  string
		admit func(*corev1.ConfigMap)
		want  string
	}{
		{"untouched", func(*corev1.ConfigMap) {}, "m"},
		{"replaced validly", func(cm *corev1.ConfigMap) { cm.ManagedFields = []metav1.ManagedFieldsEntry{other} }, "webhook"},
		{"corrupted", func(cm *corev1.ConfigMap) { cm.ManagedFields = []metav1.ManagedFieldsEntry{broken} }, "m"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", ManagedFields: []metav1.ManagedFieldsEntry{valid}}}
			if err := admitKeepingManagedFields(cm, func() error { tc.admit(cm); return nil }); err != nil {
				t.Fatal(err)
			}
			if len(cm.ManagedFields) != 1 || cm.ManagedFields[0].Manager != tc.want || cm.ManagedFields[0].Operation != metav1.ManagedFieldsOperationUpdate {
				t.Errorf("managedFields %+v, want %s's", cm.ManagedFields, tc.want)
			}
		})
	}
}
