package apiserver

import (
	"net/http"
	"testing"
)

// TestStrategicPatchErrors checks how a strategic merge patch the merge
// cannot apply is answered: malformed directives are 400s, as upstream
// sorts them; duplicate fields are a 422 only under Strict.
func TestStrategicPatchErrors(t *testing.T) {
	s := newApplyServer(t)
	call{method: "POST", path: "/api/v1/namespaces/default/configmaps", media: mediaJSON,
		body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"smp"},"data":{"a":"1"}}`}.must(t, s, http.StatusCreated)
	cases := []struct {
		name, patch string
		code        int
	}{
		{"retainKeys not a list", `{"data":{"$retainKeys":"a"}}`, http.StatusBadRequest},
		{"not JSON", `{"data":`, http.StatusBadRequest},
		{"duplicate field", `{"data":{"b":"1","b":"2"}}`, http.StatusOK},
		{"a plain merge", `{"data":{"c":"3"}}`, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			call{method: "PATCH", path: "/api/v1/namespaces/default/configmaps/smp", media: mediaStrategicPatch, body: tc.patch}.must(t, s, tc.code)
		})
	}
	t.Run("duplicate field under Strict", func(t *testing.T) {
		w := call{method: "PATCH", path: "/api/v1/namespaces/default/configmaps/smp?fieldValidation=Strict", media: mediaStrategicPatch,
			body: `{"data":{"d":"1","d":"2"}}`}.must(t, s, http.StatusUnprocessableEntity)
		if st := statusOf(t, w); st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "patch" {
			t.Errorf("status %+v", st)
		}
	})
}
