package server

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestAPITableOnlyForKindsWithTables checks which creates answer a Table:
// upstream serves one for every stored resource (default columns when it
// has none of its own) and none for the review kinds, which have no
// TableConvertor: an Accept asking only for a Table of a review is a 406,
// and one with a fallback gets the review itself.
func TestAPITableOnlyForKindsWithTables(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ns := e.namespace(t, "tables")
	const (
		tableOnly     = "application/json;as=Table;v=v1;g=meta.k8s.io"
		tableFallback = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
	)
	ssar := []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`)
	cases := []struct {
		name, path, accept string
		body               []byte
		wantCode           int
		wantKind           string
		wantMessage        string
	}{
		{name: "review as table only", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", accept: tableOnly, body: ssar,
			wantCode: http.StatusNotAcceptable, wantKind: "Status",
			wantMessage: "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"},
		{name: "review with a fallback", path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", accept: tableFallback, body: ssar,
			wantCode: http.StatusCreated, wantKind: "SelfSubjectAccessReview"},
		{name: "token review as table only", path: "/apis/authentication.k8s.io/v1/tokenreviews", accept: tableOnly,
			body:     []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"x"}}`),
			wantCode: http.StatusNotAcceptable, wantKind: "Status"},
		{name: "configmap as table", path: "/api/v1/namespaces/" + ns + "/configmaps", accept: tableOnly,
			body:     []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`),
			wantCode: http.StatusCreated, wantKind: "Table"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp := e.do(t, http.MethodPost, tc.path, map[string]string{"Accept": tc.accept, "Content-Type": "application/json"}, tc.body)
			var got struct{ Kind, Message string }
			if err := json.Unmarshal(resp.body, &got); err != nil {
				t.Fatalf("%d %s: %v", resp.code, resp.body, err)
			}
			if resp.code != tc.wantCode || got.Kind != tc.wantKind {
				t.Fatalf("got %d %s, want %d %s: %s", resp.code, got.Kind, tc.wantCode, tc.wantKind, resp.body)
			}
			if tc.wantMessage != "" && got.Message != tc.wantMessage {
				t.Errorf("message %q, want %q", got.Message, tc.wantMessage)
			}
		})
	}
}
