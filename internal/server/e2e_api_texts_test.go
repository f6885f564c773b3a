package server

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestAPIErrorTextsAsUpstream checks error messages word for word against
// upstream's: clients and upstream's e2e tests match on them, so a drift
// in wording (an extra prefix, a wrong number) is a defect even when the
// code and reason are right.
func TestAPIErrorTextsAsUpstream(t *testing.T) {
	// A small event window per resource makes a watch's history expire
	// after a few writes.
	e := newAPIEnv(t, Config{WatchCacheCapacity: 5})
	ctx := context.Background()
	ns := e.namespace(t, "texts")
	cmPath := "/api/v1/namespaces/" + ns + "/configmaps"
	raw := e.jcs.CoreV1().RESTClient()
	post := func(path string, body string, params ...string) error {
		req := raw.Post().AbsPath(path).SetHeader("Content-Type", "application/json").Body([]byte(body)).MaxRetries(0)
		for i := 0; i+1 < len(params); i += 2 {
			req = req.Param(params[i], params[i+1])
		}
		return req.Do(ctx).Error()
	}

	t.Run("exact list at a future version names the store's revision", func(t *testing.T) {
		before := e.currentRevision(t)
		err := raw.Get().AbsPath(cmPath).Param("resourceVersion", "99999999").Param("resourceVersionMatch", "Exact").MaxRetries(0).Do(ctx).Error()
		after := e.currentRevision(t)
		st := wantStatus(t, err, http.StatusGatewayTimeout, metav1.StatusReasonTimeout)
		m := regexp.MustCompile(`^Timeout: Too large resource version: 99999999, current: (\d+)$`).FindStringSubmatch(st.Message)
		if m == nil {
			t.Fatalf("message %q", st.Message)
		}
		if n, _ := strconv.ParseInt(m[1], 10, 64); n < before || n > after {
			t.Errorf("current %d, want the store's revision (between %d and %d)", n, before, after)
		}
		wantTooLargeRV(t, st)
	})

	t.Run("watch from a version the cache no longer holds", func(t *testing.T) {
		cmc := e.cs.CoreV1().ConfigMaps(ns)
		cm, err := cmc.Create(ctx, testConfigMap("churn", nil), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		oldRV := cm.ResourceVersion
		for i := range 10 {
			cm.Data["k"] = strconv.Itoa(i)
			if cm, err = cmc.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		w, err := cmc.Watch(ctx, metav1.ListOptions{ResourceVersion: oldRV})
		if err != nil {
			t.Fatal(err)
		}
		evs := readToEnd(t, w)
		if len(evs) != 1 || evs[0].Type != watch.Error {
			t.Fatalf("events %v, want one ERROR", describeAll(evs))
		}
		st, ok := evs[0].Object.(*metav1.Status)
		if !ok {
			t.Fatalf("ERROR event carries %T", evs[0].Object)
		}
		if !regexp.MustCompile(`^too old resource version: ` + oldRV + ` \(\d+\)$`).MatchString(st.Message) {
			t.Errorf("message %q, want upstream's %q", st.Message, "too old resource version: "+oldRV+" (N)")
		}
	})

	cases := []struct {
		name   string
		call   func() error
		reason metav1.StatusReason
		want   string
	}{
		{name: "truncated json body", reason: metav1.StatusReasonBadRequest,
			call: func() error { return post(cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"`) },
			want: `the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"v1","kind":"Con ...)`},
		{name: "empty body", reason: metav1.StatusReasonBadRequest,
			call: func() error { return post(cmPath, ``) },
			want: `the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input (<empty>)`},
		{name: "field of the wrong type", reason: metav1.StatusReasonBadRequest,
			call: func() error {
				return post(cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":5}`)
			},
			want: `ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal number into Go struct field ConfigMap.data of type map[string]string`},
		{name: "strict unknown field", reason: metav1.StatusReasonBadRequest,
			call: func() error {
				return post(cmPath, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"bogus":1}`, "fieldValidation", "Strict")
			},
			want: `ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: unknown field "bogus"`},
		{name: "truncated eviction", reason: metav1.StatusReasonBadRequest,
			call: func() error {
				return post("/api/v1/namespaces/"+ns+"/pods/p/eviction", `{"apiVersion":"policy/v1"`)
			},
			want: `the object provided is unrecognized (must be of type Eviction): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":"policy/v1")`},
	}
	if _, err := e.cs.CoreV1().Pods(ns).Create(ctx, testPod("p", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := wantStatus(t, tc.call(), http.StatusBadRequest, tc.reason)
			if st.Message != tc.want {
				t.Errorf("message\n got %q\nwant %q", st.Message, tc.want)
			}
		})
	}
}
